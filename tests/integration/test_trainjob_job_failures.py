"""A TrainJob step of several jobs fails as JobSet's does, through the controller against
devcluster: each of its jobs has the step's backoffLimit to itself, so one failed pod in each
job fails nothing (the pods are recreated), the run's record in the snapshot ConfigMap counts
per job, and a job past its limit fails the TrainJob naming that job, `jobsStatus` counting one
failed job."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import get_tj, load, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def runtime_with_workers(jobs: int, backoff_limit: int) -> Obj:
    """Trainer's torch runtime as a namespaced TrainingRuntime `workers` with a `worker` step of
    `jobs` one-pod jobs (restartPolicy Never) before the node step, no failurePolicy."""
    runtime = copy.deepcopy(load("runtimes/torch_distributed.yaml")[0])
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "workers", "labels": runtime["metadata"]["labels"]}
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    worker = copy.deepcopy(rjobs[0])
    worker["name"], worker["replicas"] = "worker", jobs
    worker["template"]["metadata"] = {}
    spec = worker["template"]["spec"]
    spec["parallelism"] = spec["completions"] = 1
    spec["backoffLimit"] = backoff_limit
    spec["template"]["spec"]["restartPolicy"] = "Never"
    rjobs.insert(0, worker)
    return runtime


def step_status(tj: Obj, step: str) -> Obj:
    return next(s for s in (tj.get("status") or {}).get("jobsStatus") or [] if s["name"] == step)


async def recorded_failures(h: Harness, ns: str, name: str) -> Obj:
    snapshot = await h.get(CONFIG_MAPS, ns, f"{name}-runtime-snapshot")
    assert snapshot is not None
    return dict(json.loads(snapshot["data"].get("state") or "{}").get("failures") or {})


async def test_each_job_of_a_step_has_its_own_backoff_limit(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("jobfail")
    await h.kube.create(TRAINING_RUNTIMES, runtime_with_workers(3, backoff_limit=1), namespace=ns)
    job = trainjob("fj", num_nodes=1, runtime="workers")
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    workers = [f"fj-worker-{j}-0" for j in range(3)]
    await h.wait_pod_names(ns, "fj", [*workers, "fj-node-0-0"])

    # one failed pod in each of the three jobs: 3 failures in the step, 1 per job, limit 1
    for name in workers:
        pod = await h.pod(ns, name)
        assert pod is not None
        await h.sim.finish(ns, name, exit_code=1)
        await h.wait_recreated(ns, name, pod["metadata"]["uid"])

    async def counted() -> Obj | None:
        failures = await recorded_failures(h, ns, "fj")
        return failures if failures == {"worker/0": 1, "worker/1": 1, "worker/2": 1} else None

    await eventually(counted, what="one failure recorded per job of the worker step")
    tj = await get_tj(h, ns, "fj")
    assert not any(c["type"] == "Failed" for c in tj["status"].get("conditions") or [])
    assert step_status(tj, "worker")["failed"] == 0

    # a second failure in job 1 is past its limit: the step fails, and so does the TrainJob
    await h.sim.finish(ns, "fj-worker-1-0", exit_code=1)
    tj = await wait_condition(h, ns, "fj", "Failed")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailedJobs"
    assert failed["message"].endswith("(first failed job: fj-worker-1)")
    assert step_status(tj, "worker")["failed"] == 1  # one job of three, as JobSet counts
    assert step_status(tj, "node")["failed"] == 0
    assert await recorded_failures(h, ns, "fj") == {"worker/0": 1, "worker/1": 2, "worker/2": 1}
