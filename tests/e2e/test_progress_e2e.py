"""Issue 25's acceptance against the cluster named by $KUBECONFIG (devcluster in `scripts/check`,
or a real kube-apiserver): `kubetrain run --status-server-process` (as the chart runs it)
serves the training-progress endpoint from its `kubetrain status-server` child, and

- the unmodified Kubeflow SDK function `update_trainjob_status`, run with a token bound to a
  job's pod (TokenRequest with `boundObjectRef` to the pod, for the audience the operator
  injected), moves that job's `status.trainerStatus` and its PROGRESS/ETA printer columns (read
  through the Table API, as `kubectl get` does);
- the same call with a token bound to another job's pod is refused (403) and changes nothing;
- a job with a progress deadline that reported once and then went quiet is `Stalled` and
  restarted as a new attempt, as its restartPolicy and backoffLimit declare;
- a TrainJob's node pod reports the same way to the TrainJob's own route, with Trainer's
  `<tj>-tls-config` CA, and the TrainJob's Progress/ETA columns move.

Only documented kube-apiserver behaviour is relied on: TokenRequest (`authentication.k8s.io/v1`,
`expirationSeconds` ≥ 600), TokenReview by the operator, server-side printing of CRD
additionalPrinterColumns. The pods only need to exist (their containers sleep on a real
kubelet); the tokens are requested by the test, as the kubelet would for the pod."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from e2e import scenarios_support as support
from e2e.progress_support import (
    audience_of,
    ca_config_map_of,
    env_of,
    pod_token,
    post,
    printed_row,
    sdk_env,
    trainer_status,
)
from jobs import job
from trainer_sdk import report_progress

from kubetrain.api import trainerstatus as ts
from kubetrain.kube.resources import TRAINJOBS, job_resource

pytest.importorskip(
    "kubeflow.trainer.backends.kubernetes.utils", reason="kubeflow (a dev dependency) is not installed"
)


pytestmark = support.E2E

Obj = dict[str, Any]
PYTORCHJOBS = job_resource("PyTorchJob")


def progress_flags(host: str) -> tuple[str, ...]:
    """The endpoint's flags, its port picked as the operator starts (a port picked when the
    module is imported, minutes earlier in a whole e2e run, may be taken by then)."""
    url_host = f"[{host}]" if ":" in host else host
    port = support.free_port()
    return (
        f"--status-server-port={port}",
        f"--status-server-url=https://{url_host}:{port}",
        "--status-server-interval=0.5",
        "--status-server-process",  # as the chart runs it: the endpoint is `kubetrain status-server`
    )


E2E_OPERATOR_ARGS = progress_flags  # the `cluster` fixture (conftest.py) runs the operator with these
E2E_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")  # PyTorchJobs and TrainJobs


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def runtimes(cluster: Any) -> AsyncIterator[None]:
    async with support.default_runtimes_installed(cluster.client):
        yield


def training_job(cluster: Any, name: str, **run_policy: Any) -> Obj:
    """One Master whose container keeps running on a real kubelet (the simulated one holds it
    Running until told), so its pod lives while the SDK reports."""
    return job(
        "PyTorchJob",
        name,
        {"Master": 1},
        namespace=cluster.namespace,
        image=os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36"),
        restart_policy="OnFailure",
        resources={"requests": {"cpu": "10m", "memory": "16Mi"}},
        container_extra={"command": ["sh", "-c", "sleep 3600"]},
        run_policy=run_policy or None,
    )


async def running_pod(cluster: Any, name: str) -> Obj:
    await cluster.create_job(training_job(cluster, name))
    pods: list[Obj] = await cluster.wait_pods(name, 1, running=True)
    return pods[0]


async def stored_progress(cluster: Any, name: str, percent: int) -> Obj:
    """PyTorchJob `name` once its status.trainerStatus holds `percent` %."""
    job: Obj = await cluster.wait_job(
        "PyTorchJob",
        name,
        f"trainerStatus {percent} %",
        lambda j: trainer_status(j).get("progressPercentage") == percent,
    )
    return job


async def test_the_sdk_with_a_pod_bound_token_moves_status_and_the_progress_column(
    cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pod = await running_pod(cluster, "reports")
    url = env_of(pod)[ts.ENV_URL]
    assert url.endswith(f"/apis/kubetrain.io/v1/namespaces/{cluster.namespace}/pytorchjobs/reports/status")
    token = await pod_token(cluster, pod, audience_of(pod))
    env = await sdk_env(cluster, pod, token, url, tmp_path)

    assert await report_progress(
        monkeypatch, env, progress_percent=40, estimated_remaining_seconds=600, metrics={"loss": 0.31}
    )
    job = await stored_progress(cluster, "reports", 40)
    stored = trainer_status(job)
    assert stored["estimatedRemainingSeconds"] == 600
    assert stored["metrics"] == [{"name": "loss", "value": "0.31"}]
    row = await printed_row(cluster, PYTORCHJOBS, "reports")
    assert row["Progress"] == 40 and row["ETA"] == 600, row

    # A later report moves it again.
    assert await report_progress(monkeypatch, env, progress_percent=55, estimated_remaining_seconds=420)
    await stored_progress(cluster, "reports", 55)
    row = await printed_row(cluster, PYTORCHJOBS, "reports")
    assert row["Progress"] == 55 and row["ETA"] == 420, row


async def test_a_token_bound_to_another_jobs_pod_is_refused_and_changes_nothing(
    cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pod = await running_pod(cluster, "victim")
    other = await running_pod(cluster, "intruder")
    url = env_of(pod)[ts.ENV_URL]
    own = await sdk_env(cluster, pod, await pod_token(cluster, pod, audience_of(pod)), url, tmp_path)
    assert await report_progress(monkeypatch, own, progress_percent=10)
    await stored_progress(cluster, "victim", 10)

    # The other job's pod, with a token for this job's audience (valid, but bound to a pod this
    # job does not control) and with its own job's token: both refused.
    for audience in (audience_of(pod), audience_of(other)):
        stolen = await sdk_env(cluster, other, await pod_token(cluster, other, audience), url, tmp_path)
        assert not await report_progress(monkeypatch, stolen, progress_percent=99)
        assert await post(stolen, {"trainerStatus": {"progressPercentage": 99}}) == 403
    await asyncio.sleep(2)  # four status-write intervals: a wrongly accepted report would be written
    job = await cluster.get_job("PyTorchJob", "victim")
    assert job is not None and trainer_status(job)["progressPercentage"] == 10
    assert (await printed_row(cluster, PYTORCHJOBS, "victim"))["Progress"] == 10
    intruder = await cluster.get_job("PyTorchJob", "intruder")
    assert intruder is not None and trainer_status(intruder) == {}


async def test_a_job_that_goes_quiet_past_its_progress_deadline_is_stalled_and_restarted(
    cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    await cluster.create_job(training_job(cluster, "quiet", progressDeadlineSeconds=3, backoffLimit=2))
    pod = (await cluster.wait_pods("quiet", 1, running=True))[0]
    await cluster.wait_job("PyTorchJob", "quiet", "Running", lambda j: support.has_condition(j, "Running"))
    env = await sdk_env(
        cluster, pod, await pod_token(cluster, pod, audience_of(pod)), env_of(pod)[ts.ENV_URL], tmp_path
    )
    assert await report_progress(monkeypatch, env, progress_percent=30)
    await stored_progress(cluster, "quiet", 30)

    job = await cluster.wait_job(
        "PyTorchJob", "quiet", "Stalled", lambda j: support.has_condition(j, "Stalled"), within=60
    )
    stalled = support.condition(job, "Stalled")
    assert stalled["reason"] == "ProgressDeadlineExceeded" and "at 30%" in stalled["message"]
    # Restarted as declared (restartPolicy OnFailure, backoffLimit 2): a new attempt whose pod
    # replaces the quiet one, counted against backoffLimit.
    job = await cluster.wait_job(
        "PyTorchJob", "quiet", "restarted", lambda j: (j.get("status") or {}).get("jobRestarts") == 1
    )
    assert job["status"]["replicaStatuses"]["Master"]["restarts"] >= 1

    async def replaced() -> Obj | None:
        pods = await cluster.pods("quiet")
        fresh = [p for p in pods if p["metadata"]["uid"] != pod["metadata"]["uid"]]
        return fresh[0] if fresh else None

    new_pod = await support.eventually(replaced, within=60, what="the new attempt's pod")
    assert new_pod["metadata"]["labels"].get("kubetrain.io/attempt") == "1"
    # The quiet pod's token is refused now (its pod is gone or of an old attempt).
    assert await post(env, {"trainerStatus": {"progressPercentage": 31}}) in (403, 409)


async def test_a_trainjob_node_reports_through_the_sdk_and_its_progress_column_moves(
    cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A TrainJob (Trainer's torch runtime, one node): its node pod gets the endpoint's env for
    the TrainJob's own status route and Trainer's `<tj>-tls-config` CA; the SDK's report from it
    moves `status.trainerStatus` and the TrainJob's Progress/ETA columns."""
    image = os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36")
    trainer = {
        "numNodes": 1,
        "image": image,
        "command": ["sh", "-c", "sleep 3600"],
        "resourcesPerNode": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    await cluster.client.create(TRAINJOBS, support.trainjob(cluster.namespace, "tj-reports", trainer))
    pod = (await cluster.wait_pods("tj-reports", 1, running=True))[0]
    url = env_of(pod)[ts.ENV_URL]
    route = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{cluster.namespace}/trainjobs/tj-reports/status"
    assert url.endswith(route), url
    env = await sdk_env(cluster, pod, await pod_token(cluster, pod, audience_of(pod)), url, tmp_path)
    assert ca_config_map_of(pod) == "tj-reports-tls-config"  # Trainer's name for the CA's ConfigMap

    assert await report_progress(
        monkeypatch, env, progress_percent=35, estimated_remaining_seconds=900, metrics={"loss": 0.7}
    )

    async def reported() -> Obj | None:
        tj = await cluster.client.get(TRAINJOBS, cluster.namespace, "tj-reports")
        return tj if trainer_status(tj).get("progressPercentage") == 35 else None

    tj = await support.eventually(reported, within=60, what="the TrainJob's trainerStatus at 35 %")
    assert trainer_status(tj)["estimatedRemainingSeconds"] == 900
    assert trainer_status(tj)["metrics"] == [{"name": "loss", "value": "0.7"}]
    row = await printed_row(cluster, TRAINJOBS, "tj-reports")
    assert row["Progress"] == 35 and row["ETA"] == 900, row
