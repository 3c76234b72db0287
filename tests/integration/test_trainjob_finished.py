"""A finished TrainJob stays finished once its pods are gone, through the controller against
devcluster. With Trainer, deleting a finished TrainJob's JobSet (by hand, or by the JobSet TTL
controller for a runtime with `ttlSecondsAfterFinished`) made the TrainJob controller create the
JobSet again, so a completed or failed training ran again (Trainer issues 2981 and 3737).
kubetrain's TTL deletes the pods and keeps the TrainJob; whatever removes the pods, a finished
TrainJob gets no new ones."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import PODS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import CONTROLLER_USER_AGENT, TRAINER_API_GROUPS, Harness
from .test_trainjob_controller import get_tj, training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def runtime(name: str, *, ttl: int | None) -> Obj:
    """Trainer's torch runtime as TrainingRuntime `name`: a failed pod fails its job
    (restartPolicy Never, backoffLimit 0) and the TrainJob (maxRestarts 0); `ttl` is the
    JobSet template's ttlSecondsAfterFinished."""
    rt = training_runtime(name)
    spec = rt["spec"]["template"]["spec"]
    job = spec["replicatedJobs"][0]["template"]["spec"]
    job["backoffLimit"] = 0
    job["template"]["spec"]["restartPolicy"] = "Never"
    spec["failurePolicy"] = {"maxRestarts": 0}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return rt


def pod_creates(h: Harness, ns: str) -> int:
    """The operator's pod creates in `ns` so far."""
    return sum(
        1
        for r in h.requests.records
        if r.namespace == ns
        and r.verb == "create"
        and r.resource == "pods"
        and r.user_agent.startswith(CONTROLLER_USER_AGENT)
    )


async def reconciled_after(h: Harness, ns: str, name: str) -> None:
    """Make the controller reconcile TrainJob `name` again, and wait until it has: a label on
    the TrainJob queues it, and a second TrainJob created after it gets its pod only once the
    queue has moved past it (its one pod is the only create this adds)."""
    await h.change(TRAINJOBS, ns, name, lambda tj: tj["metadata"].setdefault("labels", {}).update(poke="1"))
    marker = f"{name}-after"
    await h.kube.create(TRAINJOBS, trainjob(marker, num_nodes=1), namespace=ns)
    await h.wait_pod_names(ns, marker, [f"{marker}-node-0-0"])
    await h.stack.cluster.settle()


@pytest.mark.parametrize("outcome", ["Failed", "Complete"])
async def test_a_finished_trainjob_whose_pods_the_ttl_deleted_is_not_run_again(
    env: tuple[DevStack, Harness], outcome: str
) -> None:
    _, h = env
    ns = await h.namespace("ttl")
    await h.kube.create(TRAINING_RUNTIMES, runtime("once", ttl=0), namespace=ns)
    job = trainjob("once", num_nodes=2, runtime="once", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    await h.wait_pod_names(ns, "once", ["once-node-0-0", "once-node-0-1"])
    await h.finish_all(ns, "once", exit_code=1 if outcome == "Failed" else 0)
    await wait_condition(h, ns, "once", outcome)
    await h.wait_pod_names(ns, "once", [])  # ttlSecondsAfterFinished: 0 deleted them
    assert pod_creates(h, ns) == 2

    await reconciled_after(h, ns, "once")
    assert [p["metadata"]["name"] for p in await h.pods(ns, "once")] == []
    assert pod_creates(h, ns) == 2 + 1  # the marker's pod only
    tj = await get_tj(h, ns, "once")
    assert [c["type"] for c in tj["status"]["conditions"] if c["status"] == "True"] == [outcome]


async def test_a_failed_trainjob_whose_pods_were_deleted_by_hand_is_not_run_again(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("byhand")
    await h.kube.create(TRAINING_RUNTIMES, runtime("kept", ttl=None), namespace=ns)
    job = trainjob("kept", num_nodes=2, runtime="kept", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    await h.wait_pod_names(ns, "kept", ["kept-node-0-0", "kept-node-0-1"])
    await h.sim.finish(ns, "kept-node-0-1", exit_code=1)
    await wait_condition(h, ns, "kept", "Failed")
    for pod in await h.pods(ns, "kept"):
        try:  # the failure itself deletes the pods still running: one may be gone already
            await h.kube.delete(PODS, ns, pod["metadata"]["name"])
        except ApiError as err:
            if not err.is_not_found:
                raise
    await h.wait_pod_names(ns, "kept", [])
    created = pod_creates(h, ns)

    await reconciled_after(h, ns, "kept")
    assert await h.pods(ns, "kept") == []
    assert pod_creates(h, ns) == created + 1  # the marker's pod only
    tj = await get_tj(h, ns, "kept")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True"
