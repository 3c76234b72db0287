"""The simulated scheduler's bookkeeping (devcluster/kubelet/binder.py): what each node has left
as the watch delivers pod events, and when that frees room for a pod that fit nowhere."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any, cast

from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.binder import FitBinder

Obj = dict[str, Any]

NODES = [
    {"metadata": {"name": n}, "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "pods": "3"}}}
    for n in ("n0", "n1")
]


def pod(uid: str, node: str | None, gpus: int, phase: str = "Running") -> Obj:
    container = {"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    spec: Obj = {"containers": [container], **({"nodeName": node} if node else {})}
    meta = {"uid": uid, "name": uid, "namespace": "ns"}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def gpus(binder: FitBinder) -> dict[str, Fraction]:
    return {node: free["nvidia.com/gpu"] for node, free in binder.free(NODES).items()}


def test_bound_pods_count_until_they_end_or_go_and_only_that_frees_room() -> None:
    binder = FitBinder(["n0", "n1"], {})
    assert not binder.observe(("ns", "a"), pod("a", None, 4), deleted=False)  # unbound: counts nowhere
    assert gpus(binder) == {"n0": 8, "n1": 8}
    assert not binder.observe(("ns", "a"), pod("a", "n0", 4), deleted=False)
    assert not binder.observe(("ns", "b"), pod("b", "n0", 3), deleted=False)
    assert not binder.observe(("ns", "b"), pod("b", "n0", 3), deleted=False)  # a status update: counted once
    assert gpus(binder) == {"n0": 1, "n1": 8}
    assert binder.free(NODES)["n0"]["pods"] == 1
    assert binder.observe(("ns", "a"), pod("a", "n0", 4, phase="Succeeded"), deleted=False)
    assert gpus(binder) == {"n0": 5, "n1": 8}
    assert binder.observe(("ns", "b"), pod("b", "n0", 3), deleted=True)
    assert gpus(binder) == {"n0": 8, "n1": 8}
    assert binder.remembered() == 0  # nothing kept for pods that are gone or ended


class RecordingApi:
    """Answers every request 201 and remembers it (method, path)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **_: Any) -> tuple[int, Obj]:
        self.requests.append((method, path))
        return 201, {}


def with_spec(node: Obj, **spec: Any) -> Obj:
    return {**node, "spec": {**(node.get("spec") or {}), **spec}}


def test_a_node_change_the_filters_see_is_reported_and_a_heartbeat_is_not() -> None:
    binder = FitBinder(["n0", "n1"], {})
    assert binder.relist_nodes(NODES) and binder.nodes_synced.is_set()
    assert not binder.relist_nodes(NODES)  # the same nodes again
    assert not binder.observe_node("MODIFIED", {"metadata": {"name": "elsewhere"}})  # not ours
    beat: Obj = copy.deepcopy(NODES[0])
    beat["status"]["conditions"] = [{"type": "Ready", "status": "True"}]  # a heartbeat's status write
    assert not binder.observe_node("MODIFIED", beat)
    tainted = with_spec(beat, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    assert binder.observe_node("MODIFIED", tainted)
    assert binder.observe_node("MODIFIED", with_spec(tainted, unschedulable=True))
    relabelled = {**tainted, "metadata": {"name": "n0", "labels": {"zone": "a"}}}
    assert binder.observe_node("MODIFIED", relabelled)
    assert binder.observe_node("DELETED", relabelled)
    assert not binder.observe_node("DELETED", relabelled)
    assert binder.observe_node("ADDED", NODES[0])


async def test_binding_reads_the_watched_nodes_and_retries_see_their_changes() -> None:
    binder = FitBinder(["n0", "n1"], {})
    binder.relist_nodes([with_spec(n, unschedulable=True) for n in NODES])
    api = RecordingApi()
    message = await binder.bind(cast(RawApi, api), pod("a", None, 1))
    assert message == (
        "0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )
    assert binder.retry_keys() == [("ns", "a")]
    assert binder.observe_node("MODIFIED", NODES[1])  # uncordoned
    for _ in range(3):
        assert await binder.bind(cast(RawApi, api), pod("a", None, 1)) is None
    # No read of the nodes per attempt: only the bindings were sent.
    assert api.requests == [("POST", "/api/v1/namespaces/ns/pods/a/binding")] * 3
    assert binder.retry_keys() == []
