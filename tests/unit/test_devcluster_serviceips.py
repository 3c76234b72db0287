"""Service cluster IP and node port allocation (serviceranges.py, servicealloc.py), the update
rules in servicevalidation.py and the `kubernetes` Service kubernetesservice.py keeps, through the
emulated API server's write path, with the causes kube-apiserver gives."""

from __future__ import annotations

import copy
import ipaddress
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.admission.chain import AdmissionChain
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.kinds import kubernetesservice, meta
from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.kinds.serviceranges import IPRange, PortRange, pick
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.devcluster.apiserver.verbs.core import ApiServer
from kubetrain.devcluster.apiserver.verbs.printers.cluster import endpointslice_row

Obj = dict[str, Any]
SLICES = "endpointslices.discovery.k8s.io"


def test_ip_range_excludes_network_and_broadcast_and_names_each_problem() -> None:
    r = IPRange("10.96.0.0/12")
    assert (r.first_ip(), r.size) == ("10.96.0.1", 2**20 - 2)
    used = {int(ipaddress.ip_address("10.96.0.10"))}
    assert r.problem("10.96.0.11", used) is None
    assert r.problem("10.96.0.10", used) == "provided IP is already allocated"
    assert r.problem("10.0.0.10", used) == "the provided network does not match the current range"
    assert r.problem("10.96.0.0", used) == "provided IP 10.96.0.0 is not in the valid range"
    assert r.problem("10.111.255.255", used) == "provided IP 10.111.255.255 is not in the valid range"


def test_port_range_names_each_problem() -> None:
    r = PortRange()
    assert str(r) == "30000-32767"
    assert r.problem(32767, set()) is None
    assert r.problem(30007, {30007}) == "provided port is already allocated"
    assert r.problem(80, set()) == (
        "provided port is not in the valid range. The range of valid ports is 30000-32767"
    )


def test_picked_values_come_from_the_upper_part_until_it_is_full() -> None:
    rng = random.Random(7)
    # 100 values: the lower 16 (max(16, 100/32)) are kept for static requests
    picked = {pick(100, 16, lambda i: False, rng) for _ in range(200)}
    assert picked <= set(range(16, 100)) and len(picked) > 40
    assert pick(100, 16, lambda i: i >= 16, rng) in range(16)
    assert pick(100, 16, lambda i: True, rng) is None
    ips = IPRange("10.96.0.0/12")
    first_dynamic = int(ipaddress.ip_address("10.96.1.1"))  # offset 256 of a /12
    for _ in range(50):
        ip = ips.next(set(), rng)
        assert ip is not None and int(ipaddress.ip_address(ip)) >= first_dynamic
    ports = PortRange()
    for _ in range(50):
        port = ports.next(set(), rng)
        assert port is not None and 30086 <= port <= 32767  # offset min(max(16, 2768/32), 128) = 86
    assert PortRange(30000, 2).next({30000, 30001}, rng) is None


# ---- through the write path -------------------------------------------------------------------


@pytest.fixture
def api() -> ApiServer:
    store = Store()
    registry = Registry()
    server = ApiServer(store, registry, AdmissionChain(), seed=3)
    ns: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    rt = registry.by_key("namespaces")
    assert rt is not None
    meta.prepare_create(ns, rt, "", server.clock())
    store.create("namespaces", ns)
    return server


def svc(name: str, **spec: Any) -> Obj:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def target(api: ApiServer, name: str = "", dry_run: bool = False) -> Target:
    rt = api.registry.by_key("services")
    assert rt is not None
    return Target(rt, "v1", "default", name=name, dry_run=dry_run)


async def create(api: ApiServer, body: Obj, dry_run: bool = False) -> Obj:
    return (await api.create(target(api, dry_run=dry_run), body)).obj


async def refused(api: ApiServer, body: Obj, old: Obj | None = None) -> tuple[int, list[tuple[str, str]]]:
    with pytest.raises(ApiError) as info:
        if old is None:
            await api.create(target(api), body)
        else:
            await api.update(target(api, body["metadata"]["name"]), body)
    causes = (info.value.details or {}).get("causes") or []
    return info.value.code, [(c.get("field", ""), c["message"]) for c in causes]


