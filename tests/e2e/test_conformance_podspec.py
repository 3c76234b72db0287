"""Pod spec and Service validation as kube-apiserver does it (k8s.io/kubernetes
pkg/apis/core/validation: ValidatePodSpec, validateContainers, validateContainerPorts, ValidateEnv,
ValidateVolumes, ValidateContainerResourceRequirements, ValidateService), checked through a plain
client. Each refused object carries one mistake, so the causes are exactly upstream's (reason,
field, message). These hold on a real kube-apiserver; where devcluster disagrees, it is wrong.
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e.conformance_support import Obj, assert_status

DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"
IP_REF = {"fieldPath": "status.podIP"}
INDEX_REF = {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}


def pod(name: str, **spec: Any) -> Obj:
    spec.setdefault("containers", [{"name": "c", "image": "busybox:1.36"}])
    spec["schedulerName"] = "kubetrain-no-such-scheduler"  # stays unscheduled on real clusters
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(name: str = "c", **fields: Any) -> Obj:
    return {"name": name, "image": "busybox:1.36", **fields}


def service(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    assert_status(body, 422, "Invalid")
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


REFUSED_PODS = [
    pytest.param(
        {"containers": [container("Trainer")]},
        [("FieldValueInvalid", "spec.containers[0].name", f'Invalid value: "Trainer": {DNS_LABEL}')],
        id="container-name-not-dns-label",
    ),
    pytest.param(
        {"containers": [container("main")], "initContainers": [container("main")]},
        [("FieldValueDuplicate", "spec.initContainers[0].name", 'Duplicate value: "main"')],
        id="init-container-reuses-container-name",
    ),
    pytest.param(
        {"containers": [container(ports=[{"name": "tensorboard-port", "containerPort": 6006}])]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].ports[0].name",
                'Invalid value: "tensorboard-port": must be no more than 15 characters',
            )
        ],
        id="port-name-over-15",
    ),
    pytest.param(
        {
            "containers": [
                container(ports=[{"name": "a", "containerPort": 1}, {"name": "a", "containerPort": 2}])
            ]
        },
        [("FieldValueDuplicate", "spec.containers[0].ports[1].name", 'Duplicate value: "a"')],
        id="port-name-twice-in-container",
    ),
    pytest.param(
        {"containers": [container(ports=[{"containerPort": 70000}])]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].ports[0].containerPort",
                f"Invalid value: 70000: {PORT_RANGE}",
            )
        ],
        id="container-port-range",
    ),
    pytest.param(
        {"containers": [container(ports=[{"containerPort": 80, "protocol": "HTTP"}])]},
        [
            (
                "FieldValueNotSupported",
                "spec.containers[0].ports[0].protocol",
                'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
        id="port-protocol",
    ),
    pytest.param(
        {"containers": [container(env=[{"name": "A=B", "value": "1"}])]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].env[0].name",
                'Invalid value: "A=B": a valid environment variable name must consist only of printable '
                "ASCII characters other than '='",
            )
        ],
        id="env-name-with-equals",
    ),
    pytest.param(
        {"containers": [container(env=[{"name": "A", "value": "1", "valueFrom": {"fieldRef": IP_REF}}])]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].env[0].valueFrom",
                'Invalid value: "": may not be specified when `value` is not empty',
            )
        ],
        id="env-value-and-value-from",
    ),
    pytest.param(
        {
            "containers": [
                container(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}])
            ]
        },
        [
            (
                "FieldValueNotSupported",
                "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
                'Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", '
                '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", '
                '"status.hostIPs", "status.podIP", "status.podIPs"',
            )
        ],
        id="env-field-ref-not-for-env",
    ),
    pytest.param(
        {"hostNetwork": True, "containers": [container(ports=[{"containerPort": 8080, "hostPort": 8081}])]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].ports[0].hostPort",
                "Invalid value: 8081: must match `containerPort` when `hostNetwork` is true",
            )
        ],
        id="host-network-port-mismatch",
    ),
    pytest.param(
        {"volumes": [{"name": "data"}]},
        [("FieldValueRequired", "spec.volumes[0]", "Required value: must specify a volume type")],
        id="volume-without-source",
    ),
    pytest.param(
        {"volumes": [{"name": "data", "emptyDir": {}, "configMap": {"name": "cfg"}}]},
        [
            (
                "FieldValueForbidden",
                "spec.volumes[0].configMap",
                "Forbidden: may not specify more than 1 volume type",
            )
        ],
        id="volume-with-two-sources",
    ),
    pytest.param(
        {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]},
        [("FieldValueDuplicate", "spec.volumes[1].name", 'Duplicate value: "data"')],
        id="volume-name-twice",
    ),
    pytest.param(
        {"volumes": [{"name": "Data", "emptyDir": {}}]},
        [("FieldValueInvalid", "spec.volumes[0].name", f'Invalid value: "Data": {DNS_LABEL}')],
        id="volume-name-not-dns-label",
    ),
    pytest.param(
        {"containers": [container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})]},
        [
            (
                "FieldValueInvalid",
                "spec.containers[0].resources.requests",
                'Invalid value: "2": must be less than or equal to cpu limit of 1',
            )
        ],
        id="request-over-limit",
    ),
    pytest.param(
        {"containers": [container(resources={"requests": {"example.com/gpu": "1"}})]},
        [
            (
                "FieldValueRequired",
                "spec.containers[0].resources.limits",
                "Required value: Limit must be set for non overcommitable resources",
            )
        ],
        id="extended-resource-without-limit",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), REFUSED_PODS)
async def test_pod_spec_mistakes_are_refused_with_upstream_causes(
    kube: Any, namespace: str, spec: Obj, expected: list[tuple[str, str, str]]
) -> None:
    refused = await kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod("bad", **spec))
    assert causes(refused.body) == expected


async def test_pod_spec_within_the_rules_is_accepted(kube: Any, namespace: str) -> None:
    """The same rules' edges, accepted: a 15-character port name, a port name reused in another
    container, any printable ASCII env name (relaxed validation), the downward API fields the
    operator passes (a fieldRef's apiVersion defaulted to v1), limits defaulting requests."""
    spec = {
        "containers": [
            container(
                "trainer",
                ports=[{"name": "pytorchjob-port", "containerPort": 23456}],
                env=[
                    {"name": "my.env-name with space", "value": "1"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": IP_REF}},
                    {"name": "INDEX", "valueFrom": {"fieldRef": INDEX_REF}},
                ],
                resources={"limits": {"cpu": "1", "example.com/gpu": "2"}},
                volumeMounts=[{"name": "cfg", "mountPath": "/etc/cfg"}],
            ),
            container("sidecar", ports=[{"name": "pytorchjob-port", "containerPort": 23457}]),
        ],
        "initContainers": [container("init")],
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
    }
    made = await kube.ok("POST", f"/api/v1/namespaces/{namespace}/pods", pod("good", **spec))
    resources = made["spec"]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "1", "example.com/gpu": "2"}
    assert made["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"
    env = made["spec"]["containers"][0]["env"]
    assert [e["valueFrom"]["fieldRef"] for e in env[1:]] == [
        {**IP_REF, "apiVersion": "v1"},
        {**INDEX_REF, "apiVersion": "v1"},
    ]


REFUSED_SERVICES = [
    pytest.param(
        {"ports": [{"name": "a", "port": 80}, {"port": 81}]},
        [("FieldValueRequired", "spec.ports[1].name", "Required value")],
        id="second-port-unnamed",
    ),
    pytest.param(
        {"ports": [{"name": "Web", "port": 80}]},
        [("FieldValueInvalid", "spec.ports[0].name", f'Invalid value: "Web": {DNS_LABEL}')],
        id="port-name-not-dns-label",
    ),
    pytest.param(
        {"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]},
        [("FieldValueDuplicate", "spec.ports[1].name", 'Duplicate value: "a"')],
        id="port-name-twice",
    ),
    pytest.param(
        {"ports": [{"port": 70000}]},
        [
            ("FieldValueInvalid", "spec.ports[0].port", f"Invalid value: 70000: {PORT_RANGE}"),
            ("FieldValueInvalid", "spec.ports[0].targetPort", f"Invalid value: 70000: {PORT_RANGE}"),
        ],
        id="port-range-and-defaulted-target",
    ),
    pytest.param(
        {"ports": [{"port": 80, "protocol": "HTTP"}]},
        [
            (
                "FieldValueNotSupported",
                "spec.ports[0].protocol",
                'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
        id="protocol",
    ),
    pytest.param(
        {"ports": [{"port": 80, "targetPort": "Http_Port"}]},
        [
            (
                "FieldValueInvalid",
                "spec.ports[0].targetPort",
                'Invalid value: "Http_Port": must contain only alpha-numeric characters (a-z, 0-9), '
                "and hyphens (-)",
            )
        ],
        id="target-port-name",
    ),
    pytest.param(
        {"ports": [{"port": 80}], "selector": {"app": "a b"}},
        [("FieldValueInvalid", "spec.selector", f'Invalid value: "a b": {LABEL_VALUE}')],
        id="selector-value",
    ),
    pytest.param(
        {"ports": []},
        [("FieldValueRequired", "spec.ports", "Required value")],
        id="no-ports",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), REFUSED_SERVICES)
async def test_service_mistakes_are_refused_with_upstream_causes(
    kube: Any, namespace: str, spec: Obj, expected: list[tuple[str, str, str]]
) -> None:
    refused = await kube.request("POST", f"/api/v1/namespaces/{namespace}/services", service("bad", **spec))
    assert causes(refused.body) == expected


async def test_headless_service_needs_no_ports_and_named_target_ports_pass(kube: Any, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    headless = await kube.ok("POST", path, service("workers", clusterIP="None", selector={"job": "j"}))
    assert headless["spec"]["clusterIP"] == "None"
    named = await kube.ok("POST", path, service("named", ports=[{"port": 80, "targetPort": "http"}]))
    assert named["spec"]["ports"][0]["targetPort"] == "http"
    defaulted = await kube.ok("POST", path, service("plain", ports=[{"port": 8080}]))
    assert defaulted["spec"]["ports"][0] == {"port": 8080, "targetPort": 8080, "protocol": "TCP"}
