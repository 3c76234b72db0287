"""The simulated gang schedulers record the Events `kubectl describe pod` / `kubectl get events`
show on a cluster: Volcano its core/v1 `FailedScheduling` on each member not bound, `Unschedulable`
and `Scheduled` on the PodGroup and `Scheduled` on a bound pod (component `volcano`, repeats
counted by the correlator); scheduler-plugins kube-scheduler's events.k8s.io/v1 `FailedScheduling`
and `Scheduled` (reportingController the scheduler's name, repeats folded into a series). Waits
are on observable API state, never on time."""

from __future__ import annotations

from typing import Any

from pods import pod_manifest

from kubetrain.devcluster.gang.simulator import GangSchedulerSimulator
from kubetrain.kube.resources import NODES, PODS, SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS

from .controller_support import JOB_NAME_LABEL, Harness, eventually, running_stack
from .test_gang_filters import _unschedulable_pod, gang_job, scheduled_condition

Obj = dict[str, Any]
EVENTS_V1 = "/apis/events.k8s.io/v1"
ANTI_AFFINE = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {JOB_NAME_LABEL: "ddp"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}


async def core_events(h: Harness, ns: str, name: str, kind: str, reason: str) -> list[Obj]:
    return [
        e
        for e in await h.events(ns, name)
        if e["involvedObject"].get("kind") == kind and e.get("reason") == reason
    ]


async def v1_events(sim: GangSchedulerSimulator, ns: str, name: str, reason: str) -> list[Obj]:
    query = {"fieldSelector": f"regarding.name={name}"}
    code, body = await sim.api.request("GET", f"{EVENTS_V1}/namespaces/{ns}/events", query=query)
    assert code == 200, body
    return [e for e in body["items"] if e.get("reason") == reason]


async def more_cycles(h: Harness, sim: GangSchedulerSimulator, node: str) -> None:
    """Wake the gang scheduler twice (a Node change) and wait for its cycles and Event writes."""
    for step in ("a", "b"):
        before = sim.cycles
        await h.kube.patch(NODES, None, node, {"metadata": {"labels": {"touch": step}}})

        async def cycled(before: int = before) -> bool:
            return sim.cycles > before

        await eventually(cycled, what="another scheduling cycle")
    await sim.events.flush()


async def test_volcano_records_failed_scheduling_on_members_and_unschedulable_on_the_podgroup() -> None:
    async with running_stack(gang_scheduler="volcano") as (s, h):
        sim = s.gang_simulator
        assert sim is not None and s.simulator is not None
        nodes = len(s.simulator.node_names)
        ns = await h.namespace("vcev")
        await h.create_job(gang_job("ddp", nodes, ANTI_AFFINE), ns)
        reason = f"{nodes} node(s) didn't match pod anti-affinity rules"
        last = f"ddp-worker-{nodes - 1}"
        await eventually(lambda: _unschedulable_pod(h, ns, "ddp", reason), what="the last member refused")
        await sim.events.flush()
        nodes_text = f"0/{nodes} nodes are unavailable: {reason}."
        # The member no node takes: its nodes' reasons, from `volcano`, as a core/v1 Event.
        [failed] = await core_events(h, ns, last, "Pod", "FailedScheduling")
        assert (failed["type"], failed["message"], failed["count"]) == ("Warning", nodes_text, 1)
        assert failed["source"] == {"component": "volcano"}
        assert (failed["reportingComponent"], failed["reportingInstance"]) == ("volcano", "volcano")
        # A member placed before it: `Schedulable`, on the node it would take.
        master = await h.pod(ns, "ddp-master-0")
        cond = scheduled_condition(master or {}) or {}
        assert cond["reason"] == "Schedulable", cond
        [placed] = await core_events(h, ns, "ddp-master-0", "Pod", "FailedScheduling")
        assert placed["type"] == "Warning" and placed["message"] == cond["message"]
        assert placed["message"].startswith(f"Pod {ns}/ddp-master-0 can possibly be assigned to ")
        assert placed["message"].endswith(", once minAvailable is satisfied")
        # The PodGroup: `Unschedulable` with every member Pending and Volcano's fit error.
        fit = (
            f"pod group is not ready, {nodes + 1} Pending, {nodes + 1} minAvailable; "
            f"Pending: 1 Unschedulable, {nodes} Schedulable. Origin reason is {last}: {nodes_text}"
        )
        message = f"{nodes + 1}/{nodes + 1} tasks in gang unschedulable: {fit}"

        async def group_event() -> Obj | None:
            for event in await core_events(h, ns, "ddp", "PodGroup", "Unschedulable"):
                if event["message"] == message:
                    return event
            return None

        first = await eventually(group_event, what="the PodGroup's Unschedulable Event")
        assert first["type"] == "Warning" and first["source"] == {"component": "volcano"}
        assert first["involvedObject"]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
        # Repeats: the PodGroup's Event counts each cycle (one Event); the pods' Events are
        # recorded only with a change of their condition, so they stay at one.
        await more_cycles(h, sim, s.simulator.node_names[0])
        again = await group_event()
        assert again is not None and again["metadata"]["name"] == first["metadata"]["name"]
        assert again["count"] >= first["count"] + 2, (first["count"], again["count"])
        assert [e["count"] for e in await core_events(h, ns, last, "Pod", "FailedScheduling")] == [1]