async def test_requested_cluster_ip_must_be_in_range_and_free(api: ApiServer) -> None:
    first = await create(api, svc("dns", clusterIP="10.96.0.10"))
    assert (first["spec"]["clusterIP"], first["spec"]["clusterIPs"]) == ("10.96.0.10", ["10.96.0.10"])
    assert (first["spec"]["ipFamilies"], first["spec"]["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert await refused(api, svc("again", clusterIP="10.96.0.10")) == (
        422,
        [
            (
                "spec.clusterIPs",
                'Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: '
                "provided IP is already allocated",
            )
        ],
    )
    assert await refused(api, svc("outside", clusterIP="192.168.0.1")) == (
        422,
        [
            (
                "spec.clusterIPs",
                'Invalid value: ["192.168.0.1"]: failed to allocate IP 192.168.0.1: '
                "the provided network does not match the current range",
            )
        ],
    )
    assert await refused(api, svc("bad", clusterIP="10.96.0.300")) == (
        422,
        [
            (
                "spec.clusterIPs[0]",
                'Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
            )
        ],
    )
    assert await refused(api, svc("split", clusterIP="10.96.0.5", clusterIPs=["10.96.0.6"])) == (
        422,
        [("spec.clusterIPs", 'Invalid value: ["10.96.0.6"]: first value must match `clusterIP`')],
    )
    # the refused ones held nothing: the first free address is still free
    assert (await create(api, svc("next", clusterIP="10.96.0.11")))["spec"]["clusterIP"] == "10.96.0.11"


async def test_deleting_a_service_frees_its_ip_and_ports(api: ApiServer) -> None:
    await create(
        api, svc("a", type="NodePort", clusterIP="10.96.0.20", ports=[{"port": 80, "nodePort": 30020}])
    )
    api.store.remove("services", "default", "a")
    again = await create(
        api, svc("b", type="NodePort", clusterIP="10.96.0.20", ports=[{"port": 80, "nodePort": 30020}])
    )
    assert again["spec"]["ports"][0]["nodePort"] == 30020


async def test_an_api_server_over_a_stored_state_knows_what_is_taken(api: ApiServer) -> None:
    await create(
        api, svc("a", type="NodePort", clusterIP="10.96.0.50", ports=[{"port": 80, "nodePort": 30050}])
    )
    restarted = ApiServer(api.store, api.registry, AdmissionChain(), seed=4)
    assert await refused(restarted, svc("b", clusterIP="10.96.0.50")) == (
        422,
        [
            (
                "spec.clusterIPs",
                'Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: '
                "provided IP is already allocated",
            )
        ],
    )
    code, causes = await refused(
        restarted, svc("c", type="NodePort", ports=[{"port": 80, "nodePort": 30050}])
    )
    assert (code, causes[0][0]) == (422, "spec.ports[0].nodePort")


async def test_headless_and_external_name_services_get_no_ip(api: ApiServer) -> None:
    headless = await create(api, svc("workers", clusterIP="None", selector={"app": "w"}, ports=[]))
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilies"] == ["IPv4"]
    external = await create(api, svc("db", type="ExternalName", externalName="db.example.com", ports=[]))
    assert "clusterIP" not in external["spec"] and "ipFamilies" not in external["spec"]


async def test_allocated_values_differ_and_survive_an_update_that_leaves_them_out(api: ApiServer) -> None:
    made = [await create(api, svc(f"s{i}", type="NodePort")) for i in range(20)]
    assert len({m["spec"]["clusterIP"] for m in made}) == 20
    assert len({m["spec"]["ports"][0]["nodePort"] for m in made}) == 20
    body = svc("s0", type="NodePort", selector={"app": "new"})  # a fresh manifest: no IP, no port
    body["metadata"]["resourceVersion"] = made[0]["metadata"]["resourceVersion"]
    updated = (await api.update(target(api, "s0"), body)).obj
    assert updated["spec"]["clusterIP"] == made[0]["spec"]["clusterIP"]
    assert updated["spec"]["ports"][0]["nodePort"] == made[0]["spec"]["ports"][0]["nodePort"]


async def test_cluster_ip_may_not_change_once_set(api: ApiServer) -> None:
    made = await create(api, svc("web", clusterIP="10.96.0.30"))
    changed = copy.deepcopy(made)
    changed["spec"]["clusterIP"] = "10.96.0.31"
    assert await refused(api, changed, made) == (
        422,
        [("spec.clusterIPs[0]", 'Invalid value: ["10.96.0.31"]: may not change once set')],
    )


async def test_node_ports_are_allocated_checked_and_shared_by_one_port_number(api: ApiServer) -> None:
    both = await create(
        api,
        svc(
            "dns",
            type="NodePort",
            ports=[{"name": "tcp", "port": 53}, {"name": "udp", "port": 53, "protocol": "UDP"}],
        ),
    )
    tcp, udp = (p["nodePort"] for p in both["spec"]["ports"])
    assert tcp == udp and 30000 <= tcp <= 32767
    taken = svc("other", type="NodePort", ports=[{"port": 80, "nodePort": tcp}])
    assert await refused(api, taken) == (
        422,
        [("spec.ports[0].nodePort", f"Invalid value: {tcp}: provided port is already allocated")],
    )
    low = svc("low", type="NodePort", ports=[{"port": 80, "nodePort": 8080}])
    assert await refused(api, low) == (
        422,
        [
            (
                "spec.ports[0].nodePort",
                "Invalid value: 8080: provided port is not in the valid range. "
                "The range of valid ports is 30000-32767",
            )
        ],
    )
    on_cluster_ip = svc("plain", ports=[{"port": 80, "nodePort": 30500}])
    assert await refused(api, on_cluster_ip) == (
        422,
        [("spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")],
    )


async def test_load_balancers_may_opt_out_of_node_ports(api: ApiServer) -> None:
    lb = await create(api, svc("lb", type="LoadBalancer"))
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True and lb["spec"]["ports"][0]["nodePort"]
    assert lb["spec"]["externalTrafficPolicy"] == "Cluster"
    bare = await create(api, svc("bare", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert "nodePort" not in bare["spec"]["ports"][0]


async def test_changing_to_cluster_ip_releases_the_node_port(api: ApiServer) -> None:
    made = await create(api, svc("np", type="NodePort", ports=[{"port": 80, "nodePort": 30100}]))
    changed = copy.deepcopy(made)
    changed["spec"]["type"] = "ClusterIP"
    updated = (await api.update(target(api, "np"), changed)).obj
    assert "nodePort" not in updated["spec"]["ports"][0] and "externalTrafficPolicy" not in updated["spec"]
    assert updated["spec"]["clusterIP"] == made["spec"]["clusterIP"]
    reused = await create(api, svc("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30100}]))
    assert reused["spec"]["ports"][0]["nodePort"] == 30100


async def test_a_dry_run_holds_nothing(api: ApiServer) -> None:
    dry = await create(api, svc("dry", type="NodePort", clusterIP="10.96.0.40"), dry_run=True)
    assert dry["spec"]["clusterIP"] == "10.96.0.40"
    picked = await create(api, svc("dry2", type="NodePort"), dry_run=True)
    # upstream's dry-run allocators: the range's network address, ports counting up from 32769
    assert (picked["spec"]["clusterIP"], picked["spec"]["ports"][0]["nodePort"]) == ("10.96.0.0", 32769)
    real = await create(api, svc("real", type="NodePort", clusterIP="10.96.0.40"))
    assert real["spec"]["clusterIP"] == "10.96.0.40"


# ---- the kubernetes Service --------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> DevCluster:
    """A DevCluster not serving (its kubernetes Service passes are run by hand), on port 6443."""
    return DevCluster(tls=False, port=6443, workdir=str(tmp_path))


def test_kubernetes_service_is_created_restored_and_recreated(cluster: DevCluster) -> None:
    store = cluster.store
    cluster.ensure_kubernetes_service()
    service = store.get("services", "default", "kubernetes")
    assert service is not None
    assert service["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert service["spec"]["clusterIPs"] == ["10.96.0.1"]
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
    endpoints = store.get("endpoints", "default", "kubernetes")
    assert endpoints is not None and endpoints["subsets"] == [
        {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}
    ]
    eps = store.get(SLICES, "default", "kubernetes")
    assert eps is not None and eps["endpoints"] == [
        {"addresses": ["127.0.0.1"], "conditions": {"ready": True}}
    ]
    rv = store.rv
    cluster.ensure_kubernetes_service()  # nothing to do: nothing written
    assert store.rv == rv

    changed = copy.deepcopy(service)
    changed["spec"]["ports"][0]["port"] = 8443
    store.update("services", changed, service["metadata"]["resourceVersion"])
    store.remove(SLICES, "default", "kubernetes")
    cluster.ensure_kubernetes_service()
    restored = store.get("services", "default", "kubernetes")
    assert restored is not None and restored["spec"]["ports"][0]["port"] == 443
    assert store.get(SLICES, "default", "kubernetes") is not None
    store.remove("services", "default", "kubernetes")
    cluster.ensure_kubernetes_service()
    again = store.get("services", "default", "kubernetes")
    assert again is not None and again["spec"]["clusterIP"] == "10.96.0.1"


async def test_the_kubernetes_service_ip_is_taken_and_waited_for(cluster: DevCluster) -> None:
    cluster.ensure_kubernetes_service()
    code, causes = await refused(cluster.api, svc("squatter", clusterIP="10.96.0.1"))
    assert code == 422 and causes[0][1].endswith("provided IP is already allocated")
    cluster.store.remove("services", "default", "kubernetes")
    await create(cluster.api, svc("squatter", clusterIP="10.96.0.1"))
    cluster.ensure_kubernetes_service()  # the address is another's: not re-created
    assert cluster.store.get("services", "default", "kubernetes") is None
    cluster.store.remove("services", "default", "squatter")
    cluster.ensure_kubernetes_service()
    assert cluster.store.get("services", "default", "kubernetes") is not None


def test_endpointslice_row_lists_up_to_three() -> None:
    """`printEndpointSlice`: NAME, ADDRESSTYPE, PORTS, ENDPOINTS (three, then `+ N more...`)."""
    base = kubernetesservice.endpoint_slice("10.0.0.1", 6443)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    five = {**base, "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)]}
    assert endpointslice_row(five, now)[:4] == [
        "kubernetes",
        "IPv4",
        "6443",
        "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...",
    ]
    assert endpointslice_row({**base, "ports": [], "endpoints": []}, now)[2:4] == ["<unset>", "<unset>"]
