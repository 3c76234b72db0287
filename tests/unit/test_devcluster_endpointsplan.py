"""What devcluster's EndpointSlice and Endpoints controllers want for a Service: the endpoint
conditions, the headless hostname rule, named target ports, publishNotReadyAddresses, terminal
and terminating pods, and at most 100 endpoints per slice."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.controllers import endpointsplan as plan

Obj = dict[str, Any]


def svc(
    name: str = "ddp", *, publish: bool = False, ports: list[Obj] | None = None, headless: bool = True
) -> Obj:
    spec: Obj = {"selector": {"job": "ddp"}, "ports": ports if ports is not None else [{"port": 23456}]}
    if headless:
        spec["clusterIP"] = "None"
    if publish:
        spec["publishNotReadyAddresses"] = True
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": "svc-uid", "labels": {"app": "x"}},
        "spec": spec,
    }


def pod(
    name: str,
    ip: str = "10.0.0.1",
    *,
    ready: bool = True,
    phase: str = "Running",
    deleting: bool = False,
    subdomain: str | None = None,
    node: str = "n1",
    ports: list[Obj] | None = None,
) -> Obj:
    md: Obj = {"name": name, "namespace": "ns", "uid": f"{name}-uid", "labels": {"job": "ddp"}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: Obj = {"nodeName": node, "hostname": name, "containers": [{"name": "c", "ports": ports or []}]}
    if subdomain:
        spec["subdomain"] = subdomain
    status: Obj = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": md, "spec": spec, "status": status}


def endpoints_of(service: Obj, pods: list[Obj], nodes: dict[str, Obj] | None = None) -> list[Obj]:
    out = plan.plan_slices(service, [], pods, nodes or {})
    return [ep for sl in out.creates for ep in sl["endpoints"]]


def test_conditions_follow_readiness_deletion_and_publish_not_ready() -> None:
    pods = [pod("a"), pod("b", "10.0.0.2", ready=False), pod("c", "10.0.0.3", deleting=True)]
    got = {ep["targetRef"]["name"]: ep["conditions"] for ep in endpoints_of(svc(), pods)}
    assert got == {
        "a": {"ready": True, "serving": True, "terminating": False},
        "b": {"ready": False, "serving": False, "terminating": False},
        "c": {"ready": False, "serving": True, "terminating": True},  # kept, but not ready
    }
    published = {ep["targetRef"]["name"]: ep["conditions"] for ep in endpoints_of(svc(publish=True), pods)}
    assert [c["ready"] for c in published.values()] == [True, True, True]
    assert published["b"]["serving"] is False and published["c"]["terminating"] is True


def test_terminal_pods_and_pods_without_ip_are_no_endpoints() -> None:
    pods = [
        pod("a"),
        pod("b", ""),
        pod("c", "10.0.0.3", phase="Succeeded"),
        pod("d", "10.0.0.4", phase="Failed"),
    ]
    assert [ep["addresses"] for ep in endpoints_of(svc(), pods)] == [["10.0.0.1"]]


def test_hostname_only_when_the_pod_names_the_service_as_subdomain() -> None:
    eps = endpoints_of(
        svc("ddp"), [pod("a", subdomain="ddp"), pod("b", "10.0.0.2", subdomain="other"), pod("c", "10.0.0.3")]
    )
    assert [ep.get("hostname") for ep in eps] == ["a", None, None]


def test_endpoint_carries_node_zone_and_target() -> None:
    nodes = {"n1": {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}}}}
    (ep,) = endpoints_of(svc(), [pod("a")], nodes)
    assert ep == {
        "addresses": ["10.0.0.1"],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"},
        "nodeName": "n1",
        "zone": "z1",
    }
    (no_zone,) = endpoints_of(svc(), [pod("a", node="n2")], nodes)
    assert "zone" not in no_zone


def test_named_target_port_resolves_per_pod_and_groups_slices() -> None:
    service = svc(ports=[{"name": "dist", "port": 80, "targetPort": "dist", "protocol": "TCP"}])
    with_port = pod("a", ports=[{"name": "dist", "containerPort": 23456, "protocol": "TCP"}])
    other_port = pod("b", "10.0.0.2", ports=[{"name": "dist", "containerPort": 29500}])
    udp_only = pod("c", "10.0.0.3", ports=[{"name": "dist", "containerPort": 1, "protocol": "UDP"}])
    creates = plan.plan_slices(service, [], [with_port, other_port, udp_only], {}).creates
    by_ports = {
        tuple(p["port"] for p in sl["ports"]): [e["targetRef"]["name"] for e in sl["endpoints"]]
        for sl in creates
    }
    # a pod whose container lacks the named port (for the protocol) is listed without ports
    assert by_ports == {(23456,): ["a"], (29500,): ["b"], (): ["c"]}
    assert creates[0]["ports"] == [{"name": "dist", "port": 23456, "protocol": "TCP"}]


def test_slice_metadata_names_the_service_and_its_controller() -> None:
    (sl,) = plan.plan_slices(svc(), [], [pod("a")], {}).creates
    assert sl["metadata"]["generateName"] == "ddp-"
    assert sl["metadata"]["labels"] == {
        "app": "x",
        "service.kubernetes.io/headless": "",
        "kubernetes.io/service-name": "ddp",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert sl["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "ddp",
            "uid": "svc-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert sl["addressType"] == "IPv4"


def test_at_most_100_endpoints_per_slice_and_existing_slices_reused() -> None:
    pods = [pod(f"p{i:03}", f"10.0.{i // 200}.{i % 200 + 1}") for i in range(250)]
    creates = plan.plan_slices(svc(), [], pods, {}).creates
    assert [len(sl["endpoints"]) for sl in creates] == [100, 100, 50]
    existing = []
    for i, sl in enumerate(creates):
        sl["metadata"].update(name=f"ddp-{i}", namespace="ns", resourceVersion=str(i + 1))
        existing.append(sl)
    assert plan.plan_slices(svc(), existing, pods, {}) == plan.SlicePlan()  # nothing changed: no writes
    shrunk = plan.plan_slices(svc(), existing, pods[:120], {})
    assert shrunk.creates == []
    assert [sl["metadata"]["name"] for sl in shrunk.deletes] == ["ddp-2"]
    assert [(sl["metadata"]["name"], len(sl["endpoints"])) for sl in shrunk.updates] == [("ddp-1", 20)]


def test_a_service_without_endpoints_keeps_one_empty_slice() -> None:
    (sl,) = plan.plan_slices(svc(), [], [pod("a", "")], {}).creates
    assert sl["endpoints"] == [] and sl["ports"] == []


def test_no_selector_means_no_controller() -> None:
    service = svc()
    del service["spec"]["selector"]
    assert plan.selector_of(service) is None


def test_endpoints_split_ready_and_not_ready_addresses() -> None:
    pods = [pod("a", subdomain="ddp"), pod("b", "10.0.0.2", ready=False), pod("c", "10.0.0.3", deleting=True)]
    ep = plan.desired_endpoints(svc(), pods)
    assert ep["metadata"] == {
        "name": "ddp",
        "namespace": "ns",
        "labels": {"app": "x", "service.kubernetes.io/headless": ""},
    }
    assert ep["subsets"] == [
        {
            "addresses": [
                {
                    "ip": "10.0.0.1",
                    "hostname": "a",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"},
                }
            ],
            "notReadyAddresses": [
                {
                    "ip": "10.0.0.2",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "b", "uid": "b-uid"},
                }
            ],
            "ports": [{"name": "", "port": 23456, "protocol": "TCP"}],
        }
    ]
    # publishNotReadyAddresses: every pod with an IP is an address, the terminating one too
    published = plan.desired_endpoints(svc(publish=True), pods)
    assert [a["ip"] for a in published["subsets"][0]["addresses"]] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert "notReadyAddresses" not in published["subsets"][0]


def test_endpoints_of_a_service_with_no_ports() -> None:
    assert plan.desired_endpoints(svc(ports=[]), [pod("a")])["subsets"] == [
        {
            "addresses": [
                {
                    "ip": "10.0.0.1",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"},
                }
            ]
        }
    ]
    assert "subsets" not in plan.desired_endpoints(svc(ports=[], headless=False), [pod("a")])


def test_an_external_name_service_gets_no_slices() -> None:
    service = svc()
    service["spec"]["type"] = "ExternalName"
    assert plan.plan_slices(service, [], [pod("a")], {}) == plan.SlicePlan()


def test_kept_entries_follow_each_new_pod_version() -> None:
    memo: plan.Memo = {}
    a, b = pod("a"), pod("b", "10.0.0.2")
    a["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"] = "1", "2"
    first = plan.desired_groups(svc(), [a, b], {}, memo)
    b2 = {
        **b,
        "metadata": {**b["metadata"], "resourceVersion": "3"},
        "status": {"phase": "Running", "podIP": "10.0.0.9"},
    }
    second = plan.desired_groups(svc(), [a, b2], {}, memo)
    (eps1,), (eps2,) = first.values(), second.values()
    assert eps2[0] is eps1[0]  # pod a unchanged: its entry reused
    assert eps2[1]["addresses"] == ["10.0.0.9"] and eps2[1]["conditions"]["serving"] is False
    ep = plan.desired_endpoints(svc(), [a, b2], memo)
    assert [x["ip"] for x in ep["subsets"][0]["notReadyAddresses"]] == ["10.0.0.9"]
