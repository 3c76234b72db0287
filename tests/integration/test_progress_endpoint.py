"""The training-progress endpoint end to end in devcluster: the controller injects the Kubeflow
SDK's env and a projected pod-bound token, the simulated kubelet mounts it, the unmodified SDK
function (`kubeflow.trainer...update_trainjob_status`) reports, and `status.trainerStatus`
moves; every refusal of the issue's list is checked on the wire."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from trainer_sdk import report_progress

from kubetrain.api import trainerstatus as ts
from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, job_resource

from .controller_support import Harness, eventually, job_manifest, pod_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


STACK_OPTIONS = {"progress": True, "progress_interval": 0.2}


@pytest.fixture
def stack(env: tuple[DevStack, Harness]) -> DevStack:
    return env[0]


@pytest.fixture
def h(env: tuple[DevStack, Harness]) -> Harness:
    return env[1]


async def start_job(
    h: Harness, name: str, workers: int = 1, annotations: dict[str, str] | None = None
) -> str:
    ns = await h.namespace("progress")
    job = job_manifest("PyTorchJob", name, {"Master": 1, "Worker": workers}, annotations=annotations)
    await h.create_job(job, ns)
    await h.wait_pods(ns, name, 1 + workers)
    return ns


async def pod_files(h: Harness, ns: str, pod: str, tmp: Path) -> dict[str, str]:
    """The pod's env for the SDK, with its projected files copied where the env points."""
    files = await h.sim.files(ns, pod)
    live = await h.pod(ns, pod)
    assert live is not None
    env = pod_env(live)
    out = tmp / pod
    out.mkdir(parents=True, exist_ok=True)
    (out / ts.TOKEN_FILE).write_text(files[f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"])
    (out / ts.CA_FILE).write_text(files[f"{ts.MOUNT_PATH}/{ts.CA_FILE}"])
    return {
        ts.ENV_URL: env[ts.ENV_URL],
        ts.ENV_TOKEN: str(out / ts.TOKEN_FILE),
        ts.ENV_CA_CERT: str(out / ts.CA_FILE),
    }


def token_of(env: dict[str, str]) -> str:
    return Path(env[ts.ENV_TOKEN]).read_text()


async def post(
    env: dict[str, str], body: Any, token: str | None = "file", url: str | None = None
) -> tuple[int, Obj]:
    ctx = ssl.create_default_context(cafile=env[ts.ENV_CA_CERT])
    headers = {"Content-Type": "application/json"}
    if token == "file":
        token = token_of(env)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(url or env[ts.ENV_URL], data=data, headers=headers, ssl=ctx) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def test_pods_get_the_sdk_env_token_volume_and_ca(h: Harness, stack: DevStack) -> None:
    ns = await start_job(h, "inject")
    pod = await h.pod(ns, "inject-worker-0")
    assert pod is not None
    env = pod_env(pod)
    assert env[ts.ENV_URL] == (
        f"{stack.progress_injection.base_url}/apis/kubetrain.io/v1/namespaces/{ns}/pytorchjobs/inject/status"  # type: ignore[union-attr]
    )
    assert env[ts.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == ts.VOLUME_NAME)
    token = volume["projected"]["sources"][0]["serviceAccountToken"]
    assert token == {
        "audience": f"kubetrain.io/v1/namespaces/{ns}/pytorchjobs/inject/status",
        "expirationSeconds": 3600,
        "path": "token",
    }
    cm = await h.get(CONFIG_MAPS, ns, "inject-trainer-status")
    assert cm is not None and cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")


async def test_opted_out_job_gets_nothing(h: Harness) -> None:
    ns = await start_job(h, "quiet", annotations={"kubetrain.io/progress-reporting": "disabled"})
    pod = await h.pod(ns, "quiet-master-0")
    assert pod is not None and ts.ENV_URL not in pod_env(pod)
    assert await h.get(CONFIG_MAPS, ns, "quiet-trainer-status") is None


async def test_the_sdk_moves_the_status_and_another_jobs_pod_cannot(
    h: Harness, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ns = await start_job(h, "mnist")
    other_ns = await start_job(h, "other")
    env = await pod_files(h, ns, "mnist-worker-0", tmp_path)
    assert await report_progress(
        monkeypatch, env, progress_percent=40, estimated_remaining_seconds=600, metrics={"loss": 0.31}
    )

    def stored(job: Obj) -> Any:
        return (job.get("status") or {}).get("trainerStatus")

    job = await h.wait_job("PyTorchJob", ns, "mnist", lambda j: bool(stored(j)), "trainerStatus written")
    assert stored(job)["progressPercentage"] == 40
    assert stored(job)["estimatedRemainingSeconds"] == 600
    assert stored(job)["metrics"] == [{"name": "loss", "value": "0.31"}]
    assert stored(job)["lastUpdatedTime"].endswith("Z")
    await eventually(lambda: h.event_reasons(ns, "mnist"), what="an event")
    assert "ProgressReporting" in await h.event_reasons(ns, "mnist")

    # A pod of another job, with its own valid token, aimed at this job: refused, nothing changes.
    thief = await pod_files(h, other_ns, "other-worker-0", tmp_path)
    stolen = {**thief, ts.ENV_URL: env[ts.ENV_URL]}
    assert not await report_progress(monkeypatch, stolen, progress_percent=99)
    code, body = await post(stolen, {"trainerStatus": {"progressPercentage": 99}})
    assert code == 403 and body["reason"] == "Forbidden"
    # ...and the token of this job's pod is not valid for the other job either.
    code, _ = await post(
        {**env, ts.ENV_URL: thief[ts.ENV_URL]}, {"trainerStatus": {"progressPercentage": 99}}
    )
    assert code == 403
    assert h.stack.progress is not None
    await h.stack.progress.flush()  # a wrongly accepted report would be written now
    job = await h.job("PyTorchJob", ns, "mnist")
    assert job is not None and stored(job)["progressPercentage"] == 40


async def test_refusals_on_the_wire(h: Harness, tmp_path: Path) -> None:
    ns = await start_job(h, "edge")
    env = await pod_files(h, ns, "edge-master-0", tmp_path)
    good = {"trainerStatus": {"progressPercentage": 5}}
    assert (await post(env, good, token=None))[0] == 401
    assert (await post(env, good, token="not-a-token"))[0] == 403
    assert (await post(env, {"trainerStatus": {"progressPercentage": 101}}))[0] == 422
    too_many = [{"name": f"m{i}", "value": "1"} for i in range(257)]
    code, body = await post(env, {"trainerStatus": {"metrics": too_many}})
    assert code == 422 and "at most 256" in body["message"]
    assert (await post(env, b"{" + b" " * (70 * 1024) + b"}"))[0] == 413
    assert (await post(env, b"not json"))[0] == 400
    missing = env[ts.ENV_URL].replace("/pytorchjobs/edge/", "/pytorchjobs/nope/")
    assert (await post(env, good, url=missing))[0] == 404
    unknown_kind = env[ts.ENV_URL].replace("/pytorchjobs/", "/widgets/")
    assert (await post(env, good, url=unknown_kind))[0] == 404
    # A plain service-account token for the right audience is not bound to a pod: 403.
    answer = await h.kube.request(
        "create",
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts/default/token",
        body={"spec": {"audiences": [f"kubetrain.io/v1/namespaces/{ns}/pytorchjobs/edge/status"]}},
    )
    plain = answer["status"]["token"]
    code, body = await post(env, good, token=plain)
    assert code == 403 and "not bound to a pod" in body["message"]
    assert (await post(env, good))[0] == 200


async def test_a_finished_job_takes_no_reports(h: Harness, tmp_path: Path) -> None:
    ns = await start_job(h, "done", workers=0)
    env = await pod_files(h, ns, "done-master-0", tmp_path)
    assert (await post(env, {"trainerStatus": {"progressPercentage": 100}}))[0] == 200
    await h.sim.finish(ns, "done-master-0")
    await h.wait_condition("PyTorchJob", ns, "done", "Succeeded")

    async def refused() -> bool:
        code, _ = await post(env, {"trainerStatus": {"progressPercentage": 100}})
        return code == 409

    await eventually(refused, what="a report to a finished job refused")


async def test_the_stdlib_snippet_reports_like_the_sdk(
    h: Harness, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    path = Path(__file__).parents[2] / "examples" / "progress_report.py"
    spec = importlib.util.spec_from_file_location("progress_report", path)
    assert spec is not None and spec.loader is not None
    snippet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(snippet)
    assert snippet.report(percent=10) is False  # outside a job's pod: nothing, no error
    ns = await start_job(h, "stdlib")
    for k, v in (await pod_files(h, ns, "stdlib-master-0", tmp_path)).items():
        monkeypatch.setenv(k, v)
    sent = await asyncio.to_thread(snippet.report, 70, 120, {"loss": 0.2, "phase": "eval"})
    assert sent is True
    assert await asyncio.to_thread(snippet.report, 71) is False  # throttled: one per 5 s
    job = await h.wait_job(
        "PyTorchJob", ns, "stdlib", lambda j: bool((j.get("status") or {}).get("trainerStatus")), "stored"
    )
    assert job["status"]["trainerStatus"]["progressPercentage"] == 70
    assert job["status"]["trainerStatus"]["metrics"] == [
        {"name": "loss", "value": "0.2"},
        {"name": "phase", "value": "eval"},
    ]


def gauge(name: str, labels: dict[str, str]) -> float | None:
    from kubetrain.serving.metrics import REGISTRY

    return REGISTRY.get_sample_value(name, labels)


async def test_a_deleted_jobs_progress_series_are_removed(h: Harness, tmp_path: Path) -> None:
    ns = await start_job(h, "gone")
    env = await pod_files(h, ns, "gone-master-0", tmp_path)
    body = {
        "trainerStatus": {
            "progressPercentage": 30,
            "estimatedRemainingSeconds": 90,
            "metrics": [{"name": "loss", "value": "0.5"}],
        }
    }
    assert (await post(env, body))[0] == 200
    labels = {"kind": "PyTorchJob", "namespace": ns, "name": "gone"}

    async def exported() -> bool:
        return gauge("kubetrain_job_progress_ratio", labels) == 0.3

    await eventually(exported, what="the progress series")
    assert gauge("kubetrain_job_eta_seconds", labels) == 90
    assert gauge("kubetrain_job_metric", {**labels, "metric": "loss"}) == 0.5
    other = await start_job(h, "stays")
    other_env = await pod_files(h, other, "stays-master-0", tmp_path)
    assert (await post(other_env, {"trainerStatus": {"progressPercentage": 60}}))[0] == 200
    kept = {"kind": "PyTorchJob", "namespace": other, "name": "stays"}

    async def other_exported() -> bool:
        return gauge("kubetrain_job_progress_ratio", kept) == 0.6

    await eventually(other_exported, what="the other job's series")

    await h.kube.delete(job_resource("PyTorchJob"), ns, "gone")

    async def removed() -> bool:
        return gauge("kubetrain_job_progress_ratio", labels) is None

    await eventually(removed, what="the deleted job's series removed")
    assert gauge("kubetrain_job_eta_seconds", labels) is None
    assert gauge("kubetrain_job_metric", {**labels, "metric": "loss"}) is None
    assert gauge("kubetrain_job_progress_ratio", kept) == 0.6
