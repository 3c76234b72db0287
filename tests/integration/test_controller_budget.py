"""API-call budget (docs/performance.md): over a clean life a job of N pods costs the operator at
most N pod creates + 1 Service + (1 PodGroup with gang scheduling) + 4 status writes and its
transitions' Events (a clean life: one), and no
LIST or GET once its caches are synced. Counted with devcluster's request accounting, by the
controller's User-Agent (the test and the pod simulator use their own)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.eventbudget import SPAM_BURST
from kubetrain.kube.resources import VOLCANO_PODGROUPS, ResourceRef, job_resource, job_resources_in

from .controller_support import CONTROLLER_USER_AGENT, Harness, eventually, gang_stack, job_manifest

Obj = dict[str, Any]


def controller_requests(h: Harness) -> Counter[tuple[str, str]]:
    return Counter(
        (r.verb, r.resource) for r in h.requests.records if r.user_agent.startswith(CONTROLLER_USER_AGENT)
    )


async def run_clean_life(
    h: Harness, stack: DevStack, ns: str, job: Obj, master: str, ref: ResourceRef | None = None
) -> Counter[tuple[str, str]]:
    """The operator's requests over `job`'s clean life (kubetrain.io, or the group of `ref`)."""
    kind, name = job["kind"], job["metadata"]["name"]
    n = sum(
        spec["replicas"]
        for spec in next(iter(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))).values()
    )
    assert stack.controller is not None and stack.controller.synced
    h.requests.reset()
    ref = ref or job_resource(kind)
    await h.kube.create(ref, job, namespace=ns)
    await h.wait_pods(ns, name, n)
    await h.wait_true(ref, ns, name, "Running")
    await h.sim.finish(ns, master)
    await h.wait_true(ref, ns, name, "Succeeded")
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
    # Events: the transitions' (a clean life: one, JobSucceeded); a kubetrain.io job gets no
    # per-pod Events (docs/behaviour.md §5).
    assert calls[("create", "events")] + calls[("patch", "events")] == 1, summary


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
    async with gang_stack("volcano") as (stack, h):
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


async def test_a_kubeflow_jobs_per_pod_events_stay_within_their_budget() -> None:
    """A kubeflow.org job gets training-operator's per-pod Events (SuccessfulCreatePod,
    ExitedWithCode, SuccessfulDeletePod, …): 16 pods give about 50 of them, written in exactly
    the job's budget of 25 writes, beside its one transition; the rest of the budget as above."""
    async with DevStack(DevStackOptions(api_groups=("kubetrain.io", "kubeflow.org"))) as stack:
        h = await Harness.open(stack)
        try:
            ns = await h.namespace("kfbudget")
            job = job_manifest("PyTorchJob", "kf", {"Master": 1, "Worker": 15})
            job["apiVersion"] = "kubeflow.org/v1"
            ref = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
            calls = await run_clean_life(h, stack, ns, job, "kf-master-0", ref)
            events = calls[("create", "events")] + calls[("patch", "events")]
            assert events == SPAM_BURST + 1, dict(calls)
            calls[("create", "events")], calls[("patch", "events")] = 1, 0
            check_budget(calls, "pytorchjobs", 16, gang=False)
        finally:
            await h.close()
