"""The pod garbage collector's decisions (devcluster/controllers/podgcplan.py): which pods one
pass deletes, in which order, the status a pod gets first, and the orphaned-node quarantine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.controllers import podgcplan
from kubetrain.devcluster.controllers.podgcplan import Quarantine, plan

Obj = dict[str, Any]
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def pod(
    name: str,
    phase: str = "Running",
    *,
    node: str = "n1",
    created: str = "2024-01-01T00:00:00Z",
    terminating: bool = False,
    reason: str | None = None,
) -> Obj:
    md: Obj = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": created}
    if terminating:
        md["deletionTimestamp"] = "2024-01-02T00:00:00Z"
    status: Obj = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"metadata": md, "spec": {"nodeName": node}, "status": status}


def node(name: str, ready: str = "True", *taints: Obj) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


def names(deletions: list[podgcplan.Deletion]) -> list[tuple[str, str]]:
    return [(d.name, d.why) for d in deletions]


def test_terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest_then_by_name() -> None:
    pods = [
        pod("new", "Succeeded", created="2024-01-03T00:00:00Z"),
        pod("b-old", "Failed", created="2024-01-01T00:00:00Z"),
        pod("a-old", "Succeeded", created="2024-01-01T00:00:00Z"),
        pod("evicted", "Failed", created="2024-01-05T00:00:00Z", reason="Evicted"),
        pod("running", "Running", created="2023-01-01T00:00:00Z"),
        pod("pending", "Pending", created="2023-01-01T00:00:00Z"),
        pod("unknown", "Unknown", created="2023-01-01T00:00:00Z"),
    ]
    nodes = {"n1": node("n1")}
    assert names(plan(pods, nodes, set(), threshold=1)) == [
        ("evicted", "terminated"),
        ("a-old", "terminated"),
        ("b-old", "terminated"),
    ]
    assert names(plan(pods, nodes, set(), threshold=4)) == []
    assert names(plan(pods, nodes, set(), threshold=0)) == []  # 0: never
    # a terminated pod already has its final phase: nothing to mark
    assert not any(d.mark_failed for d in plan(pods, nodes, set(), threshold=1))


def test_an_empty_phase_counts_as_terminated_as_upstream() -> None:
    assert podgcplan.is_terminated(pod("x", ""))
    assert not podgcplan.is_terminated(pod("x", "Unknown"))


def test_terminating_pods_go_only_from_a_not_ready_node_with_the_out_of_service_taint() -> None:
    pods = [
        pod("lost", node="down-oos", terminating=True),
        pod("not-terminating", node="down-oos"),
        pod("ready-node", node="up-oos", terminating=True),
        pod("no-taint", node="down", terminating=True),
        pod("unknown-node-ready", node="unknown-oos", terminating=True),
        pod("no-such-node", node="gone", terminating=True),
    ]
    nodes = {
        "down-oos": node("down-oos", "False", OUT_OF_SERVICE),
        "up-oos": node("up-oos", "True", OUT_OF_SERVICE),
        "down": node("down", "Unknown", {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}),
        # any effect of the key counts (TaintKeyExists); an Unknown Ready is not Ready
        "unknown-oos": node("unknown-oos", "Unknown", {**OUT_OF_SERVICE, "effect": "NoSchedule"}),
    }
    decided = plan(pods, nodes, set(), threshold=12500)
    assert names(decided) == [("lost", "out-of-service"), ("unknown-node-ready", "out-of-service")]
    assert all(d.mark_failed and d.condition is None for d in decided)


def test_a_node_without_a_ready_condition_is_not_ready() -> None:
    assert not podgcplan.node_ready({"metadata": {"name": "n"}, "status": {}})


def test_pods_of_a_deleted_node_are_orphans_marked_with_the_disruption_condition() -> None:
    pods = [pod("orphan", node="gone"), pod("done", "Succeeded", node="gone"), pod("fine", node="n1")]
    decided = plan(pods, {"n1": node("n1")}, {"gone"}, threshold=12500)
    assert names(decided) == [("orphan", "orphaned"), ("done", "orphaned")]
    first, second = decided
    assert first.mark_failed and first.uid == "uid-orphan"
    assert first.condition == {
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": None,
        "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists",
    }
    assert not second.mark_failed  # Succeeded stays Succeeded


def test_unscheduled_terminating_pods_go_without_a_condition() -> None:
    pods = [pod("gated", "Pending", node="", terminating=True), pod("waiting", "Pending", node="")]
    decided = plan(pods, {}, set(), threshold=12500)
    assert names(decided) == [("gated", "unscheduled")]
    assert decided[0].mark_failed and decided[0].condition is None


def test_a_pod_two_rules_pick_is_deleted_once_for_the_first_rule() -> None:
    pods = [
        pod("old", "Failed", node="gone", created="2020-01-01T00:00:00Z"),
        pod("new", "Failed", node="gone"),
    ]
    assert names(plan(pods, {}, {"gone"}, threshold=1)) == [("old", "terminated"), ("new", "orphaned")]


def test_missing_nodes_are_those_pods_are_bound_to_that_are_not_listed() -> None:
    pods = [pod("a", node="n1"), pod("b", node="gone"), pod("c", node="")]
    assert podgcplan.missing_nodes(pods, {"n1"}) == {"gone"}


def test_the_quarantine_keeps_the_first_sighting_and_forgets_what_it_hands_out() -> None:
    q = Quarantine()
    q.sight({"gone"}, now=100.0)
    q.sight({"gone"}, now=120.0)  # a later sighting does not postpone it
    assert q.due(139.9) == []
    assert q.due(140.0) == ["gone"]
    assert q.due(200.0) == []  # handed out once; the next sighting starts a new quarantine
    q.sight({"gone"}, now=200.0)
    assert q.waiting() == {"gone": 240.0}


def test_failed_status_adds_the_condition_and_keeps_the_rest() -> None:
    status = {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    new = podgcplan.failed_status(status, podgcplan.disruption_condition(), NOW)
    assert new is not None
    assert new["phase"] == "Failed" and new["podIP"] == "10.0.0.1"
    assert new["conditions"] == [
        {"type": "Ready", "status": "True"},
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
            "lastProbeTime": None,
            "lastTransitionTime": "2024-05-01T12:00:00Z",
        },
    ]
    assert status["phase"] == "Running"  # the input is not changed


def test_failed_status_replaces_another_disruption_reason_keeping_its_transition_time() -> None:
    earlier = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastTransitionTime": "2024-04-01T00:00:00Z",
    }
    new = podgcplan.failed_status(
        {"phase": "Failed", "conditions": [earlier]}, podgcplan.disruption_condition(), NOW
    )
    assert new is not None
    assert new["conditions"] == [
        {
            **earlier,
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
            "lastProbeTime": None,
        }
    ]
    # the same condition again changes nothing
    assert podgcplan.failed_status(new, podgcplan.disruption_condition(), NOW) is None


def test_failed_status_without_a_condition_only_sets_the_phase() -> None:
    assert podgcplan.failed_status({"phase": "Pending"}, None, NOW) == {"phase": "Failed"}
    assert podgcplan.failed_status({"phase": "Failed"}, None, NOW) is None


def test_the_cache_keeps_what_a_pass_reads_and_decides_the_same() -> None:
    """podgc.py caches `cached_pod` / `cached_node` of each watched object: the plan over them
    is the plan over the whole objects."""
    pods = [
        pod("orphan", node="gone"),
        pod("out", node="lost", terminating=True),
        pod("old", "Failed", node="n1", created="2020-01-01T00:00:00Z"),
        pod("new", "Succeeded", node="n1", created="2021-01-01T00:00:00Z"),
        pod("gated", "Pending", node="", terminating=True),
    ]
    for p in pods:
        p["spec"]["containers"] = [{"name": "main", "image": "busybox"}]
        p["status"]["podIP"] = "10.0.0.1"
    nodes = {"n1": node("n1"), "lost": node("lost", "False", OUT_OF_SERVICE)}
    whole = plan(pods, nodes, {"gone"}, threshold=1)
    cached = plan(
        [podgcplan.cached_pod(p) for p in pods],
        {n: podgcplan.cached_node(v) for n, v in nodes.items()},
        {"gone"},
        threshold=1,
    )
    assert cached == whole and len(whole) == 4
    assert "containers" not in podgcplan.cached_pod(pods[0])["spec"]
