"""Training progress of TrainJobs end to end in devcluster: every container of a TrainJob's pods
(node, initializers) gets Trainer 2.3's env, token volume and `<tj>-tls-config` CA; the
unmodified Kubeflow SDK function `update_trainjob_status` moves `status.trainerStatus` (and the
gauges); another TrainJob's pod is refused; a TrainJob that goes quiet past its progress
deadline restarts as a whole gang (counted against maxRestarts), then fails. A FakeClock drives
the deadlines: no real time is slept for them."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from trainer_sdk import report_progress

from kubetrain.api import trainerstatus as ts
from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS
from kubetrain.serving.metrics import REGISTRY

from .controller_support import Harness, eventually, open_stack, pod_env, ticking

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"
START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3  # real seconds to watch for something that must NOT happen
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    clock = FakeClock(start=START)
    async for stack, h in open_stack(
        api_groups=("kubetrain.io", "trainer.kubeflow.org"),
        controller_clock=clock,
        progress=True,
        progress_interval=0.001,
    ):
        yield stack, h, clock


def load(path: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((DATA / path).read_text()) if d]


def trainjob(
    name: str, runtime: str = "torch-distributed", kind: str | None = None, **annotations: str
) -> Obj:
    ref: Obj = {"name": runtime}
    if kind:
        ref["kind"] = kind
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"runtimeRef": ref, "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"]}},
    }


async def pods_of(h: Harness, ns: str, name: str, attempt: str = "0") -> list[Obj]:
    return [
        p
        for p in await h.pods(ns, name)
        if p["metadata"]["labels"].get(ATTEMPT) == attempt and not p["metadata"].get("deletionTimestamp")
    ]


async def sdk_env(h: Harness, ns: str, pod: str, tmp: Path) -> dict[str, str]:
    async def mounted() -> dict[str, str] | None:
        try:
            return await h.sim.files(ns, pod)
        except KeyError:  # the simulated kubelet has not started it yet
            return None

    files = await eventually(mounted, what=f"pod {pod} started with its projected volume")
    live = await h.pod(ns, pod)
    assert live is not None
    out = tmp / pod
    out.mkdir(parents=True, exist_ok=True)
    (out / ts.TOKEN_FILE).write_text(files[f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"])
    (out / ts.CA_FILE).write_text(files[f"{ts.MOUNT_PATH}/{ts.CA_FILE}"])
    return {
        ts.ENV_URL: pod_env(live)[ts.ENV_URL],
        ts.ENV_TOKEN: str(out / ts.TOKEN_FILE),
        ts.ENV_CA_CERT: str(out / ts.CA_FILE),
    }


def progress(percent: int) -> Callable[[Obj], bool]:
    return lambda j: ((j.get("status") or {}).get("trainerStatus") or {}).get("progressPercentage") == percent


async def wait_tj(h: Harness, ns: str, name: str, check: Callable[[Obj], bool], what: str) -> Obj:
    async def probe() -> Obj | None:
        job = await h.get(TRAINJOBS, ns, name)
        return job if job is not None and check(job) else None

    return await eventually(probe, what=what)


def condition(job: Obj, ctype: str) -> Obj | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == ctype), None)


async def test_every_container_gets_trainers_env_and_the_sdk_moves_the_status(
    env: tuple[DevStack, Harness, FakeClock], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stack, h, clock = env
    ns = await h.namespace("tjprog")
    runtime, job = load("examples/05-multi-step.yaml")  # dataset initializer, then 2 nodes
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    name = job["metadata"]["name"]
    [init] = await ticking(clock, lambda: h.wait_pod_names(ns, name, [f"{name}-dataset-initializer-0-0"]))
    assert stack.progress_injection is not None
    url = (
        f"{stack.progress_injection.base_url}"
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status"
    )
    for container in init["spec"]["containers"]:
        env_vars = {e["name"]: e.get("value") for e in container.get("env") or []}
        assert env_vars[ts.ENV_URL] == url
        assert env_vars[ts.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
        assert env_vars[ts.ENV_CA_CERT] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    volume = next(v for v in init["spec"]["volumes"] if v["name"] == "kubeflow-trainer-token")
    token, ca = volume["projected"]["sources"]
    assert token["serviceAccountToken"] == {
        "audience": f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status",
        "expirationSeconds": 3600,
        "path": "token",
    }
    assert ca["configMap"]["name"] == f"{name}-tls-config"
    cm = await h.get(CONFIG_MAPS, ns, f"{name}-tls-config")
    assert cm is not None and cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"

    await h.sim.finish(ns, f"{name}-dataset-initializer-0-0")
    await ticking(
        clock,
        lambda: h.wait_pod_names(
            ns, name, [f"{name}-dataset-initializer-0-0", f"{name}-node-0-0", f"{name}-node-0-1"]
        ),
    )
    node = await h.pod(ns, f"{name}-node-0-0")
    assert node is not None and pod_env(node)[ts.ENV_URL] == url
    sdk = await sdk_env(h, ns, f"{name}-node-0-0", tmp_path)
    assert await report_progress(
        monkeypatch, sdk, progress_percent=25, estimated_remaining_seconds=300, metrics={"loss": 1.5}
    )
    stored = await ticking(clock, lambda: wait_tj(h, ns, name, progress(25), "trainerStatus written"))
    status = stored["status"]["trainerStatus"]
    assert status["estimatedRemainingSeconds"] == 300
    assert status["metrics"] == [{"name": "loss", "value": "1.5"}]
    assert not stored["status"].get("conditions")  # no condition of kubetrain's: the SDK says Running
    labels = {"kind": "TrainJob", "namespace": ns, "name": name}

    async def gauge() -> bool:
        return REGISTRY.get_sample_value("kubetrain_job_progress_ratio", labels) == 0.25

    await eventually(gauge, what="the progress gauge")

    # A pod of another TrainJob, with its own valid token, aimed at this one: refused.
    await h.kube.create(TRAINJOBS, trainjob("other"), namespace=ns)
    await ticking(clock, lambda: h.wait_pod_names(ns, "other", ["other-node-0-0", "other-node-0-1"]))
    thief = await sdk_env(h, ns, "other-node-0-0", tmp_path)
    assert not await report_progress(monkeypatch, {**thief, ts.ENV_URL: url}, progress_percent=99)
    assert stack.progress is not None
    await stack.progress.flush()
    job_now = await h.get(TRAINJOBS, ns, name)
    assert job_now is not None and job_now["status"]["trainerStatus"]["progressPercentage"] == 25


async def test_an_opted_out_trainjob_gets_nothing(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("tjquiet")
    await h.kube.create(TRAINJOBS, trainjob("quiet", **{ts.ANNOTATION_REPORTING: "disabled"}), namespace=ns)
    [pod, _] = await ticking(
        clock, lambda: h.wait_pod_names(ns, "quiet", ["quiet-node-0-0", "quiet-node-0-1"])
    )
    assert ts.ENV_URL not in pod_env(pod)
    assert await h.get(CONFIG_MAPS, ns, "quiet-tls-config") is None


async def test_a_quiet_trainjob_restarts_as_a_gang_then_fails(
    env: tuple[DevStack, Harness, FakeClock], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, h, clock = env
    ns = await h.namespace("tjstall")
    runtime = copy.deepcopy(load("runtimes/torch_distributed.yaml")[0])
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "once", "labels": runtime["metadata"]["labels"]}
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    job = trainjob("stuck", runtime="once", kind="TrainingRuntime", **{ts.ANNOTATION_DEADLINE: "60"})
    await h.kube.create(TRAINJOBS, job, namespace=ns)

    async def running(attempt: str) -> list[Obj] | None:
        pods = await pods_of(h, ns, "stuck", attempt)
        ok = len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        return pods if ok else None

    await ticking(clock, lambda: eventually(lambda: running("0"), what="attempt 0 running"))
    sdk = await sdk_env(h, ns, "stuck-node-0-0", tmp_path)
    assert await report_progress(monkeypatch, sdk, progress_percent=30)
    await ticking(clock, lambda: wait_tj(h, ns, "stuck", progress(30), "30% stored"))
    await clock.advance(59)
    await asyncio.sleep(QUIET)
    assert await pods_of(h, ns, "stuck", "1") == []  # not yet
    await clock.advance(1.5)
    await ticking(
        clock, lambda: eventually(lambda: running("1"), what="the whole gang restarted as attempt 1")
    )
    assert "ProgressDeadlineExceeded" in await h.event_reasons(ns, "stuck")
    tj = await h.get(TRAINJOBS, ns, "stuck")
    assert tj is not None and condition(tj, "Failed") is None
    # The new attempt has not reported: never called stalled, whatever the time.
    await clock.advance(600)
    await asyncio.sleep(QUIET)
    assert len(await pods_of(h, ns, "stuck", "1")) == 2
    # It reports, then goes quiet again: maxRestarts (1) is used up, so it fails.
    sdk = await sdk_env(h, ns, "stuck-node-0-1", tmp_path)
    assert await report_progress(monkeypatch, sdk, progress_percent=40)
    await ticking(clock, lambda: wait_tj(h, ns, "stuck", progress(40), "40% stored"))
    await clock.advance(61)
    tj = await ticking(
        clock, lambda: wait_tj(h, ns, "stuck", lambda j: condition(j, "Failed") is not None, "Failed")
    )
    failed = condition(tj, "Failed")
    assert failed is not None and failed["reason"] == "ProgressDeadlineExceeded"
    assert "no progress for 60s" in failed["message"] and "at 40%" in failed["message"]
