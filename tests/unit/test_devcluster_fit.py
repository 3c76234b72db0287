"""The simulated scheduler's fit rule (devcluster/kubelet/fit.py): which nodes take a pod, and
kube-scheduler's FailedScheduling message when none does."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubetrain.devcluster.gang.resources import Resources, pod_requests, resources
from kubetrain.devcluster.kubelet import fit
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY

Obj = dict[str, Any]


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def pod(requests: dict[str, str] | None = None, priority: int = 0, **spec: Any) -> Obj:
    container = {"name": "main", "resources": {"requests": requests or {}}}
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [container], "priority": priority, **spec},
    }


def free_of(*names: str, **override: str) -> dict[str, Resources]:
    return {n: resources({**NODE_CAPACITY, **override}) for n in names}


NODES = [node("n0", zone="a", gen="5"), node("n1", zone="b", gen="9")]


def fitting(p: Obj, free: dict[str, Resources] | None = None) -> list[str]:
    reasons = fit.filter_nodes(p, NODES, free or free_of("n0", "n1"))
    return [n for n, why in reasons.items() if not why]


def test_a_pod_within_a_nodes_allocatable_fits_everywhere_and_one_asking_more_nowhere() -> None:
    assert fitting(pod({"nvidia.com/gpu": "8", "cpu": "64"})) == ["n0", "n1"]
    reasons = fit.filter_nodes(pod({"nvidia.com/gpu": "100"}), NODES, free_of("n0", "n1"))
    assert reasons == {"n0": ["Insufficient nvidia.com/gpu"], "n1": ["Insufficient nvidia.com/gpu"]}


def test_room_taken_by_other_pods_and_the_pod_slots_count() -> None:
    free = free_of("n0", "n1")
    free["n0"]["nvidia.com/gpu"] = Fraction(2)
    assert fitting(pod({"nvidia.com/gpu": "4"}), free) == ["n1"]
    free["n1"]["pods"] = Fraction(0)
    assert fit.filter_nodes(pod({"nvidia.com/gpu": "4"}), NODES, free) == {
        "n0": ["Insufficient nvidia.com/gpu"],
        "n1": ["Too many pods"],
    }


def test_effective_requests_take_the_largest_init_container_and_the_overhead() -> None:
    p = pod({"cpu": "10"}, overhead={"cpu": "1"})
    p["spec"]["containers"].append({"name": "side", "resources": {"limits": {"cpu": "20"}}})
    p["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "40", "memory": "1Gi"}}}
    ]
    need = pod_requests(p)
    assert need["cpu"] == 41 and need["memory"] == 2**30 and need["pods"] == 1
    assert fit.resource_reasons(need, resources({"cpu": "40", "memory": "1Gi", "pods": "1"})) == [
        "Insufficient cpu"
    ]


def test_node_selector_must_match_every_label() -> None:
    assert fitting(pod(nodeSelector={"zone": "b"})) == ["n1"]
    assert fitting(pod(nodeSelector={"zone": "b", "gen": "5"})) == []
    assert fitting(pod(nodeSelector={"missing": "x"})) == []


def affinity(*terms: Obj) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "c"]}, ["n0"]),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, ["n1"]),
        ({"key": "nowhere", "operator": "NotIn", "values": ["a"]}, ["n0", "n1"]),
        ({"key": "zone", "operator": "Exists"}, ["n0", "n1"]),
        ({"key": "zone", "operator": "DoesNotExist"}, []),
        ({"key": "gen", "operator": "Gt", "values": ["6"]}, ["n1"]),
        ({"key": "gen", "operator": "Lt", "values": ["6"]}, ["n0"]),
        ({"key": "zone", "operator": "Gt", "values": ["6"]}, []),  # not an integer: no match
        ({"key": "nowhere", "operator": "Lt", "values": ["6"]}, []),
    ],
)
def test_required_node_affinity_expressions(expression: Obj, expected: list[str]) -> None:
    assert fitting(pod(affinity=affinity({"matchExpressions": [expression]}))) == expected


def test_affinity_terms_are_ored_their_requirements_anded_and_fields_match_the_name() -> None:
    in_a = {"key": "zone", "operator": "In", "values": ["a"]}
    named_n1 = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    assert fitting(pod(affinity=affinity({"matchExpressions": [in_a], "matchFields": [named_n1]}))) == []
    assert fitting(pod(affinity=affinity({"matchExpressions": [in_a]}, {"matchFields": [named_n1]}))) == [
        "n0",
        "n1",
    ]
    assert fitting(pod(affinity=affinity({}))) == []  # an empty term matches no node
    # nodeSelector and affinity both apply
    assert fitting(pod(nodeSelector={"zone": "b"}, affinity=affinity({"matchExpressions": [in_a]}))) == []


def test_fit_error_is_kube_schedulers_message() -> None:
    p = pod({"nvidia.com/gpu": "100"})
    free = free_of("n0", "n1")
    reasons = fit.filter_nodes(p, NODES, free)
    assert fit.fit_error(p, reasons, free, {}) == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    selector = pod({"nvidia.com/gpu": "100"}, nodeSelector={"zone": "a"})
    reasons = fit.filter_nodes(selector, NODES, free)
    assert fit.fit_error(selector, reasons, free, {}) == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found for "
        "incoming pod, 1 Preemption is not helpful for scheduling."
    )
    never = pod({"nvidia.com/gpu": "100"}, preemptionPolicy="Never")
    assert fit.fit_error(never, fit.filter_nodes(never, NODES, free), free, {}) == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: not eligible due to "
        "preemptionPolicy=Never."
    )


def test_fit_error_with_lower_priority_pods_names_what_is_still_missing_without_them() -> None:
    low = pod({"nvidia.com/gpu": "6"}, priority=0)
    free = free_of("n0", "n1")
    free["n0"]["nvidia.com/gpu"] = Fraction(2)
    p = pod({"nvidia.com/gpu": "9", "cpu": "1"}, priority=100)
    reasons = fit.filter_nodes(p, NODES, free)
    message = fit.fit_error(p, reasons, free, {"n0": [low]})
    assert message.endswith(
        "preemption: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "1 No preemption victims found for incoming pod."
    )


def test_the_condition_is_written_once_and_again_when_the_message_changes() -> None:
    p = pod()
    p["status"] = {"phase": "Pending", "conditions": [{"type": "Other", "status": "True"}]}
    first = fit.unschedulable_status(p, "0/2 nodes are available: x.", "2026-01-01T00:00:00Z")
    assert first is not None
    scheduled = [c for c in first["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "Unschedulable",
            "message": "0/2 nodes are available: x.",
        }
    ]
    assert {"type": "Other", "status": "True"} in first["conditions"]
    p["status"] = first
    assert fit.unschedulable_status(p, "0/2 nodes are available: x.", "2026-01-01T00:05:00Z") is None
    moved = fit.unschedulable_status(p, "0/2 nodes are available: y.", "2026-01-01T00:05:00Z")
    assert moved is not None
    cond = next(c for c in moved["conditions"] if c["type"] == "PodScheduled")
    assert cond["message"].endswith("y.") and cond["lastTransitionTime"] == "2026-01-01T00:00:00Z"
