"""The Eviction API's DisruptionTarget condition (devcluster/apiserver/verbs/eviction.py) as
kube-apiserver 1.36 writes it: `UpdatePodCondition` with no observedGeneration of its own, through
the pods/status strategy, so a DisruptionTarget condition that had one (the taint manager's, say)
keeps it (`preserveOldObservedGeneration`) along with its transition time."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.client import RawApi

PODS = "/api/v1/namespaces/default/pods"


async def test_an_eviction_keeps_the_disruption_conditions_generation(raw: RawApi) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "evicted-keeps-generation", "finalizers": ["example.com/hold"]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox:1"}]},
    }
    code, body = await raw.request("POST", PODS, body=pod)
    assert code == 201, body
    path = f"{PODS}/{pod['metadata']['name']}"
    earlier = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    body["status"] = {"phase": "Running", "conditions": [earlier]}
    code, body = await raw.request("PUT", f"{path}/status", body=body)
    assert code == 200, body
    try:
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod["metadata"]["name"]},
        }
        code, body = await raw.request("POST", f"{path}/eviction", body=eviction)
        assert code == 201, body
        code, evicted = await raw.request("GET", path)
        assert code == 200 and evicted["metadata"].get("deletionTimestamp"), evicted
        (condition,) = evicted["status"]["conditions"]
        assert condition["reason"] == "EvictionByEvictionAPI"
        assert condition["message"] == "Eviction API: evicting"
        assert condition["observedGeneration"] == 1
        assert condition["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # the status stayed True
    finally:
        code, current = await raw.request("GET", path)
        if code == 200:
            current["metadata"]["finalizers"] = []
            await raw.request("PUT", path, body=current)
