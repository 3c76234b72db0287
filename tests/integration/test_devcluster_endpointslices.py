"""The EndpointSlices and Endpoints devcluster keeps for a training job's Services, as
kube-controller-manager does on a cluster: each per-pod Service lists its pod's IP once the pod
runs (what `kubectl get endpointslices -l kubernetes.io/service-name=<svc>` shows when a worker
cannot reach its master), and a deleted pod's endpoint is terminating, then gone."""

from __future__ import annotations

from typing import Any

import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import PODS, SERVICES, ResourceRef

from .controller_support import Harness, JobHistory, eventually, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
SLICES = ResourceRef("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
ENDPOINTS = ResourceRef("", "v1", "endpoints", "Endpoints", True)
MODE = "kubetrain.io/service-mode"


async def slices_of(h: Harness, ns: str, service: str) -> list[Obj]:
    page = await h.kube.list(SLICES, ns, label_selector=f"kubernetes.io/service-name={service}")
    return list(page["items"])


async def test_each_pod_service_lists_its_running_pod(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    ns = await h.namespace("eps")
    job = job_manifest("PyTorchJob", "ddp", {"Master": 1, "Worker": 2}, annotations={MODE: "per-pod"})
    await h.create_job(job, ns)
    names = ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"]
    await h.wait_pod_names(ns, "ddp", names)

    async def listed(name: str) -> Obj | None:
        pod = await h.running_pod(ns, name)
        if pod is None or not pod["status"].get("podIP"):
            return None
        slices = await slices_of(h, ns, name)
        if len(slices) != 1 or [e["addresses"] for e in slices[0]["endpoints"]] != [[pod["status"]["podIP"]]]:
            return None
        return {"pod": pod, "slice": slices[0]}

    found = {name: await eventually(lambda n=name: listed(n), what=f"{name}'s slice") for name in names}
    master = found["ddp-master-0"]
    sl, pod = master["slice"], master["pod"]
    assert sl["metadata"]["name"].startswith("ddp-master-0-") and len(sl["metadata"]["name"]) == 18
    assert (
        sl["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
        == "endpointslice-controller.k8s.io"
    )
    assert sl["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert sl["metadata"]["ownerReferences"][0]["name"] == "ddp-master-0"
    (endpoint,) = sl["endpoints"]
    assert endpoint["conditions"]["ready"] is True  # publishNotReadyAddresses
    assert endpoint["targetRef"] == {
        "kind": "Pod",
        "namespace": ns,
        "name": "ddp-master-0",
        "uid": pod["metadata"]["uid"],
    }
    assert endpoint["nodeName"] == pod["spec"]["nodeName"]
    assert [p["port"] for p in sl["ports"]] == [23456]

    endpoints = await h.get(ENDPOINTS, ns, "ddp-master-0")
    assert endpoints is not None
    assert [a["ip"] for a in endpoints["subsets"][0]["addresses"]] == [pod["status"]["podIP"]]

    if KUBECTL is not None:
        config = stack.cluster.kubeconfig_path
        code, out, err = await run_kubectl(
            config, "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=ddp-master-0"
        )
        assert code == 0, err
        header, row = out.splitlines()
        assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
        assert row.split()[:4] == [sl["metadata"]["name"], "IPv4", "23456", pod["status"]["podIP"]]

    # a deleted pod: its endpoint goes (terminating first when a sync sees the pod terminating:
    # the in-process test pins that) and the job's replacement takes its place
    worker = found["ddp-worker-1"]["pod"]
    slice_name = found["ddp-worker-1"]["slice"]["metadata"]["name"]
    history = await JobHistory(h.kube, "EndpointSlice", ns, slice_name, ref=SLICES).start()
    try:
        uid = worker["metadata"]["uid"]
        listed = len(history.versions)
        await h.kube.delete(PODS, ns, "ddp-worker-1")

        def of_old(version: Obj) -> list[Obj]:
            return [e for e in version.get("endpoints") or [] if e["targetRef"]["uid"] == uid]

        async def gone() -> bool:
            # with no pod left the slice is replaced by an empty one, as upstream's reconciler does
            later = history.versions[listed:]
            return history.deleted or any(not of_old(v) for v in later)

        await eventually(gone, what="the deleted pod's endpoint gone")

        async def replaced() -> list[Obj] | None:
            pod = await h.running_pod(ns, "ddp-worker-1", not_uid=uid)
            slices = await slices_of(h, ns, "ddp-worker-1")
            ips = [e["addresses"] for s in slices for e in s.get("endpoints") or []]
            return slices if pod and ips == [[pod["status"]["podIP"]]] else None

        await eventually(replaced, what="the replacement pod listed")
    finally:
        await history.stop()


async def test_a_service_without_selector_gets_no_slices(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("eps")

    await h.kube.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ext"},
            "spec": {"ports": [{"port": 80}]},
        },
        ns,
    )
    await h.kube.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "sel"},
            "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]},
        },
        ns,
    )

    async def placeholder() -> list[Obj] | None:
        slices = await slices_of(h, ns, "sel")
        return slices or None

    (empty,) = await eventually(placeholder, what="the selecting Service's empty slice")
    assert empty["endpoints"] in ([], None)
    assert await slices_of(h, ns, "ext") == []
    assert await h.get(ENDPOINTS, ns, "ext") is None
