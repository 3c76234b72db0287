"""The simulated gang schedulers' placement (devcluster/gang/filters.py): every member through
kube-scheduler's filters, each placed member counting for the next, all or nothing."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.gang.filters import Cluster, NoFit, pod_index
from kubetrain.devcluster.gang.resources import Resources, resources
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY

Obj = dict[str, Any]
NODES = [{"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}} for n in ("n0", "n1")]
APART = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"job": "j"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def member(i: int, **spec: Any) -> Obj:
    return {
        "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "labels": {"job": "j"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
    }


def free() -> dict[str, Resources]:
    return {n: resources(NODE_CAPACITY) for n in ("n0", "n1")}


def cluster(volcano: bool) -> Cluster:
    return Cluster(NODES, pod_index((), {}), {}, {}, volcano)


def test_anti_affine_members_take_one_node_each_and_a_third_places_nothing() -> None:
    c, room = cluster(volcano=True), free()
    pods = [member(i, affinity=APART) for i in range(3)]
    nofit = c.place(pods, room)
    assert isinstance(nofit, NoFit)
    assert nofit.pod is pods[2] and nofit.schedulable == 2
    assert nofit.message == "0/2 nodes are unavailable: 2 node(s) didn't match pod anti-affinity rules."
    # Nothing was placed: the room and the pods on the nodes are as before.
    assert room == free() and len(c.index) == 0
    placed = c.place(pods[:2], room)
    assert not isinstance(placed, NoFit)
    assert sorted(node for _, node in placed) == ["n0", "n1"]
    assert len(c.index) == 2  # placed members count for what the cycle places next


def test_coscheduling_reports_kube_schedulers_message_with_the_preemption_part() -> None:
    c = cluster(volcano=False)
    nofit = c.place([member(0, nodeSelector={"pool": "train"})], free())
    assert isinstance(nofit, NoFit) and nofit.schedulable == 0
    assert nofit.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_members_go_to_the_node_with_most_free_cpu_first() -> None:
    room = free()
    room["n0"]["cpu"] -= 10
    placed = cluster(volcano=True).place([member(0), member(1)], room)
    assert not isinstance(placed, NoFit)
    assert [node for _, node in placed] == ["n1", "n1"]  # n1 still has more CPU after the first
