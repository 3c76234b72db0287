"""devcluster's EndpointSlice and Endpoints controllers fed by store events (in-process): a pod
relabelled moves to the Service that now selects it, a deleted Service's Endpoints go, and
nothing is created in a terminating namespace."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.apiserver.kinds import meta

Obj = dict[str, Any]
SLICES = "endpointslices.discovery.k8s.io"


def create(cluster: DevCluster, key: str, obj: Obj, namespace: str = "default") -> None:
    rt = cluster.registry.by_key(key)
    assert rt is not None
    meta.prepare_create(obj, rt, namespace if rt.namespaced else "", cluster.api.clock())
    cluster.store.create(key, obj)


def service(name: str, app: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": {"app": app}, "ports": [{"port": 80}]},
    }


def pod(name: str, app: str, ip: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app, "other": "x"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running", "podIP": ip},
    }


def ips(cluster: DevCluster, svc: str, namespace: str = "default") -> list[str]:
    out = []
    for sl in cluster.store.items(SLICES, namespace):
        if sl["metadata"]["labels"].get("kubernetes.io/service-name") == svc:
            out += [a for e in sl["endpoints"] for a in e["addresses"]]
    return sorted(out)


async def test_relabelled_pod_moves_and_deleted_service_endpoints_go(tmp_path: Path) -> None:
    cluster = DevCluster(tls=False, workdir=str(tmp_path))
    cluster.controllers.start()
    try:
        create(cluster, "services", service("a", "a"))
        create(cluster, "services", service("b", "b"))
        create(cluster, "pods", pod("p1", "a", "10.0.0.1"))
        create(cluster, "pods", pod("p2", "a", "10.0.0.2"))
        await cluster.controllers.settle()
        assert (ips(cluster, "a"), ips(cluster, "b")) == (["10.0.0.1", "10.0.0.2"], [])

        current = cluster.store.get("pods", "default", "p2")
        assert current is not None
        moved = copy.deepcopy(current)
        moved["metadata"]["labels"]["app"] = "b"
        cluster.store.update("pods", moved, current["metadata"]["resourceVersion"])
        await cluster.controllers.settle()
        assert (ips(cluster, "a"), ips(cluster, "b")) == (["10.0.0.1"], ["10.0.0.2"])
        endpoints = cluster.store.get("endpoints", "default", "b")
        assert endpoints is not None
        assert [a["ip"] for a in endpoints["subsets"][0]["notReadyAddresses"]] == ["10.0.0.2"]  # not Ready

        cluster.store.remove("services", "default", "b")
        await cluster.controllers.settle()
        assert cluster.store.get("endpoints", "default", "b") is None
        assert ips(cluster, "b") == []  # the garbage collector removed the owned slice
    finally:
        await cluster.controllers.stop()


async def test_nothing_is_created_in_a_terminating_namespace(tmp_path: Path) -> None:
    cluster = DevCluster(tls=False, workdir=str(tmp_path))
    cluster.controllers.start()
    try:
        create(cluster, "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
        ns = cluster.store.get("namespaces", "", "gone")
        assert ns is not None
        closing = copy.deepcopy(ns)
        closing["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        closing["spec"] = {"finalizers": ["kubernetes"]}
        cluster.store.update("namespaces", closing, ns["metadata"]["resourceVersion"])
        create(cluster, "services", service("a", "a"), "gone")
        await cluster.controllers.settle()
        assert cluster.store.count(SLICES, "gone") == 0
        assert cluster.store.count("endpoints", "gone") == 0
    finally:
        await cluster.controllers.stop()


async def test_a_deleted_pod_is_terminating_then_gone(tmp_path: Path) -> None:
    cluster = DevCluster(tls=False, workdir=str(tmp_path))
    cluster.controllers.start()
    try:
        create(cluster, "services", service("a", "a"))
        create(cluster, "pods", pod("p1", "a", "10.0.0.1"))
        await cluster.controllers.settle()
        current = cluster.store.get("pods", "default", "p1")
        assert current is not None
        closing = copy.deepcopy(current)
        closing["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        cluster.store.update("pods", closing, current["metadata"]["resourceVersion"])
        await cluster.controllers.settle()
        (sl,) = [s for s in cluster.store.items(SLICES, "default") if s["metadata"]["name"].startswith("a-")]
        assert [e["conditions"] for e in sl["endpoints"]] == [
            {"ready": False, "serving": False, "terminating": True}
        ]
        endpoints = cluster.store.get("endpoints", "default", "a")
        assert endpoints is not None and "subsets" not in endpoints  # Endpoints drop it at once
        cluster.store.remove("pods", "default", "p1")
        await cluster.controllers.settle()
        assert ips(cluster, "a") == []
    finally:
        await cluster.controllers.stop()
