"""A job whose pods a ResourceQuota refused starts as soon as the quota has room again — not at
its next back-off retry — and only the held-back jobs of that quota's namespace are woken.

The back-off is made huge here (10,000 s from the first failure), so the pods can only come from
the ResourceQuota watch. The quota's refusal is the API server's answer as a fault rule (403 with
kube-apiserver's quota admission message); the quota's status is what the quota controller
would write."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import RESOURCE_QUOTAS
from kubetrain.kube.workqueue import ExponentialBackoff
from kubetrain.operator.keys import key_of

from .controller_support import CONTROLLER_USER_AGENT, Harness, condition, eventually, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

STACK_OPTIONS = {"webhook": False, "training_policies": False}
QUOTA = "exceeded quota: compute, requested: pods=1, used: pods=4, limited: pods=4"
HUGE = 10_000.0


def held_back(job: dict[str, Any] | None) -> bool:
    cond = condition(job, "Running")
    return cond is not None and cond["status"] == "False" and cond["reason"] == "FailedCreatePod"


async def full_quota(h: Harness, ns: str) -> dict[str, Any]:
    quota = await h.kube.create(
        RESOURCE_QUOTAS,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute"},
            "spec": {"hard": {"pods": "4"}},
        },
        namespace=ns,
    )
    return await h.kube.replace_status(
        RESOURCE_QUOTAS, {**quota, "status": {"hard": {"pods": "4"}, "used": {"pods": "4"}}}
    )


def creates(h: Harness, ns: str) -> int:
    return int(
        h.requests.count(verb="create", resource="pods", user_agent=CONTROLLER_USER_AGENT, namespace=ns)
    )


async def test_a_quota_with_room_again_wakes_only_the_jobs_it_held_back(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    controller = stack.controller
    assert controller is not None
    controller.queue._backoff = ExponentialBackoff(base=HUGE, cap=HUGE)
    here, there = await h.namespace("qwake"), await h.namespace("qother")
    quotas = {ns: await full_quota(h, ns) for ns in (here, there)}
    for ns in (here, there):
        h.faults.fail(verb="create", resource="pods", namespace=ns, count=10**6, status=403, message=QUOTA)
    jobs = {}
    for ns in (here, there):
        await h.create_job(job_manifest("PyTorchJob", "big", {"Master": 1, "Worker": 1}), ns)
        jobs[ns] = await h.wait_job("PyTorchJob", ns, "big", held_back, "Running=False FailedCreatePod")
        assert QUOTA in (condition(jobs[ns], "Running") or {})["message"]
    keys = {ns: key_of(job) for ns, job in jobs.items()}
    queue = controller.queue

    def on_back_off(key: str) -> bool:  # not ready, batched or in a reconcile: waiting on its back-off
        idle = not len(queue) and not queue.is_batched(key) and not queue.is_processing(key)
        return idle and (queue.pending_delay(key) or 0) > HUGE / 2

    await eventually(lambda: all(on_back_off(k) for k in keys.values()), what="both jobs on their back-off")
    h.faults.clear()  # the API server would now admit the pods, once the quota says so
    sent_there = creates(h, there)

    # A quota update that frees nothing (more used) wakes no job.
    used_more = {**quotas[here], "status": {"hard": {"pods": "4"}, "used": {"pods": "5"}}}
    quotas[here] = await h.kube.replace_status(RESOURCE_QUOTAS, used_more)
    # Pods of the namespace finished: the quota controller lowers status.used. The job starts now.
    freed = {**quotas[here], "status": {"hard": {"pods": "4"}, "used": {"pods": "0"}}}
    await h.kube.replace_status(RESOURCE_QUOTAS, freed)
    await h.wait_pods(here, "big", 2)
    await h.wait_job(
        "PyTorchJob", here, "big", lambda j: not held_back(j), "Running no longer FailedCreatePod"
    )
    assert controller.queue.num_requeues(keys[here]) == 0

    # The other namespace's job was not queued: no pod, no create tried, still on its back-off.
    assert await h.pods(there, "big") == []
    assert creates(h, there) == sent_there
    assert on_back_off(keys[there])

    # Its quota raised (spec.hard, copied by the quota controller to status.hard): it starts too.
    raised = await h.kube.patch(RESOURCE_QUOTAS, there, "compute", {"spec": {"hard": {"pods": "8"}}})
    await h.kube.replace_status(
        RESOURCE_QUOTAS, {**raised, "status": {"hard": {"pods": "8"}, "used": {"pods": "4"}}}
    )
    await h.wait_pods(there, "big", 2)
