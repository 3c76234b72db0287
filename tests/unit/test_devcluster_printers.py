"""`kubectl get` against devcluster prints kube-apiserver's columns and cells for every built-in
kind (k8s.io/kubernetes pkg/printers/internalversion/printers.go; several cases are those of its
printers_test.go)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.resources import BUILTINS, Registry
from kubetrain.devcluster.apiserver.verbs.printers import columns_and_rows
from kubetrain.devcluster.apiserver.verbs.printers.common import human_duration

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")  # AGE 5m
REGISTRY = Registry()


def table(resource: str, group: str, obj: Obj) -> tuple[list[str], list[str], list[Any]]:
    """(the default columns' names, the wide ones', the object's cells)."""
    rt = next(r for r in BUILTINS if r.resource == resource and r.group == group)
    obj = {**obj, "metadata": {"name": "x", "creationTimestamp": CREATED, **obj.get("metadata", {})}}
    cols, rows = columns_and_rows(rt, [obj], NOW)
    assert all(len(r) == len(cols) for r in rows)
    return (
        [c["name"] for c in cols if c["priority"] == 0],
        [c["name"] for c in cols if c["priority"] == 1],
        rows[0],
    )


def cells(resource: str, group: str, obj: Obj) -> list[Any]:
    return table(resource, group, obj)[2]


def node(conditions: list[Obj] | None = None, unschedulable: bool = False, labels: Obj | None = None) -> Obj:
    return {
        "metadata": {"labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions or []},
    }


READY = {"type": "Ready", "status": "True"}
NOT_READY = {"type": "Ready", "status": "False"}


def test_node_columns_and_a_full_row() -> None:
    columns, wide, row = table(
        "nodes",
        "",
        {
            "metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}},
            "status": {
                "conditions": [READY],
                "addresses": [
                    {"type": "Hostname", "address": "n1"},
                    {"type": "InternalIP", "address": "10.0.0.1"},
                    {"type": "ExternalIP", "address": "1.2.3.4"},
                ],
                "nodeInfo": {
                    "kubeletVersion": "v1.36.4",
                    "osImage": "Ubuntu 24.04",
                    "kernelVersion": "6.8.0",
                    "containerRuntimeVersion": "containerd://1.7.20",
                },
            },
        },
    )
    assert columns == ["Name", "Status", "Roles", "Age", "Version"]
    assert wide == ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]
    assert row == [
        "x",
        "Ready",
        "control-plane",
        "5m",
        "v1.36.4",
        "10.0.0.1",
        "1.2.3.4",
        "Ubuntu 24.04",
        "6.8.0",
        "containerd://1.7.20",
    ]


@pytest.mark.parametrize(
    ("obj", "status"),
    [  # printers_test.go TestPrintNodeStatus
        (node([READY]), "Ready"),
        (node([READY], unschedulable=True), "Ready,SchedulingDisabled"),
        (node([READY, READY]), "Ready"),
        (node([NOT_READY]), "NotReady"),
        (node([{"type": "Ready", "status": "Unknown"}]), "NotReady"),  # a node that stopped posting
        (node([NOT_READY], unschedulable=True), "NotReady,SchedulingDisabled"),
        (node([{"type": "InvalidValue", "status": "True"}]), "Unknown"),
        (node([]), "Unknown"),
        (node([], unschedulable=True), "Unknown,SchedulingDisabled"),
    ],
)
def test_node_status(obj: Obj, status: str) -> None:
    assert cells("nodes", "", obj)[1] == status


@pytest.mark.parametrize(
    ("labels", "roles"),
    [  # printers_test.go TestPrintNodeRole
        ({"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/master": ""}, "master,worker"),
        ({"node-role.kubernetes.io/nodeRole": "", "kubernetes.io/role": "node"}, "node,nodeRole"),
        ({"kubernetes.io/role": ""}, "<none>"),
        ({"node-role.kubernetes.io/": "", "nvidia.com/gpu.present": "true"}, "<none>"),
        ({}, "<none>"),
    ],
)
def test_node_roles(labels: Obj, roles: str) -> None:
    assert cells("nodes", "", node([READY], labels=labels))[2] == roles


def test_a_node_without_node_info_or_addresses() -> None:
    assert cells("nodes", "", node([READY]))[4:] == [
        "",
        "<none>",
        "<none>",
        "<unknown>",
        "<unknown>",
        "<unknown>",
    ]


def service(kind: str, ports: list[Obj] | None = None, **spec: Any) -> Obj:
    return {"spec": {"type": kind, "clusterIPs": ["10.96.0.10"], "ports": ports or [], **spec}}


def test_service_columns_and_a_full_row() -> None:
    columns, wide, row = table(
        "services",
        "",
        service(
            "NodePort",
            [{"port": 80, "protocol": "TCP"}, {"port": 443, "nodePort": 30443, "protocol": "TCP"}],
            selector={"app": "web", "tier": "front"},
        ),
    )
    assert columns == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    assert wide == ["Selector"]
    assert row == [
        "x",
        "NodePort",
        "10.96.0.10",
        "<none>",
        "80/TCP,443:30443/TCP",
        "5m",
        "app=web,tier=front",
    ]


@pytest.mark.parametrize(
    ("obj", "external", "ports"),
    [
        (service("ClusterIP"), "<none>", "<none>"),
        (service("ClusterIP", externalIPs=["1.1.1.1", "2.2.2.2"]), "1.1.1.1,2.2.2.2", "<none>"),
        (
            service("LoadBalancer", [{"port": 8080, "nodePort": 31000, "protocol": "UDP"}]),
            "<pending>",
            "8080:31000/UDP",
        ),
        (
            {
                **service("LoadBalancer"),
                "status": {"loadBalancer": {"ingress": [{"ip": "5.5.5.5"}, {"hostname": "lb.example.com"}]}},
            },
            "5.5.5.5,lb.example.com",
            "<none>",
        ),
        (
            {
                **service("LoadBalancer", externalIPs=["9.9.9.9"]),
                "status": {"loadBalancer": {"ingress": [{"ip": "5.5.5.5"}]}},
            },
            "5.5.5.5,9.9.9.9",
            "<none>",
        ),
        (service("ExternalName", externalName="db.example.com"), "db.example.com", "<none>"),
    ],
)
def test_service_external_ip_and_ports(obj: Obj, external: str, ports: str) -> None:
    row = cells("services", "", obj)
    assert (row[3], row[4]) == (external, ports)


def test_a_headless_service_shows_its_cluster_ip_and_no_selector() -> None:
    row = cells("services", "", {"spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}})
    assert row[2] == "None" and row[6] == "<none>"
    assert cells("services", "", {"spec": {"type": "ClusterIP"}})[2] == "<none>"


@pytest.mark.parametrize(
    ("subsets", "endpoints"),
    [  # printers_test.go TestPrintEndpoint
        ([], "<none>"),
        (
            [{"addresses": [{"ip": "127.0.0.1"}, {"ip": "10.9.8.7"}], "ports": [{"port": 8080}]}],
            "127.0.0.1:8080,10.9.8.7:8080",
        ),
        ([{"addresses": [{"ip": "10.0.0.1"}]}], "10.0.0.1"),  # a headless service's subset without ports
        ([{"addresses": [{"ip": "::1"}], "ports": [{"port": 80}]}], "[::1]:80"),
        (
            [
                {"addresses": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2"}], "ports": [{"port": 80}, {"port": 443}]},
                {"addresses": [{"ip": "3.3.3.3"}], "ports": [{"port": 80}]},
            ],
            "1.1.1.1:80,2.2.2.2:80,1.1.1.1:443 + 2 more...",
        ),
    ],
)
def test_endpoints(subsets: list[Obj], endpoints: str) -> None:
    columns, _, row = table("endpoints", "", {"subsets": subsets})
    assert columns == ["Name", "Endpoints", "Age"]
    assert row == ["x", endpoints, "5m"]


def test_namespaces_secrets_configmaps_and_service_accounts() -> None:
    assert table("namespaces", "", {"status": {"phase": "Terminating"}}) == (
        ["Name", "Status", "Age"],
        [],
        ["x", "Terminating", "5m"],
    )
    assert table("secrets", "", {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}) == (
        ["Name", "Type", "Data", "Age"],
        [],
        ["x", "kubernetes.io/tls", 2, "5m"],
    )
    assert cells("secrets", "", {"type": "Opaque"}) == ["x", "Opaque", 0, "5m"]
    assert table("configmaps", "", {"data": {"a": "1"}, "binaryData": {"b": "AA=="}}) == (
        ["Name", "Data", "Age"],
        [],
        ["x", 2, "5m"],
    )
    assert table("serviceaccounts", "", {"secrets": [{"name": "token"}]}) == (
        ["Name", "Secrets", "Age"],
        [],
        ["x", 1, "5m"],
    )
    assert cells("serviceaccounts", "", {}) == ["x", 0, "5m"]


def test_a_pending_claim_shows_no_capacity() -> None:
    columns, wide, row = table(
        "persistentvolumeclaims",
        "",
        {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
                "storageClassName": "standard",
                "volumeMode": "Filesystem",
            },
            "status": {"phase": "Pending"},
        },
    )
    assert columns == [
        "Name",
        "Status",
        "Volume",
        "Capacity",
        "Access Modes",
        "StorageClass",
        "VolumeAttributesClass",
        "Age",
    ]
    assert wide == ["VolumeMode"]
    assert row == ["x", "Pending", "", "", "", "standard", "<unset>", "5m", "Filesystem"]


def test_a_bound_claim_shows_its_volumes_capacity_and_modes() -> None:
    row = cells(
        "persistentvolumeclaims",
        "",
        {
            "metadata": {
                "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"},
                "deletionTimestamp": CREATED,
            },
            "spec": {
                "volumeName": "pv-1",
                "storageClassName": "standard",
                "volumeAttributesClassName": "gold",
            },
            "status": {
                "phase": "Bound",
                "accessModes": ["ReadWriteOncePod", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                "capacity": {"storage": "1.5Gi"},
            },
        },
    )
    assert row == ["x", "Terminating", "pv-1", "1536Mi", "RWO,RWX,RWOP", "beta", "gold", "5m", "<unset>"]


def test_events_k8s_io_events_print_as_core_events() -> None:
    columns, wide, row = table(
        "events",
        "events.k8s.io",
        {
            "metadata": {"name": "ev"},
            "eventTime": (NOW - timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "type": "Warning",
            "reason": "FailedScheduling",
            "regarding": {"kind": "Pod", "name": "p", "fieldPath": "spec"},
            "note": "0/3 nodes are available ",
            "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-n1",
            "deprecatedCount": 3,
        },
    )
    assert columns == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert wide == ["Subobject", "Source", "First Seen", "Count", "Name"]
    assert row == [
        "40s",
        "Warning",
        "FailedScheduling",
        "pod/p",
        "spec",
        "default-scheduler, default-scheduler-n1",
        "0/3 nodes are available",
        "40s",
        3,
        "ev",
    ]


def test_a_core_event_without_a_source_shows_its_reporting_component() -> None:
    """kube-scheduler's events.k8s.io/v1 Event read as core/v1: no `source`, so kubectl's SOURCE
    is `reportingComponent, reportingInstance` (`formatEventSource`), the count its series'."""
    _, _, row = table(
        "events",
        "",
        {
            "metadata": {"name": "ev"},
            "eventTime": (NOW - timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "series": {
                "count": 4,
                "lastObservedTime": (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
            "type": "Warning",
            "reason": "FailedScheduling",
            "involvedObject": {"kind": "Pod", "name": "p"},
            "message": "0/3 nodes are available",
            "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-n1",
        },
    )
    assert row[0] == "10s" and row[5] == "default-scheduler, default-scheduler-n1" and row[8] == 4


def test_leases_priority_classes_and_webhook_configurations() -> None:
    assert table("leases", "coordination.k8s.io", {"spec": {"holderIdentity": "op-1_abc"}}) == (
        ["Name", "Holder", "Age"],
        [],
        ["x", "op-1_abc", "5m"],
    )
    assert cells("leases", "coordination.k8s.io", {"spec": {}}) == ["x", "", "5m"]
    assert table(
        "priorityclasses",
        "scheduling.k8s.io",
        {"value": 1000, "globalDefault": True, "preemptionPolicy": "Never"},
    ) == (
        ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        [],
        ["x", 1000, True, "5m", "Never"],
    )
    assert cells("priorityclasses", "scheduling.k8s.io", {"value": 5}) == ["x", 5, False, "5m", ""]
    for resource in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        assert table(resource, "admissionregistration.k8s.io", {"webhooks": [{}, {}]}) == (
            ["Name", "Webhooks", "Age"],
            [],
            ["x", 2, "5m"],
        )


def test_role_bindings() -> None:
    columns, wide, row = table(
        "rolebindings",
        "rbac.authorization.k8s.io",
        {
            "roleRef": {"kind": "ClusterRole", "name": "edit"},
            "subjects": [
                {"kind": "User", "name": "ann"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "namespace": "ml", "name": "kubetrain"},
                {"kind": "User", "name": "bob"},
            ],
        },
    )
    assert columns == ["Name", "Role", "Age"]
    assert wide == ["Users", "Groups", "ServiceAccounts"]
    assert row == ["x", "ClusterRole/edit", "5m", "ann, bob", "devs", "ml/kubetrain"]
    assert cells(
        "clusterrolebindings",
        "rbac.authorization.k8s.io",
        {"roleRef": {"kind": "ClusterRole", "name": "view"}},
    ) == [
        "x",
        "ClusterRole/view",
        "5m",
        "",
        "",
        "",
    ]


@pytest.mark.parametrize(
    ("resource", "group"),
    [
        ("roles", "rbac.authorization.k8s.io"),
        ("clusterroles", "rbac.authorization.k8s.io"),
        ("customresourcedefinitions", "apiextensions.k8s.io"),
    ],
)
def test_kinds_without_a_printer_get_name_and_created_at(resource: str, group: str) -> None:
    assert table(resource, group, {}) == (["Name", "Created At"], [], ["x", CREATED])


def hpa(metrics: list[Obj], current: list[Obj] | None = None, **spec: Any) -> Obj:
    return {
        "spec": {
            "scaleTargetRef": {"kind": "PyTorchJob", "name": "mnist"},
            "maxReplicas": 8,
            "metrics": metrics,
            **spec,
        },
        "status": {"currentReplicas": 2, "currentMetrics": current or []},
    }


CPU_80 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


@pytest.mark.parametrize(
    ("obj", "targets", "min_pods"),
    [
        (hpa([], minReplicas=1), "<none>", "1"),
        (hpa([CPU_80], minReplicas=2), "cpu: <unknown>/80%", "2"),
        (
            hpa(
                [CPU_80],
                [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 41}}}],
            ),
            "cpu: 41%/80%",
            "<unset>",
        ),
        (
            hpa(
                [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "memory",
                            "target": {"type": "AverageValue", "averageValue": "1.5Gi"},
                        },
                    }
                ],
                [{"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "1Gi"}}}],
            ),
            "memory: 1Gi/1536Mi",
            "<unset>",
        ),
        (
            hpa(
                [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "qps"},
                            "target": {"type": "AverageValue", "averageValue": "10"},
                        },
                    },
                    {
                        "type": "External",
                        "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}},
                    },
                    CPU_80,
                ]
            ),
            "<unknown>/10, <unknown>/30 + 1 more...",
            "<unset>",
        ),
    ],
)
def test_horizontal_pod_autoscalers(obj: Obj, targets: str, min_pods: str) -> None:
    columns, _, row = table("horizontalpodautoscalers", "autoscaling", obj)
    assert columns == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    assert row == ["x", "PyTorchJob/mnist", targets, min_pods, 8, 2, "5m"]


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [  # printers_test.go TestPrintIngress and formatHosts
        ({}, {}, ["<none>", "*", "", "80"]),
        (
            {
                "ingressClassName": "nginx",
                "rules": [{"host": "a.example.com"}, {}],
                "tls": [{"hosts": ["a.example.com"]}],
            },
            {"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"ip": "1.2.3.4"}]}},
            ["nginx", "a.example.com", "1.2.3.4,2.3.4.5", "80, 443"],
        ),
        (
            {"rules": [{"host": f"h{i}"} for i in range(5)]},
            {},
            ["<none>", "h0,h1,h2 + 2 more...", "", "80"],
        ),
    ],
)
def test_ingresses(spec: Obj, status: Obj, expected: list[str]) -> None:
    columns, _, row = table("ingresses", "networking.k8s.io", {"spec": spec, "status": status})
    assert columns == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert row == ["x", *expected, "5m"]


def test_every_listable_built_in_kind_has_its_printer() -> None:
    """Only the kinds kube-apiserver prints with its default table convertor fall back to NAME
    CREATED AT; every other kind devcluster serves (and lists) has kube-apiserver's columns."""
    default = {"roles", "clusterroles", "customresourcedefinitions"}
    for rt in REGISTRY.all():
        if "list" not in rt.verbs:
            continue
        cols, _ = columns_and_rows(rt, [], NOW)
        names = [c["name"] for c in cols]
        assert (names == ["Name", "Created At"]) == (rt.resource in default), rt.key


@pytest.mark.parametrize(
    ("seconds", "text"),
    [  # apimachinery duration_test.go TestHumanDuration
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (121, "2m1s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600 + 60, "3h1m"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400 + 86400, "8y"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_resourcequota_row_is_printresourcequotas() -> None:
    """`kubectl get quota`: NAME AGE REQUEST LIMIT, `<resource>: <used>/<hard>` by resource name,
    `limits.*` under LIMIT, quantities canonical, a resource not used yet `0`."""
    hard = {"pods": "10", "requests.memory": "1024Mi", "limits.cpu": "2000m", "requests.cpu": "1"}
    quota = {
        "metadata": {"name": "q"},
        "status": {"hard": hard, "used": {"pods": "3", "requests.cpu": "500m"}},
    }
    assert cells("resourcequotas", "", quota)[0] == "q"
    assert cells("resourcequotas", "", quota)[2:] == [
        "pods: 3/10, requests.cpu: 500m/1, requests.memory: 0/1Gi",
        "limits.cpu: 0/2",
    ]
    assert cells("resourcequotas", "", {"metadata": {"name": "new"}})[2:] == ["", ""]
