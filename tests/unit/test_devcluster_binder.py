"""The simulated scheduler's bookkeeping (devcluster/kubelet/binder.py): what each node has left
as the watch delivers pod events, and when that frees room for a pod that fit nowhere."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

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
