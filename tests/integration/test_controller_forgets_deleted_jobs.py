"""The controller keeps nothing of a deleted job: after jobs are created, run (or finish) and are
deleted, no per-job structure of the operator still holds them — the planner's prepared jobs
(`JobCache`), expectations, the applier's records, the decision times. An operator that kept a
few KB per finished job would grow without end under job churn."""

from __future__ import annotations

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS, job_resource
from kubetrain.operator.keys import job_key
from kubetrain.operator.prepare import DEFAULT_CACHE

from .controller_support import Harness, eventually, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")


STACK_OPTIONS = {"webhook": False, "training_policies": False}


async def test_deleted_jobs_leave_no_state_in_the_controller(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    controller = stack.controller
    assert controller is not None
    ns = await h.namespace("forget")
    jobs = {  # name -> kind; "done-*" finish (Succeeded) before they are deleted
        "run-a": "PyTorchJob",
        "run-b": "TFJob",
        "done-a": "PyTorchJob",
    }
    uids, keys = {}, {}
    for name, kind in jobs.items():
        created = await h.create_job(job_manifest(kind, name, {"Worker": 2}), ns)
        uids[name] = created["metadata"]["uid"]
        keys[name] = job_key(kind, ns, name)  # kubetrain.io: the kind is the resource id
    for name, kind in jobs.items():
        await h.wait_pods(ns, name, 2)
        await h.wait_condition(kind, ns, name, "Running")
    for i in range(2):
        await h.sim.finish(ns, f"done-a-worker-{i}")
    await h.wait_condition("PyTorchJob", ns, "done-a", "Succeeded")
    # The controller planned every job: each has its prepared form, the finished one a record.
    assert set(uids.values()) <= DEFAULT_CACHE.uids()
    assert uids["done-a"] in controller.applier.finished

    for name, kind in jobs.items():
        await h.kube.delete(job_resource(kind), ns, name, propagation_policy="Background")
    await eventually(
        lambda: all(controller.cache.get(job_resource(k), ns, n) is None for n, k in jobs.items()),
        what=f"the controller to see the jobs of {ns} deleted",
    )
    await eventually(lambda: not controller.cache.store(PODS).list(ns), what=f"the pods of {ns} to be gone")
    queue = controller.queue
    await eventually(  # the pods' delete events requeued the jobs: their last reconciles are done
        lambda: (
            not len(queue) and not any(queue.is_batched(k) or queue.is_processing(k) for k in keys.values())
        ),
        what="the deleted jobs' keys to leave the controller's queue",
    )

    assert not set(uids.values()) & DEFAULT_CACHE.uids()
    applier = controller.applier
    for uid in uids.values():
        assert uid not in applier.finished
        assert uid not in applier.create_failures
        assert uid not in applier.creates_proven
        assert uid not in applier.not_starting
    for key in keys.values():
        assert controller.expectations.pending(key) == (frozenset(), frozenset())
        assert key not in controller._decision_seconds
        assert controller.queue.num_requeues(key) == 0
