"""A container's probes and lifecycle hooks as kube-apiserver validates and defaults them
(k8s.io/kubernetes pkg/apis/core/validation, validation.go; pkg/apis/core/v1 defaults.go), with
upstream's causes.

- v1 `SetDefaults_Probe`: an unset (or 0) timeoutSeconds becomes 1, periodSeconds 10,
  successThreshold 1, failureThreshold 3; `SetDefaults_HTTPGetAction`: an httpGet's path
  becomes "/" and its scheme HTTP (in probes and in lifecycle hooks).
- `validateProbe`: exactly one handler (`validateHandler`: exec, httpGet, tcpSocket, grpc, in
  this order; a second one is Forbidden "may not specify more than 1 handler type", none is
  Required "must specify a handler type"); initialDelaySeconds, timeoutSeconds, periodSeconds,
  successThreshold and failureThreshold not negative; a set terminationGracePeriodSeconds
  greater than 0. Liveness and startup probes: successThreshold must be 1. Readiness probes: no
  terminationGracePeriodSeconds.
- The handlers: exec needs a command; httpGet a path, a port (number 1-65535 or an
  IANA_SVC_NAME), scheme HTTP or HTTPS and header names of `[-A-Za-z0-9]+`; tcpSocket and grpc
  a port.
- `validateLifecycle`: postStart and preStop each one handler of exec, httpGet, tcpSocket,
  sleep; a sleep's seconds between 0 and the pod's terminationGracePeriodSeconds
  (PodLifecycleSleepActionAllowZero, GA: zero allowed).
- Init containers (`validateInitContainers`): probes and lifecycle only with restartPolicy
  Always (a sidecar), else Forbidden; any other restartPolicy is Unsupported; a regular
  container's restartPolicy is Forbidden.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    dicts,
    forbidden,
    invalid,
    mapping,
    not_supported,
    required,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import PORT_RANGE, port_name_problems

NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
MORE_THAN_ONE = "may not specify more than 1 handler type"
INIT_ONLY_SIDECAR = "may not be set for init containers without restartPolicy=Always"
HTTP_HEADER = (
    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
    "regex used for validation is '[-A-Za-z0-9]+')"
)
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
_PROBE_DEFAULTS = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)
_COUNTS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")
_HEADER_CHARS = frozenset("-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _int(value: Any) -> int:
    """A JSON integer as Go holds it: anything else (absent, null) is Go's zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _default_http_get(handler: Any) -> None:
    action = handler.get("httpGet") if isinstance(handler, dict) else None
    if isinstance(action, dict):
        action.setdefault("path", "/")
        action.setdefault("scheme", "HTTP")


def default_probes(container: dict[str, Any]) -> None:
    """v1 `SetDefaults_Probe` and `SetDefaults_HTTPGetAction` for one container."""
    for name in PROBES:
        probe = container.get(name)
        if not isinstance(probe, dict):
            continue
        for field, default in _PROBE_DEFAULTS:
            if not _int(probe.get(field)):
                probe[field] = default
        _default_http_get(probe)
    lifecycle = mapping(container.get("lifecycle"))
    for hook in ("postStart", "preStop"):
        _default_http_get(lifecycle.get(hook))


def port_causes(port: Any, path: str) -> list[Cause]:
    """`ValidatePortNumOrName`: an int-or-string port (absent is Go's int 0)."""
    if isinstance(port, str):
        return [invalid(path, port, m) for m in port_name_problems(port)]
    number = _int(port)
    return [] if 1 <= number <= 65535 else [invalid(path, number, PORT_RANGE)]


def _http_get_causes(action: dict[str, Any], path: str) -> list[Cause]:
    causes = [] if action.get("path") else [required(f"{path}.path")]
    causes += port_causes(action.get("port"), f"{path}.port")
    scheme = action.get("scheme") or ""
    if scheme not in ("HTTP", "HTTPS"):
        causes.append(not_supported(f"{path}.scheme", scheme, ("HTTP", "HTTPS")))
    for _, header in dicts(action.get("httpHeaders")):
        name = header.get("name") if isinstance(header.get("name"), str) else ""
        if not name or not set(name) <= _HEADER_CHARS:
            causes.append(invalid(f"{path}.httpHeaders", name, HTTP_HEADER))
    return causes