async def test_volcano_records_scheduled_on_bound_pods_and_a_ready_podgroup() -> None:
    async with running_stack(gang_scheduler="volcano") as (s, h):
        sim = s.gang_simulator
        assert sim is not None
        ns = await h.namespace("vcok")
        await h.create_job(gang_job("ok", 1, {}), ns)
        await h.wait_condition("PyTorchJob", ns, "ok", "Succeeded")
        await sim.events.flush()
        bound = {pod: node for ns_, pod, node in sim.bindings if ns_ == ns}
        assert set(bound) == {"ok-master-0", "ok-worker-0"}
        for pod, node in bound.items():
            [event] = await core_events(h, ns, pod, "Pod", "Scheduled")
            assert (event["type"], event["message"]) == (
                "Normal",
                f"Successfully assigned {ns}/{pod} to {node}",
            )
            assert event["source"] == {"component": "volcano"}
            assert await core_events(h, ns, pod, "Pod", "FailedScheduling") == []
        ready = await core_events(h, ns, "ok", "PodGroup", "Scheduled")
        assert ready and {(e["type"], e["message"]) for e in ready} == {("Normal", "pod group is ready")}


async def test_scheduler_plugins_records_kube_schedulers_failed_scheduling_in_a_series() -> None:
    async with running_stack(gang_scheduler="scheduler-plugins") as (s, h):
        sim = s.gang_simulator
        assert sim is not None and s.simulator is not None
        nodes = len(s.simulator.node_names)
        ns = await h.namespace("spev")
        await h.create_job(gang_job("ddp", nodes, ANTI_AFFINE), ns)
        reason = f"{nodes} node(s) didn't match pod anti-affinity rules"
        pod = await eventually(
            lambda: _unschedulable_pod(h, ns, "ddp", reason), what="the last member refused"
        )
        name = pod["metadata"]["name"]
        message = (scheduled_condition(pod) or {})["message"]
        # kube-scheduler's FitError: the nodes' reasons, then the PostFilter texts of
        # DefaultPreemption and of the coscheduling plugin (the whole gang is rejected).
        assert message.startswith(f"0/{nodes} nodes are available: {reason}. preemption: "), message
        assert message.endswith(
            f"., PodGroup {ns}/ddp gets rejected due to Pod {name} is unschedulable even after PostFilter"
        ), message
        # Each attempt records it; one on the pod as it is now (the condition written) folds
        # every later attempt into its series (tools/events keys on the pod's resourceVersion).
        await more_cycles(h, sim, s.simulator.node_names[0])
        current = ((await h.pod(ns, name)) or {})["metadata"]["resourceVersion"]
        written = await v1_events(sim, ns, name, "FailedScheduling")
        [event] = [e for e in written if e["regarding"].get("resourceVersion") == current]
        assert event["note"] == message
        assert (event["type"], event["action"]) == ("Warning", "Scheduling")
        assert event["reportingController"] == "scheduler-plugins-scheduler"
        assert event["reportingInstance"].startswith("scheduler-plugins-scheduler-")
        assert event["series"]["count"] >= 2, event
        await more_cycles(h, sim, s.simulator.node_names[1])
        later = await v1_events(sim, ns, name, "FailedScheduling")
        assert len(later) == len(written)  # folded: no new Event
        # A member placed before it is refused only while its gang lacks members (PreFilter).
        for early in await v1_events(sim, ns, "ddp-master-0", "FailedScheduling"):
            assert "pre-filter pod ddp-master-0 cannot find enough sibling pods" in early["note"], early


