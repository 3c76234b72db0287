"""A TrainJob whose pods the API server refuses (a ResourceQuota, an admission webhook) or whose
pod names someone else's pod holds is not silent: without Jobs (whose `FailedCreate` events a
JobSet user reads), the TrainJob itself gets a Warning event naming the refusal, and no
condition Trainer's status does not have (docs/behaviour.md §11, "Running, finishing,
restarting")."""

from __future__ import annotations

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS, RESOURCE_QUOTAS, TRAINJOBS
from kubetrain.kube.workqueue import ExponentialBackoff
from kubetrain.operator.keys import key_of

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_quota_wake import HUGE, full_quota
from .test_trainjob_controller import trainjob

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUOTA = "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


async def test_pods_over_quota_are_a_warning_event_on_the_trainjob(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tjquota")
    rule = h.faults.fail(
        verb="create", resource="pods", namespace=ns, nth=2, count=10**6, status=403, message=QUOTA
    )
    try:
        await h.kube.create(TRAINJOBS, trainjob("big", num_nodes=4), namespace=ns)
        event = await h.wait_event(ns, "big", "FailedCreatePod")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "TrainJob"
        assert "TrainJob big: could not create pod big-node-0-" in event["message"]
        assert QUOTA in event["message"]
        tj = await h.get(TRAINJOBS, ns, "big")
        # Trainer's conditions only: the Kubeflow SDK reads a TrainJob without any as running
        assert tj is not None and not (tj.get("status") or {}).get("conditions")
        assert len(await h.pods(ns, "big")) == 1
    finally:
        h.faults.clear()
    # the quota raised: the pods are created at a later retry (or at once on a change of the job)
    await h.kube.patch(TRAINJOBS, ns, "big", {"metadata": {"labels": {"quota": "raised"}}})
    await h.wait_pod_names(ns, "big", [f"big-node-0-{i}" for i in range(4)])
    assert rule.fired >= 1


async def test_a_pod_name_held_by_someone_elses_pod_is_a_warning_event(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tjsquat")
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sq-node-0-1"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await h.kube.create(PODS, squatter, namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob("sq", num_nodes=2), namespace=ns)
    event = await h.wait_event(ns, "sq", "PodNameConflict")
    assert "pod sq-node-0-1 already exists and is not owned by TrainJob sq" in event["message"]
    await h.kube.delete(PODS, ns, "sq-node-0-1", grace_period_seconds=0)

    async def owned() -> bool | None:
        pod = await h.pod(ns, "sq-node-0-1")
        refs = (pod or {}).get("metadata", {}).get("ownerReferences") or []
        return True if refs and refs[0]["name"] == "sq" else None

    await eventually(owned, what="sq-node-0-1 created for the TrainJob once the name is free")


async def test_a_quota_with_room_again_starts_a_held_back_trainjob_at_once(
    env: tuple[DevStack, Harness],
) -> None:
    """The ResourceQuota watch wakes TrainJobs as it wakes the v1 kinds: with a back-off of
    10,000 s, the pods can only come from the quota's update, not from a retry or a job change."""
    stack, h = env
    controller = stack.controller
    assert controller is not None
    kept = controller.queue._backoff
    controller.queue._backoff = ExponentialBackoff(base=HUGE, cap=HUGE)
    try:
        ns = await h.namespace("tjwake")
        quota = await full_quota(h, ns)
        h.faults.fail(verb="create", resource="pods", namespace=ns, count=10**6, status=403, message=QUOTA)
        await h.kube.create(TRAINJOBS, trainjob("held", num_nodes=2), namespace=ns)
        await h.wait_event(ns, "held", "FailedCreatePod")
        key = key_of(await h.get(TRAINJOBS, ns, "held") or {})
        queue = controller.queue

        def on_back_off() -> bool:
            idle = not len(queue) and not queue.is_batched(key) and not queue.is_processing(key)
            return idle and (queue.pending_delay(key) or 0) > HUGE / 2

        await eventually(on_back_off, what="the TrainJob on its back-off")
        assert await h.pods(ns, "held") == []
        h.faults.clear()
        # pods of the namespace finished: the quota controller lowers status.used
        freed = {**quota, "status": {"hard": {"pods": "4"}, "used": {"pods": "0"}}}
        await h.kube.replace_status(RESOURCE_QUOTAS, freed)
        await h.wait_pod_names(ns, "held", [f"held-node-0-{i}" for i in range(2)])
    finally:
        h.faults.clear()
        controller.queue._backoff = kept
