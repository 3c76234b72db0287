"""API-call budget (docs/performance.md): over a clean life a job of N pods costs the operator at
most N pod creates + 1 Service + (1 PodGroup with gang scheduling) + 4 status writes, its Events
within their budget (25 writes of per-pod events, and the transitions), and no
LIST or GET once its caches are synced. Counted with devcluster's request accounting, by the
controller's User-Agent (the test and the pod simulator use their own)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster import podgroup_crd
from kubetrain.kube.eventbudget import SPAM_BURST
from kubetrain.kube.resources import VOLCANO_PODGROUPS

from .controller_support import CONTROLLER_USER_AGENT, Harness, eventually, job_manifest

Obj = dict[str, Any]


def controller_requests(h: Harness) -> Counter[tuple[str, str]]:
    return Counter(
        (r.verb, r.resource) for r in h.requests.records if r.user_agent.startswith(CONTROLLER_USER_AGENT)
    )


async def run_clean_life(
    h: Harness, stack: DevStack, ns: str, job: Obj, master: str
) -> Counter[tuple[str, str]]:
    kind, name = job["kind"], job["metadata"]["name"]
    n = sum(
        spec["replicas"]
        for spec in next(iter(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))).values()
    )
    assert stack.controller is not None and stack.controller.synced
    h.requests.reset()
    await h.create_job(job, ns)
    await h.wait_pods(ns, name, n)
    await h.wait_condition(kind, ns, name, "Running")
    await h.sim.finish(ns, master)
    await h.wait_condition(kind, ns, name, "Succeeded")
    await h.wait_pod_names(ns, name, [master])  # cleanPodPolicy Running done
    controller = stack.controller
    await eventually(lambda: len(controller.queue) == 0, what="work queue drained")
    await controller.recorder.flush()
    await asyncio.sleep(0.3)  # anything still to come would show up now
    return controller_requests(h)


def check_budget(calls: Counter[tuple[str, str]], plural: str, n: int, *, gang: bool) -> None:
    summary = dict(calls)
    assert calls[("create", "pods")] == n, summary
    assert calls[("create", "services")] == 1, summary
    assert calls[("create", "podgroups")] == (1 if gang else 0), summary
    status_writes = calls[("update", f"{plural}/status")] + calls[("patch", f"{plural}/status")]
    assert 1 <= status_writes <= 4, summary
    # No reads per reconcile: everything comes from the informers' caches and watches.
    reads = {k: v for k, v in calls.items() if k[0] in ("list", "get")}
    assert reads == {}, summary
    # No other writes to the job or its children than the ones budgeted and the cleanup.
    allowed = {
        ("create", "pods"),
        ("create", "services"),
        ("create", "podgroups"),
        ("update", f"{plural}/status"),
        ("patch", f"{plural}/status"),
        ("delete", "pods"),
        ("delete", "services"),
        ("delete", "podgroups"),
        ("create", "events"),
        ("patch", "events"),
        ("watch", "pods"),  # (re-watches are reads of the stream, not per reconcile)
    }
    unexpected = {k: v for k, v in calls.items() if k not in allowed and k[0] != "watch"}
    assert unexpected == {}, summary
    assert calls[("delete", "pods")] <= n, summary
    # Events: the per-pod ones (SuccessfulCreatePod, …) within the job's budget, and the
    # transitions beside it (a clean life: one, JobSucceeded).
    assert calls[("create", "events")] + calls[("patch", "events")] <= SPAM_BURST + 1, summary


async def test_budget_without_gang_scheduling() -> None:
    async with DevStack(DevStackOptions()) as stack:
        h = await Harness.open(stack)
        try:
            ns = await h.namespace("budget")
            job = job_manifest("PyTorchJob", "bud", {"Master": 1, "Worker": 7})
            calls = await run_clean_life(h, stack, ns, job, "bud-master-0")
            check_budget(calls, "pytorchjobs", 8, gang=False)
            assert calls[("delete", "pods")] == 7  # cleanPodPolicy Running: the 7 running workers
        finally:
            await h.close()


async def test_budget_with_volcano_gang_scheduling() -> None:
    stack = DevStack(DevStackOptions(gang_scheduler="volcano", controller=False, podgroup_crd=False))
    await stack.start()
    h = await Harness.open(stack)
    try:
        await h.install_crd(podgroup_crd("volcano"))
        await stack.start_controller()
        ns = await h.namespace("gbudget")
        job = job_manifest("TFJob", "gb", {"Chief": 1, "PS": 1, "Worker": 4})
        assert stack.controller is not None
        h.requests.reset()

        async def admit() -> None:
            # Volcano's part: admit the PodGroup once it exists.
            group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "gb"), what="PodGroup")
            assert group is not None
            await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "gb", {"status": {"phase": "Running"}})

        admitting = asyncio.ensure_future(admit())
        calls = await run_clean_life(h, stack, ns, job, "gb-chief-0")
        await admitting
        check_budget(calls, "tfjobs", 6, gang=True)
        assert calls[("delete", "podgroups")] <= 1
    finally:
        await h.close()
        await stack.stop()


async def test_budget_in_per_pod_service_mode() -> None:
    """Per-pod Services (docs/operations.md, "Service mode"): N Service creates instead of 1 and
    N Service deletes at the end with cleanPodPolicy Running; everything else as above."""
    async with DevStack(DevStackOptions(service_mode="per-pod")) as stack:
        h = await Harness.open(stack)
        try:
            ns = await h.namespace("ppbudget")
            job = job_manifest("PyTorchJob", "pp", {"Master": 1, "Worker": 7})
            calls = await run_clean_life(h, stack, ns, job, "pp-master-0")
            assert calls[("create", "services")] == 8, dict(calls)
            calls[("create", "services")] = 1  # the rest of the budget is the headless mode's
            check_budget(calls, "pytorchjobs", 8, gang=False)
            assert calls[("delete", "services")] == 8, dict(calls)
        finally:
            await h.close()