def _sleep_causes(action: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    seconds = _int(action.get("seconds"))
    if grace is not None and not 0 <= seconds <= grace:
        message = f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"
        return [invalid(path, seconds, message)]
    return []


def handler_causes(
    handler: dict[str, Any], path: str, kinds: tuple[str, ...], grace: int | None
) -> list[Cause]:
    """`validateHandler`: the first handler set is checked, each later one is Forbidden."""
    causes: list[Cause] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if action is None:
            continue
        at = f"{path}.{kind}"
        if count:
            causes.append(forbidden(at, MORE_THAN_ONE))
            continue
        count += 1
        action = mapping(action)
        if kind == "exec" and not action.get("command"):
            causes.append(required(f"{at}.command"))
        elif kind == "httpGet":
            causes += _http_get_causes(action, at)
        elif kind == "tcpSocket":
            causes += port_causes(action.get("port"), f"{at}.port")
        elif kind == "grpc":  # an int32 port
            causes += port_causes(_int(action.get("port")), f"{at}.port")
        elif kind == "sleep":
            causes += _sleep_causes(action, at, grace)
    if count == 0:
        causes.append(required(path, "must specify a handler type"))
    return causes


def probe_causes(name: str, probe: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    """`validateLivenessProbe` / `validateReadinessProbe` / `validateStartupProbe`."""
    causes = handler_causes(probe, path, PROBE_HANDLERS, grace)
    for field in _COUNTS:
        value = _int(probe.get(field))
        if value < 0:
            causes.append(invalid(f"{path}.{field}", value, NEGATIVE))
    grace_override = probe.get("terminationGracePeriodSeconds")
    if grace_override is not None and _int(grace_override) <= 0:
        causes.append(
            invalid(f"{path}.terminationGracePeriodSeconds", _int(grace_override), "must be greater than 0")
        )
    if name == "readinessProbe":
        if grace_override is not None:
            message = "must not be set for readinessProbes"
            causes.append(invalid(f"{path}.terminationGracePeriodSeconds", _int(grace_override), message))
    elif _int(probe.get("successThreshold")) != 1:
        causes.append(invalid(f"{path}.successThreshold", _int(probe.get("successThreshold")), "must be 1"))
    return causes


def lifecycle_causes(lifecycle: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    causes: list[Cause] = []
    for hook in ("postStart", "preStop"):
        handler = lifecycle.get(hook)
        if handler is not None:
            causes += handler_causes(mapping(handler), f"{path}.{hook}", HOOK_HANDLERS, grace)
    return causes


def _probes_and_hooks(c: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    causes: list[Cause] = []
    if c.get("lifecycle") is not None:
        causes += lifecycle_causes(mapping(c.get("lifecycle")), f"{path}.lifecycle", grace)
    for name in PROBES:
        if c.get(name) is not None:
            causes += probe_causes(name, mapping(c.get(name)), f"{path}.{name}", grace)
    return causes


def container_causes(c: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    """A regular container's lifecycle, probes and (Forbidden) restartPolicy."""
    causes = _probes_and_hooks(c, path, grace)
    if c.get("restartPolicy") is not None:
        causes.append(forbidden(f"{path}.restartPolicy", "may not be set for non-init containers"))
    return causes


def init_restart_policy_causes(c: dict[str, Any], path: str) -> list[Cause]:
    """`validateInitContainerRestartPolicy`: only Always (a sidecar)."""
    policy = c.get("restartPolicy")
    if policy is not None and policy != "Always":
        return [not_supported(f"{path}.restartPolicy", policy, ("Always",))]
    return []


def init_container_causes(c: dict[str, Any], path: str, grace: int | None) -> list[Cause]:
    """A sidecar's lifecycle and probes, or a plain init container's Forbidden ones."""
    if c.get("restartPolicy") == "Always":
        return _probes_and_hooks(c, path, grace)
    return [
        forbidden(f"{path}.{name}", INIT_ONLY_SIDECAR)
        for name in ("lifecycle", *PROBES)
        if c.get(name) is not None
    ]
