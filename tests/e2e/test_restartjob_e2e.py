"""JobSet's `RestartJob` failure-policy action on a TrainJob, as a user meets it on a cluster
($KUBECONFIG) with `kubetrain run` serving trainer.kubeflow.org behind URL-mode webhooks: the
runtime CRDs admit the action (as Trainer 2.3's do), the webhook refuses it beside a replicated
job of more than 1024 replicas (JobSet's rule), and — where pods are simulated — a failed Job's
pod alone is recreated as its Job's next attempt while the other pods keep running, until
maxRestarts fails the TrainJob with JobSet's reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from e2e import scenarios_support as support

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import TRAINING_RUNTIMES, TRAINJOBS

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")  # what the operator serves (the `cluster` fixture)

Obj = dict[str, Any]
JOB_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"


def runtime(namespace: str, name: str, replicas: int = 2) -> Obj:
    """Trainer's torch-distributed runtime as a TrainingRuntime with a `worker` replicated job of
    `replicas` one-pod Jobs before `node`; every Job fails on its first failed pod, and a failed
    Job restarts alone (`RestartJob`), at most once (maxRestarts 1)."""
    torch = next(r for r in default_runtimes() if r["metadata"]["name"] == "torch-distributed")
    rt = copy.deepcopy(torch)
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": name, "namespace": namespace, "labels": torch["metadata"].get("labels", {})}
    spec = rt["spec"]["template"]["spec"]
    worker = copy.deepcopy(spec["replicatedJobs"][-1])
    worker["name"], worker["replicas"] = "worker", replicas
    worker["template"]["metadata"] = {}
    worker["template"]["spec"].update(parallelism=1, completions=1)
    spec["replicatedJobs"].insert(0, worker)
    for rjob in spec["replicatedJobs"]:
        rjob["template"]["spec"]["backoffLimit"] = 0
        rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    spec["failurePolicy"] = {"maxRestarts": 1, "rules": [{"name": "alone", "action": "RestartJob"}]}
    return rt


async def test_a_restart_job_runtime_is_admitted_and_over_1024_replicas_refused(cluster: Any) -> None:
    too_many = runtime(cluster.namespace, "too-many", replicas=1025)
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(TRAINING_RUNTIMES, too_many)
    assert refused.value.status == 422
    assert "spec.template.spec.replicatedJobs[0].replicas" in str(refused.value)
    assert "replicas > 1024" in str(refused.value)
    created = await cluster.client.create(TRAINING_RUNTIMES, runtime(cluster.namespace, "per-job"))
    assert created["spec"]["template"]["spec"]["failurePolicy"]["rules"][0]["action"] == "RestartJob"


async def test_a_failed_job_restarts_alone_then_max_restarts_fails_the_trainjob(cluster: Any) -> None:
    if cluster.simulator is None:
        pytest.skip("needs simulated pods to fail one on purpose")
    await cluster.client.create(TRAINING_RUNTIMES, runtime(cluster.namespace, "alone"))
    job = support.trainjob(cluster.namespace, "rj", {"numNodes": 1}, runtime="alone")
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    await cluster.client.create(TRAINJOBS, job)
    pods = await cluster.wait_pods("rj", 3, running=True)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    assert sorted(before) == ["rj-node-0-0", "rj-worker-0-0", "rj-worker-1-0"]

    await cluster.simulator.finish(cluster.namespace, "rj-worker-1-0", exit_code=1)

    async def restarted_alone() -> dict[str, Obj] | None:
        now = {p["metadata"]["name"]: p for p in await cluster.pods("rj")}
        new = now.get("rj-worker-1-0")
        if new is None or new["metadata"]["uid"] == before["rj-worker-1-0"]:
            return None
        return now if new.get("status", {}).get("phase") == "Running" else None

    now = await support.eventually(restarted_alone, within=90, what="rj-worker-1-0 made again")
    assert now["rj-worker-1-0"]["metadata"]["labels"][JOB_ATTEMPT] == "1"
    assert {n: now[n]["metadata"]["uid"] for n in ("rj-node-0-0", "rj-worker-0-0")} == {
        n: before[n] for n in ("rj-node-0-0", "rj-worker-0-0")
    }

    await cluster.simulator.finish(cluster.namespace, "rj-worker-0-0", exit_code=1)

    async def failed_tj() -> Obj | None:
        tj: Obj = await cluster.client.get(TRAINJOBS, cluster.namespace, "rj")
        return tj if support.has_condition(tj, "Failed") else None

    failed = await support.eventually(failed_tj, within=90, what="TrainJob rj Failed")
    condition = support.condition(failed, "Failed")
    assert condition is not None and condition["reason"] == "ReachedMaxRestarts"
    assert condition["message"] == (
        "jobset failed due to reaching max number of restarts (first failed job: rj-worker-0)"
    )
