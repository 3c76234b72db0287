"""Condition and event reasons in kubeflow.org (docs/behaviour.md §5) through the real controller
against devcluster: a kubeflow.org/v1 PyTorchJob reads and is told as training-operator v1.9
tells it (`PyTorchJobRunning`, a `PyTorchJobRestarting` Warning event, `PyTorchJobSucceeded`),
while the same job in kubetrain.io keeps kubetrain's reasons."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import job_resources_in

from .controller_support import KUBEFLOW_API_GROUPS, Harness, condition, is_true, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
PYTORCHJOBS = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]


STACK_OPTIONS = {"api_groups": KUBEFLOW_API_GROUPS}


async def test_a_kubeflow_pytorchjob_has_training_operators_reasons(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kfr")
    manifest = job_manifest("PyTorchJob", "r", {"Master": 1, "Worker": 1}, restart_policy="OnFailure")
    manifest["apiVersion"] = "kubeflow.org/v1"
    await h.kube.create(PYTORCHJOBS, manifest, namespace=ns)
    await h.wait_pod_names(ns, "r", ["r-master-0", "r-worker-0"])
    job = await h.wait_true(PYTORCHJOBS, ns, "r", "Running")
    assert (condition(job, "Created") or {}).get("reason") == "PyTorchJobCreated"
    running = condition(job, "Running") or {}
    assert (running.get("reason"), running.get("message")) == (
        "PyTorchJobRunning",
        "PyTorchJob r is running.",
    )

    # Restarting lasts until the new pod runs: watch every version so a short one is seen.
    history = await h.history("PyTorchJob", ns, "r", PYTORCHJOBS)
    await h.sim.finish(ns, "r-worker-0", exit_code=1)
    try:
        job = await history.wait(lambda j: is_true(j, "Restarting"), "Restarting=True")
    finally:
        await history.stop()
    assert (condition(job, "Restarting") or {}).get("reason") == "PyTorchJobRestarting"
    event = await h.wait_event(ns, "r", "PyTorchJobRestarting")
    assert event["type"] == "Warning" and "r-worker-0" in event["message"]

    await h.wait_true(PYTORCHJOBS, ns, "r", "Running")
    await h.sim.finish(ns, "r-master-0")
    job = await h.wait_true(PYTORCHJOBS, ns, "r", "Succeeded")
    done = condition(job, "Succeeded") or {}
    assert (done.get("reason"), done.get("message")) == (
        "PyTorchJobSucceeded",
        "PyTorchJob r is successfully completed.",
    )
    assert (await h.wait_event(ns, "r", "PyTorchJobSucceeded"))["type"] == "Normal"
    reasons = await h.event_reasons(ns, "r")
    assert not {"JobRestarting", "JobSucceeded"} & set(reasons), reasons


async def test_the_same_job_in_kubetrain_io_keeps_kubetrains_reasons(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("ktr")
    await h.create_job(job_manifest("PyTorchJob", "r", {"Master": 1, "Worker": 1}), ns)
    job = await h.wait_condition("PyTorchJob", ns, "r", "Running")
    assert (condition(job, "Running") or {}).get("reason") == "JobRunning"
    await h.sim.finish(ns, "r-master-0")
    job = await h.wait_condition("PyTorchJob", ns, "r", "Succeeded")
    assert (condition(job, "Succeeded") or {}).get("reason") == "JobSucceeded"
    await h.wait_event(ns, "r", "JobSucceeded")
