"""A pod's generation and observedGeneration as kube-apiserver 1.35+ keeps them (KEP-5067, GA:
pkg/registry/core/pod/strategy.go `updatePodGeneration` and `preserveOldObservedGeneration`,
storage.go `setPodNodeAndMetadata`, k8s.io/apiserver `rest.BeforeDelete`), through a plain client
and without a kubelet: the pods name a scheduler nobody runs and are bound to a node that does
not exist. These hold on a real cluster; where devcluster disagrees, it is wrong."""

from __future__ import annotations

from typing import Any

from e2e.conformance_support import Obj

GATE = "example.com/Gate"


def pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "finalizers": ["example.com/hold"]},
        "spec": {
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "schedulerName": "kubetrain-no-such-scheduler",  # stays unscheduled on real clusters
        },
    }


def observed(p: Obj) -> list[tuple[str, Any]]:
    return [(c["type"], c.get("observedGeneration")) for c in p["status"].get("conditions") or []]


async def test_generation_follows_the_spec_and_status_writes_keep_observed_generation(
    kube: Any, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    p = await kube.ok("POST", pods, pod("gen"))
    assert p["metadata"]["generation"] == 1
    try:
        p["metadata"]["labels"] = {"team": "a"}
        p = await kube.ok("PUT", f"{pods}/gen", p)
        assert p["metadata"]["generation"] == 1  # metadata is not the spec
        p["status"]["observedGeneration"] = 1
        p["status"]["conditions"] = [
            {"type": GATE, "status": "False", "observedGeneration": 1},
            {"type": GATE, "status": "False", "reason": "Second", "observedGeneration": 1},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "observedGeneration": 1},
        ]
        p = await kube.ok("PUT", f"{pods}/gen/status", p)
        assert p["metadata"]["generation"] == 1  # a status write never moves it
        p["spec"]["activeDeadlineSeconds"] = 3600
        p = await kube.ok("PUT", f"{pods}/gen", p)
        assert p["metadata"]["generation"] == 2
        assert p["status"]["observedGeneration"] == 1  # an update of the pod keeps its status
        # a writer that knows nothing of observedGeneration: the stored values stay, per type in order
        p["status"].pop("observedGeneration")
        p["status"]["conditions"] = [
            {"type": GATE, "status": "True"},
            {"type": GATE, "status": "True", "reason": "Second", "observedGeneration": 2},
            {"type": GATE, "status": "True", "reason": "Third"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "none"},
        ]
        p = await kube.ok("PUT", f"{pods}/gen/status", p)
        assert p["status"]["observedGeneration"] == 1
        assert observed(p) == [(GATE, 1), (GATE, 2), (GATE, None), ("PodScheduled", 1)]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "gen"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "kubetrain-no-such-node"},
        }
        await kube.ok("POST", f"{pods}/gen/binding", binding)
        p = await kube.ok("GET", f"{pods}/gen")
        assert p["metadata"]["generation"] == 2  # the binding writes around the pod strategy
        (scheduled,) = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert scheduled["status"] == "True"
        assert not {"observedGeneration", "reason", "message"} & scheduled.keys()
        p = await kube.ok("DELETE", f"{pods}/gen", query={"gracePeriodSeconds": "30"})
        assert p["metadata"]["generation"] == 3  # the first graceful deletion
        p = await kube.ok("DELETE", f"{pods}/gen", query={"gracePeriodSeconds": "10"})
        assert p["metadata"]["generation"] == 3  # a shorter grace period is not a new deletion
    finally:
        p = await kube.ok("GET", f"{pods}/gen")
        p["metadata"]["finalizers"] = []
        await kube.request("PUT", f"{pods}/gen", p)
        await kube.request("DELETE", f"{pods}/gen", query={"gracePeriodSeconds": "0"})  # no kubelet will
        await kube.eventually_gone(f"{pods}/gen")
