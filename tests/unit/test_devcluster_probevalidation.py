"""devcluster defaults and refuses a container's probes and lifecycle hooks as kube-apiserver
does (kinds/probevalidation.py; upstream pkg/apis/core/validation `validateProbe`,
`validateHandler`, `validateLifecycle`, `validateInitContainers`; v1 `SetDefaults_Probe`)."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtins

C0 = "spec.containers[0]"
PORT_RANGE = "must be between 1 and 65535, inclusive"


def created(**container: Any) -> dict[str, Any]:
    """The pod a create stores: defaulted as kube-apiserver defaults it."""
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}
    builtins.default_pod(pod)
    return pod


def causes(
    *, init: bool = False, spec: dict[str, Any] | None = None, **container: Any
) -> list[tuple[str, str, str]]:
    pod = created(**container)
    if init:
        pod["spec"]["initContainers"] = pod["spec"].pop("containers")
        pod["spec"]["containers"] = [{"name": "main", "image": "busybox"}]
        builtins.default_pod(pod)
    pod["spec"].update(spec or {})
    return [(x.reason, x.field, x.message) for x in builtins.validate_pod(pod, None)]


HTTP = {"httpGet": {"port": 8080}}


def test_probes_get_upstreams_defaults() -> None:
    pod = created(livenessProbe=copy.deepcopy(HTTP), lifecycle={"preStop": copy.deepcopy(HTTP)})
    probe = pod["spec"]["containers"][0]["livenessProbe"]
    assert probe == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert pod["spec"]["containers"][0]["lifecycle"]["preStop"]["httpGet"]["path"] == "/"
    assert causes(livenessProbe=HTTP, readinessProbe=HTTP, startupProbe=HTTP) == []


def test_a_probe_names_exactly_one_handler() -> None:
    assert causes(readinessProbe={"exec": {"command": ["true"]}}) == []
    assert causes(readinessProbe={"periodSeconds": 5}) == [
        ("FieldValueRequired", f"{C0}.readinessProbe", "Required value: must specify a handler type")
    ]
    assert causes(readinessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}) == [
        (
            "FieldValueForbidden",
            f"{C0}.readinessProbe.tcpSocket",
            "Forbidden: may not specify more than 1 handler type",
        )
    ]


def test_probe_counts_are_not_negative() -> None:
    assert causes(livenessProbe={**HTTP, "initialDelaySeconds": 0, "periodSeconds": 1}) == []
    assert causes(livenessProbe={**HTTP, "periodSeconds": -1, "failureThreshold": -2}) == [
        (
            "FieldValueInvalid",
            f"{C0}.livenessProbe.periodSeconds",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "FieldValueInvalid",
            f"{C0}.livenessProbe.failureThreshold",
            "Invalid value: -2: must be greater than or equal to 0",
        ),
    ]


def test_liveness_and_startup_success_threshold_must_be_1() -> None:
    assert causes(readinessProbe={**HTTP, "successThreshold": 3}) == []
    bad = {**HTTP, "successThreshold": 2}
    assert causes(livenessProbe=bad, startupProbe=bad) == [
        ("FieldValueInvalid", f"{C0}.livenessProbe.successThreshold", "Invalid value: 2: must be 1"),
        ("FieldValueInvalid", f"{C0}.startupProbe.successThreshold", "Invalid value: 2: must be 1"),
    ]


def test_probe_termination_grace_period() -> None:
    assert causes(livenessProbe={**HTTP, "terminationGracePeriodSeconds": 10}) == []
    assert causes(livenessProbe={**HTTP, "terminationGracePeriodSeconds": 0}) == [
        (
            "FieldValueInvalid",
            f"{C0}.livenessProbe.terminationGracePeriodSeconds",
            "Invalid value: 0: must be greater than 0",
        )
    ]
    assert causes(readinessProbe={**HTTP, "terminationGracePeriodSeconds": 10}) == [
        (
            "FieldValueInvalid",
            f"{C0}.readinessProbe.terminationGracePeriodSeconds",
            "Invalid value: 10: must not be set for readinessProbes",
        )
    ]


def test_handler_fields() -> None:
    assert (
        causes(
            livenessProbe={"tcpSocket": {"port": "http"}},
            readinessProbe={"grpc": {"port": 9090}},
            startupProbe={
                "httpGet": {"port": 80, "scheme": "HTTPS", "httpHeaders": [{"name": "X-Token", "value": "v"}]}
            },
        )
        == []
    )
    assert causes(
        livenessProbe={"exec": {"command": []}},
        readinessProbe={"httpGet": {"port": 0, "scheme": "FTP", "httpHeaders": [{"name": "bad header"}]}},
        startupProbe={"tcpSocket": {"port": "Http_1"}},
    ) == [
        ("FieldValueRequired", f"{C0}.livenessProbe.exec.command", "Required value"),
        ("FieldValueInvalid", f"{C0}.readinessProbe.httpGet.port", f"Invalid value: 0: {PORT_RANGE}"),
        (
            "FieldValueNotSupported",
            f"{C0}.readinessProbe.httpGet.scheme",
            'Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
        ),
        (
            "FieldValueInvalid",
            f"{C0}.readinessProbe.httpGet.httpHeaders",
            'Invalid value: "bad header": a valid HTTP header must consist of alphanumeric characters or '
            "'-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
        ),
        (
            "FieldValueInvalid",
            f"{C0}.startupProbe.tcpSocket.port",
            'Invalid value: "Http_1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
        ),
    ]
    assert causes(readinessProbe={"grpc": {"port": 70000}}) == [
        ("FieldValueInvalid", f"{C0}.readinessProbe.grpc.port", f"Invalid value: 70000: {PORT_RANGE}")
    ]


def test_lifecycle_hooks_and_sleep_within_the_grace_period() -> None:
    assert (
        causes(lifecycle={"postStart": {"exec": {"command": ["sh"]}}, "preStop": {"sleep": {"seconds": 0}}})
        == []
    )
    assert causes(lifecycle={"postStart": {}, "preStop": {"sleep": {"seconds": 45}}}) == [
        ("FieldValueRequired", f"{C0}.lifecycle.postStart", "Required value: must specify a handler type"),
        (
            "FieldValueInvalid",
            f"{C0}.lifecycle.preStop.sleep",
            "Invalid value: 45: must be non-negative and less than terminationGracePeriodSeconds (30)",
        ),
    ]
    assert (
        causes(lifecycle={"preStop": {"sleep": {"seconds": 45}}}, spec={"terminationGracePeriodSeconds": 60})
        == []
    )
    assert causes(readinessProbe={"sleep": {"seconds": 1}}) == [
        ("FieldValueRequired", f"{C0}.readinessProbe", "Required value: must specify a handler type")
    ]


def test_init_containers_take_probes_only_as_sidecars() -> None:
    assert causes(init=True, restartPolicy="Always", readinessProbe=HTTP, lifecycle={"preStop": HTTP}) == []
    init = "spec.initContainers[0]"
    forbidden = "Forbidden: may not be set for init containers without restartPolicy=Always"
    assert causes(init=True, readinessProbe=HTTP, lifecycle={"preStop": HTTP}) == [
        ("FieldValueForbidden", f"{init}.lifecycle", forbidden),
        ("FieldValueForbidden", f"{init}.readinessProbe", forbidden),
    ]
    assert causes(init=True, restartPolicy="OnFailure") == [
        (
            "FieldValueNotSupported",
            f"{init}.restartPolicy",
            'Unsupported value: "OnFailure": supported values: "Always"',
        )
    ]
    assert causes(restartPolicy="Always") == [
        ("FieldValueForbidden", f"{C0}.restartPolicy", "Forbidden: may not be set for non-init containers")
    ]