async def test_scheduler_plugins_records_the_prefilter_refusal_and_scheduled() -> None:
    async with running_stack(gang_scheduler="scheduler-plugins", controller=False) as (s, h):
        sim = s.gang_simulator
        assert sim is not None and s.simulator is not None
        nodes = len(s.simulator.node_names)
        ns = await h.namespace("sppre")
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": {"minMember": 2},
        }
        await h.kube.create(SCHEDULER_PLUGINS_PODGROUPS, group, namespace=ns)

        def member(name: str) -> Obj:
            return pod_manifest(
                name,
                namespace=ns,
                container="c",
                labels={"scheduling.x-k8s.io/pod-group": "g"},
                schedulerName="scheduler-plugins-scheduler",
            )

        await h.kube.create(PODS, member("p0"), namespace=ns)
        note = (
            f"0/{nodes} nodes are available: pre-filter pod p0 cannot find enough sibling pods, "
            f"current pods number: 1, minMember of group: 2. "
            f"preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling., "
            f"PodGroup {ns}/g gets rejected due to Pod p0 is unschedulable even after PostFilter"
        )

        async def refused() -> list[Obj]:
            await sim.events.flush()
            return await v1_events(sim, ns, "p0", "FailedScheduling")

        [event] = await eventually(refused, what="p0's FailedScheduling")
        assert (event["note"], event["type"], event["action"]) == (note, "Warning", "Scheduling")
        # The second member completes the gang: both are bound, each with `Scheduled`.
        await h.kube.create(PODS, member("p1"), namespace=ns)
        for name in ("p0", "p1"):
            await s.simulator.wait_for_phase(ns, name, "Running", 30)
        await sim.events.flush()
        bound = {pod: node for ns_, pod, node in sim.bindings if ns_ == ns}
        for name, node in bound.items():
            [scheduled] = await v1_events(sim, ns, name, "Scheduled")
            assert scheduled["note"] == f"Successfully assigned {ns}/{name} to {node}"
            assert (scheduled["type"], scheduled["action"]) == ("Normal", "Binding")
            assert scheduled["reportingController"] == "scheduler-plugins-scheduler"
        assert set(bound) == {"p0", "p1"}


async def test_volcano_records_the_enqueue_refusal_of_a_group_the_cluster_cannot_hold() -> None:
    async with running_stack(gang_scheduler="volcano", controller=False) as (s, h):
        sim = s.gang_simulator
        assert sim is not None
        ns = await h.namespace("vcenq")
        group = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "big"},
            "spec": {"minMember": 2, "minResources": {"cpu": "100000", "memory": "1Gi"}},
        }
        await h.kube.create(VOLCANO_PODGROUPS, group, namespace=ns)

        async def recorded() -> tuple[list[Obj], list[Obj]] | None:
            await sim.events.flush()
            events = [e for e in await h.events(ns, "big") if e["involvedObject"]["kind"] == "PodGroup"]
            normal = [e for e in events if e["type"] == "Normal"]
            warning = [e for e in events if e["type"] == "Warning"]
            return (normal, warning) if normal and warning else None

        normal, warning = await eventually(recorded, what="the PodGroup's Events")
        # The overcommit plugin names the resource short (cpu), not the one that fits (memory).
        assert [(e["reason"], e["message"]) for e in normal] == [
            ("Unschedulable", "resource in cluster is overused: overused cpu")
        ]
        # RecordJobStatusEvent: a Pending group without pods.
        assert {(e["reason"], e["message"]) for e in warning} == {
            ("Unschedulable", "0/0 tasks in gang unschedulable: pod group is not ready, 2 minAvailable")
        }
