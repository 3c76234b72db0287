"""The Pod Security Standards (baseline and restricted) applied to a pod template, purely.

```python
errors = pod_security_errors(template, "restricted", "spec.tfReplicaSpecs[Worker].template")
# [FieldError("spec.tfReplicaSpecs[Worker].template.spec.hostNetwork", FORBIDDEN,
#             'must be unset or false under the "restricted" Pod Security level (host namespaces)'), ...]
level = enforce_level(namespace_labels)     # "privileged" | "baseline" | "restricted"
```

Pod Security admission checks pods, so a job whose template breaks its namespace's level is
stored and then sits with FailedCreatePod events; checking the template at admission refuses it
at `kubectl apply` with the field and the level instead. The controls are those of
https://kubernetes.io/docs/concepts/security/pod-security-standards/ ("latest" version):
baseline forbids host namespaces, privileged and HostProcess containers, capabilities beyond the
default set, hostPath volumes, host ports, AppArmor/seccomp `Unconfined`, custom SELinux
user/role/type, `procMount: Unmasked` and unsafe sysctls; restricted adds the volume-type list,
`allowPrivilegeEscalation: false`, `runAsNonRoot: true`, no `runAsUser: 0`, a RuntimeDefault or
Localhost seccomp profile, and `capabilities.drop: [ALL]` with at most NET_BIND_SERVICE added.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, forbidden
from kubetrain.frameworks.registry import get_framework

LEVELS = ("privileged", "baseline", "restricted")
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)  # fmt: skip
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)  # fmt: skip
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUME_TYPES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def enforce_level(namespace_labels: Mapping[str, str]) -> str:
    """The namespace's enforced level (an unknown or missing value counts as privileged, the
    Pod Security admission default)."""
    level = namespace_labels.get(ENFORCE_LABEL, "privileged")
    return level if level in LEVELS else "privileged"


def stricter(a: str, b: str) -> str:
    return a if LEVELS.index(a) >= LEVELS.index(b) else b


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _containers(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in CONTAINER_LISTS:
        items = spec.get(field)
        if isinstance(items, list):
            for i, c in enumerate(items):
                if isinstance(c, Mapping):
                    yield f"{path}.{field}[{i}]", c


def pod_security_errors(template: Any, level: str, path: str) -> list[FieldError]:
    """What Pod Security admission at `level` would refuse in a pod made from `template`."""
    if level not in ("baseline", "restricted") or not isinstance(template, Mapping):
        return []
    spec = _map(template.get("spec"))
    sp = f"{path}.spec"
    found: list[tuple[str, str, str]] = []  # (path, requirement, control)
    found += _baseline(template, spec, sp)
    if level == "restricted":
        found += _restricted(spec, sp)
    return [
        forbidden(p, f'{req} under the "{level}" Pod Security level ({control})') for p, req, control in found
    ]


def _baseline(template: Mapping[str, Any], spec: Mapping[str, Any], sp: str) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    psc = _map(spec.get("securityContext"))
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            out.append((f"{sp}.{field}", "must be unset or false", "host namespaces"))
    contexts = [(f"{sp}.securityContext", psc)] + [
        (f"{cp}.securityContext", _map(c.get("securityContext"))) for cp, c in _containers(spec, sp)
    ]
    for cpath, ctx in contexts:
        if _map(ctx.get("windowsOptions")).get("hostProcess") is True:
            out.append((f"{cpath}.windowsOptions.hostProcess", "must be unset or false", "HostProcess"))
        seccomp = _map(ctx.get("seccompProfile")).get("type")
        if seccomp == "Unconfined":
            out.append((f"{cpath}.seccompProfile.type", "must not be Unconfined", "seccomp"))
        apparmor = _map(ctx.get("appArmorProfile")).get("type")
        if apparmor == "Unconfined":
            out.append((f"{cpath}.appArmorProfile.type", "must not be Unconfined", "AppArmor"))
        selinux = _map(ctx.get("seLinuxOptions"))
        if selinux.get("type") not in (None, *SELINUX_TYPES):
            allowed = ", ".join(sorted(t for t in SELINUX_TYPES if t))
            out.append((f"{cpath}.seLinuxOptions.type", f"must be unset or one of {allowed}", "SELinux"))
        for field in ("user", "role"):
            if selinux.get(field) not in (None, ""):
                out.append((f"{cpath}.seLinuxOptions.{field}", "must be unset", "SELinux"))
    for cp, c in _containers(spec, sp):
        ctx = _map(c.get("securityContext"))
        if ctx.get("privileged") is True:
            out.append(
                (f"{cp}.securityContext.privileged", "must be unset or false", "privileged containers")
            )
        added = _map(ctx.get("capabilities")).get("add")
        for i, cap in enumerate(added if isinstance(added, list) else []):
            if cap not in BASELINE_CAPABILITIES:
                out.append(
                    (
                        f"{cp}.securityContext.capabilities.add[{i}]",
                        f"{QUOTE.encode(cap)} is not allowed",
                        "capabilities",
                    )
                )
        if ctx.get("procMount") not in (None, "Default"):
            out.append((f"{cp}.securityContext.procMount", "must be unset or Default", "/proc mount type"))
        ports = c.get("ports")
        for i, port in enumerate(ports if isinstance(ports, list) else []):
            if isinstance(port, Mapping) and port.get("hostPort") not in (None, 0):
                out.append((f"{cp}.ports[{i}].hostPort", "must be unset or 0", "host ports"))
    volumes = spec.get("volumes")
    for i, vol in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(vol, Mapping) and vol.get("hostPath") is not None:
            out.append((f"{sp}.volumes[{i}].hostPath", "must be unset", "hostPath volumes"))
    sysctls = psc.get("sysctls")
    for i, sysctl in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = _map(sysctl).get("name")
        if name not in SAFE_SYSCTLS:
            out.append(
                (
                    f"{sp}.securityContext.sysctls[{i}].name",
                    f"{QUOTE.encode(name)} is not a safe sysctl",
                    "sysctls",
                )
            )
    annotations = _map(_map(template.get("metadata")).get("annotations"))
    for key, value in annotations.items():
        apparmor_key = str(key).startswith("container.apparmor.security.beta.kubernetes.io/")
        if apparmor_key and value != "runtime/default" and not str(value).startswith("localhost/"):
            out.append(
                (
                    f"{sp[:-5]}.metadata.annotations[{key}]",
                    "must be runtime/default or localhost/*",
                    "AppArmor",
                )
            )
    return out


def _restricted(spec: Mapping[str, Any], sp: str) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    volumes = spec.get("volumes")
    for i, vol in enumerate(volumes if isinstance(volumes, list) else []):
        kinds = [k for k in _map(vol) if k != "name"]
        for kind in kinds:
            if kind not in RESTRICTED_VOLUME_TYPES and kind != "hostPath":  # hostPath: baseline says so
                out.append((f"{sp}.volumes[{i}].{kind}", "is not an allowed volume type", "volume types"))
    psc = _map(spec.get("securityContext"))
    pod_non_root = psc.get("runAsNonRoot")
    pod_seccomp = _map(psc.get("seccompProfile")).get("type")
    if psc.get("runAsUser") == 0:
        out.append((f"{sp}.securityContext.runAsUser", "must not be 0", "running as non-root user"))
    if pod_non_root is False:
        out.append((f"{sp}.securityContext.runAsNonRoot", "must be true", "running as non-root"))
    for cp, c in _containers(spec, sp):
        ctx = _map(c.get("securityContext"))
        cpath = f"{cp}.securityContext"
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append((f"{cpath}.allowPrivilegeEscalation", "must be false", "privilege escalation"))
        non_root = ctx.get("runAsNonRoot")
        if non_root is False or (non_root is None and pod_non_root is not True):
            out.append(
                (
                    f"{cpath}.runAsNonRoot",
                    "must be true (here or in the pod's securityContext)",
                    "running as non-root",
                )
            )
        if ctx.get("runAsUser") == 0:
            out.append((f"{cpath}.runAsUser", "must not be 0", "running as non-root user"))
        seccomp = _map(ctx.get("seccompProfile")).get("type")
        if seccomp is None and pod_seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(
                (
                    f"{cpath}.seccompProfile.type",
                    "must be RuntimeDefault or Localhost (here or in the pod's securityContext)",
                    "seccomp",
                )
            )
        caps = _map(ctx.get("capabilities"))
        drop = caps.get("drop")
        if not isinstance(drop, list) or "ALL" not in drop:
            out.append((f"{cpath}.capabilities.drop", 'must include "ALL"', "capabilities"))
        added = caps.get("add")
        for i, cap in enumerate(added if isinstance(added, list) else []):
            if cap != "NET_BIND_SERVICE" and cap in BASELINE_CAPABILITIES:
                out.append((f"{cpath}.capabilities.add[{i}]", "may only be NET_BIND_SERVICE", "capabilities"))
    return out


def job_pod_security_errors(job: Mapping[str, Any], level: str) -> list[FieldError]:
    """`pod_security_errors` of every replica template of a job."""
    framework = get_framework(str(job.get("kind")))
    spec = job.get("spec")
    if level not in ("baseline", "restricted") or framework is None or not isinstance(spec, Mapping):
        return []
    replica_map = spec.get(framework.replica_field)
    errors: list[FieldError] = []
    for rtype, rspec in replica_map.items() if isinstance(replica_map, Mapping) else ():
        if isinstance(rspec, Mapping):
            path = f"spec.{framework.replica_field}[{rtype}].template"
            errors.extend(pod_security_errors(rspec.get("template"), level, path))
    return errors
