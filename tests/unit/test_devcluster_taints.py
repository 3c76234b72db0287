"""The simulated scheduler's taint rules (devcluster/kubelet/taints.py), with the cases of
upstream's tables: core/v1 toleration_test.go `TestTolerationToleratesTaint`, the TaintToleration
plugin's `TestTaintTolerationFilter` and the NodeUnschedulable plugin's `TestNodeUnschedulable`."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.gang.resources import resources
from kubetrain.devcluster.kubelet import fit, taints
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY

Obj = dict[str, Any]


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> Obj:
    out = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize(
    ("toleration", "the_taint", "expected"),
    [
        (tol("foo", "Exists", effect="NoSchedule"), taint("foo"), True),
        (tol("foo", "Exists", effect="NoSchedule"), taint("foo", "bar"), True),
        (tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar"), True),
        (tol("foo", "", "bar", "NoSchedule"), taint("foo", "bar"), True),  # the empty operator is Equal
        (tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "baz"), False),
        (tol("foo", "Exists", effect="NoExecute"), taint("foo", "bar"), False),  # another effect
        (tol("foo", "Exists"), taint("foo", "bar", "NoExecute"), True),  # no effect: every effect
        (tol("", "Exists"), taint("anything", "x", "NoExecute"), True),  # no key and Exists: every taint
        (tol("", "Exists", effect="NoSchedule"), taint("anything", "x", "NoExecute"), False),
        (tol("other", "Exists"), taint("foo", "bar"), False),  # another key
        (tol("foo", "Sometimes", "bar"), taint("foo", "bar"), False),  # an unknown operator
    ],
)
def test_a_toleration_matches_a_taint_as_core_v1_tolerates_taint(
    toleration: Obj, the_taint: Obj, expected: bool
) -> None:
    assert taints.tolerates(toleration, the_taint) is expected


def pod(*tolerations: Obj) -> Obj:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}], "tolerations": list(tolerations)},
    }


def node(*node_taints: Obj, unschedulable: bool = False) -> Obj:
    spec: Obj = {"taints": list(node_taints)}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n"}, "spec": spec}


@pytest.mark.parametrize(
    ("the_pod", "the_node", "reason"),
    [
        (pod(), node(taint("dedicated", "user1")), "node(s) had untolerated taint {dedicated: user1}"),
        (pod(tol("dedicated", "Equal", "user1", "NoSchedule")), node(taint("dedicated", "user1")), None),
        (
            pod(tol("dedicated", "Equal", "user2", "NoSchedule")),
            node(taint("dedicated", "user1")),
            "node(s) had untolerated taint {dedicated: user1}",
        ),
        (pod(tol("foo", "Exists", effect="NoSchedule")), node(taint("foo", "bar")), None),
        (
            pod(tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", effect="NoSchedule")),
            node(taint("dedicated", "user2"), taint("foo", "bar")),
            None,
        ),
        (
            pod(tol("foo", "Equal", "bar", "PreferNoSchedule")),
            node(taint("foo", "bar")),
            "node(s) had untolerated taint {foo: bar}",
        ),
        (pod(tol("foo", "Equal", "bar")), node(taint("foo", "bar")), None),
        (
            pod(tol("dedicated", "Equal", "user2", "NoSchedule")),
            node(taint("dedicated", "user1", "PreferNoSchedule")),
            None,
        ),
        (pod(), node(taint("dedicated", "user1", "PreferNoSchedule")), None),
        (pod(), node(taint("gone", effect="NoExecute")), "node(s) had untolerated taint {gone: }"),
        # The first untolerated taint in the node's order is named.
        (
            pod(tol("a", "Exists")),
            node(taint("a", "1"), taint("b", "2"), taint("c", "3")),
            "node(s) had untolerated taint {b: 2}",
        ),
        # NodeUnschedulable: a cordoned node takes only a pod tolerating its taint.
        (pod(), node(unschedulable=True), "node(s) were unschedulable"),
        (
            pod(tol("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")),
            node(unschedulable=True),
            None,
        ),
        (pod(tol("", "Exists")), node(unschedulable=True), None),
        (
            pod(tol("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute")),
            node(unschedulable=True),
            "node(s) were unschedulable",
        ),
        # NodeUnschedulable runs before TaintToleration.
        (pod(), node(taint("foo", "bar"), unschedulable=True), "node(s) were unschedulable"),
    ],
)
def test_the_node_unschedulable_and_taint_toleration_filters(
    the_pod: Obj, the_node: Obj, reason: str | None
) -> None:
    assert taints.node_reason(the_pod, the_node) == reason


def test_a_tainted_node_fails_before_affinity_and_resources_and_preemption_cannot_help() -> None:
    gpu = {
        "metadata": {"name": "gpu", "labels": {}},
        "spec": {"taints": [taint("nvidia.com/gpu", "present")]},
    }
    cpu = [{"metadata": {"name": f"cpu{i}", "labels": {}}} for i in (0, 1)]
    nodes = [gpu, *cpu]
    free = {n["metadata"]["name"]: resources(NODE_CAPACITY) for n in cpu}
    free["gpu"] = resources(NODE_CAPACITY)
    for n in cpu:
        free[n["metadata"]["name"]]["nvidia.com/gpu"] = resources({"x": "0"})["x"]
    needs_gpu: Obj = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    }
    reasons = fit.filter_nodes(needs_gpu, nodes, free)
    assert reasons == {
        "gpu": ["node(s) had untolerated taint {nvidia.com/gpu: present}"],
        "cpu0": ["Insufficient nvidia.com/gpu"],
        "cpu1": ["Insufficient nvidia.com/gpu"],
    }
    assert fit.fit_error(needs_gpu, reasons, free, {}) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
        "2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )
    needs_gpu["spec"]["tolerations"] = [tol("nvidia.com/gpu", "Exists", effect="NoSchedule")]
    assert [n for n, why in fit.filter_nodes(needs_gpu, nodes, free).items() if not why] == ["gpu"]
