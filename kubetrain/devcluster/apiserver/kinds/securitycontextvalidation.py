"""Pod and container security contexts as kube-apiserver validates them (k8s.io/kubernetes
pkg/apis/core/validation `validatePodSpecSecurityContext`, `ValidateSecurityContext`), with
upstream's causes.

- Pod: fsGroup, runAsUser, runAsGroup and each supplementalGroups entry between 0 and
  2147483647 (`IsValidUserID` / `IsValidGroupID`); shareProcessNamespace not beside hostPID;
  sysctls (`validateSysctls`: name required, at most 253 characters of the sysctl pattern,
  unique; a net.* sysctl not with hostNetwork, an IPC one — kernel.shm*, kernel.msg*,
  kernel.sem, fs.mqueue.* — not with hostIPC); fsGroupChangePolicy Always or OnRootMismatch;
  seccompProfile; appArmorProfile; supplementalGroupsPolicy Merge or Strict.
- Container: runAsUser, runAsGroup as above; procMount Default or Unmasked (Unmasked only with
  hostUsers false); seccompProfile; allowPrivilegeEscalation false is refused beside privileged
  true or an added CAP_SYS_ADMIN (the security context itself the bad value, as Go's JSON of
  the internal struct); appArmorProfile.
- seccompProfile (`validateSeccompProfileField`): type Localhost, RuntimeDefault or Unconfined
  (required); localhostProfile required with Localhost — a relative path without '..' — and
  refused with the others. appArmorProfile (`ValidateAppArmorProfileField`): the same types;
  with Localhost a localhostProfile that is set, not blank and not padded with whitespace.

**Limit:** devcluster is a cluster started with `--allow-privileged=true` (as kubeadm and kind
start theirs): privileged containers are allowed. Capability names, seLinuxOptions,
seLinuxChangePolicy and windowsOptions are not validated.
"""

from __future__ import annotations

import re
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    Go,
    dicts,
    duplicate,
    go_json,
    invalid,
    mapping,
    not_supported,
    required,
)
from kubetrain.devcluster.apiserver.kinds.mountvalidation import local_descending_path_causes

ID_RANGE = "must be between 0 and 2147483647, inclusive"
PROFILE_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
SYSCTL_PATTERN = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
SYSCTL_NAME = f"must have at most 253 characters and match regex {SYSCTL_PATTERN}"
_SYSCTL = re.compile(SYSCTL_PATTERN)
_IPC_PREFIXES = ("kernel.shm", "kernel.msg", "fs.mqueue.")
# core.SecurityContext's fields in declaration order, as Go's json.Marshal writes the internal
# struct (no json tags: Go's field names)
_GO_FIELDS = (
    ("capabilities", "Capabilities"),
    ("privileged", "Privileged"),
    ("seLinuxOptions", "SELinuxOptions"),
    ("windowsOptions", "WindowsOptions"),
    ("runAsUser", "RunAsUser"),
    ("runAsGroup", "RunAsGroup"),
    ("runAsNonRoot", "RunAsNonRoot"),
    ("readOnlyRootFilesystem", "ReadOnlyRootFilesystem"),
    ("allowPrivilegeEscalation", "AllowPrivilegeEscalation"),
    ("procMount", "ProcMount"),
    ("seccompProfile", "SeccompProfile"),
    ("appArmorProfile", "AppArmorProfile"),
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def id_causes(value: Any, path: str) -> list[Cause]:
    number = _int(value)
    return [invalid(path, number, ID_RANGE)] if number is not None and not 0 <= number <= 2147483647 else []


_NESTED = {
    "capabilities": (("add", "Add"), ("drop", "Drop")),
    "seLinuxOptions": (("user", "User"), ("role", "Role"), ("type", "Type"), ("level", "Level")),
    "windowsOptions": (
        ("gmsaCredentialSpecName", "GMSACredentialSpecName"),
        ("gmsaCredentialSpec", "GMSACredentialSpec"),
        ("runAsUserName", "RunAsUserName"),
        ("hostProcess", "HostProcess"),
    ),
    "seccompProfile": (("type", "Type"), ("localhostProfile", "LocalhostProfile")),
    "appArmorProfile": (("type", "Type"), ("localhostProfile", "LocalhostProfile")),
}
_STRING_FIELDS = frozenset(("user", "role", "type", "level"))  # Go strings: unset is ""


def _go_object(pairs: list[tuple[str, str]]) -> str:
    """A Go struct's JSON: its fields in declaration order (json.Marshal does not sort them)."""
    return "{" + ",".join(f"{go_json(name)}:{text}" for name, text in pairs) + "}"


def _go_struct(kind: str, value: Any) -> str:
    """A v1 JSON object as Go's json.Marshal writes the internal struct: every field, by its Go
    name, unset pointers and slices null, unset strings empty."""
    if not isinstance(value, dict):
        return "null"
    return _go_object(
        [(go, go_json(value.get(v1, "" if v1 in _STRING_FIELDS else None))) for v1, go in _NESTED[kind]]
    )


def _go_security_context(sc: dict[str, Any]) -> Go:
    return Go(
        _go_object(
            [
                (go, _go_struct(v1, sc.get(v1)) if v1 in _NESTED else go_json(sc.get(v1)))
                for v1, go in _GO_FIELDS
            ]
        )
    )


def seccomp_causes(profile: Any, path: str) -> list[Cause]:
    """`validateSeccompProfileField`."""
    if not isinstance(profile, dict):
        return []
    kind = _text(profile.get("type"))
    causes: list[Cause] = []
    if not kind:
        causes.append(required(f"{path}.type", "type is required when seccompProfile is set"))
    elif kind not in PROFILE_TYPES:
        causes.append(not_supported(f"{path}.type", kind, PROFILE_TYPES))
    local = profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            causes.append(required(f"{path}.localhostProfile", "must be set when seccomp type is Localhost"))
        else:
            causes += local_descending_path_causes(_text(local), f"{path}.localhostProfile")
    elif local is not None:
        message = "can only be set when seccomp type is Localhost"
        causes.append(invalid(f"{path}.localhostProfile", Go(_go_struct("seccompProfile", profile)), message))
    return causes


def apparmor_causes(profile: Any, path: str) -> list[Cause]:
    """`ValidateAppArmorProfileField`."""
    if not isinstance(profile, dict):
        return []
    kind, local = _text(profile.get("type")), profile.get("localhostProfile")
    at = f"{path}.localhostProfile"
    if kind == "Localhost":
        needed = "must be set when AppArmor type is Localhost"
        if local is None:
            return [required(at, needed)]
        text = _text(local)
        if text.strip() != text:
            return [invalid(at, text, "must not be padded with whitespace")]
        return [required(at, needed)] if not text else []
    if kind in ("RuntimeDefault", "Unconfined"):
        return (
            [invalid(at, local, "can only be set when AppArmor type is Localhost")]
            if local is not None
            else []
        )
    if not kind:
        return [required(f"{path}.type", "type is required when appArmorProfile is set")]
    return [not_supported(f"{path}.type", kind, PROFILE_TYPES)]


def _sysctl_causes(context: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, sysctl in dicts(context.get("sysctls")):
        at, name = f"{path}[{i}].name", _text(sysctl.get("name"))
        if not name:
            causes.append(required(at))
        elif len(name) > 253 or not _SYSCTL.fullmatch(name):
            causes.append(invalid(at, name, SYSCTL_NAME))
        elif name in names:
            causes.append(duplicate(at, name))
        dotted = name.replace("/", ".")
        if context.get("hostNetwork") is True and dotted.startswith("net."):
            causes.append(invalid(at, name, "may not be specified when 'hostNetwork' is true"))
        elif context.get("hostIPC") is True and (dotted.startswith(_IPC_PREFIXES) or dotted == "kernel.sem"):
            causes.append(invalid(at, name, "may not be specified when 'hostIPC' is true"))
        names.add(name)
    return causes


def pod_causes(spec: dict[str, Any]) -> list[Cause]:
    """`validatePodSpecSecurityContext`. shareProcessNamespace, hostNetwork, hostPID and hostIPC
    are v1 spec fields that the internal pod keeps in its security context: their causes are at
    `spec.securityContext.*`, as upstream reports them."""
    sc = spec.get("securityContext")
    if not isinstance(sc, dict):
        return []
    path = "spec.securityContext"
    causes = id_causes(sc.get("fsGroup"), f"{path}.fsGroup")
    causes += id_causes(sc.get("runAsUser"), f"{path}.runAsUser")
    causes += id_causes(sc.get("runAsGroup"), f"{path}.runAsGroup")
    groups = sc.get("supplementalGroups")
    for g, gid in enumerate(groups if isinstance(groups, list) else []):
        causes += id_causes(gid, f"{path}.supplementalGroups[{g}]")
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        message = "ShareProcessNamespace and HostPID cannot both be enabled"
        causes.append(invalid(f"{path}.shareProcessNamespace", True, message))
    context = {**sc, **{k: spec.get(k) for k in ("hostNetwork", "hostIPC")}}
    causes += _sysctl_causes(context, f"{path}.sysctls")
    policy = sc.get("fsGroupChangePolicy")
    if policy is not None and policy not in ("Always", "OnRootMismatch"):
        causes.append(not_supported(f"{path}.fsGroupChangePolicy", policy, ("Always", "OnRootMismatch")))
    causes += seccomp_causes(sc.get("seccompProfile"), f"{path}.seccompProfile")
    causes += apparmor_causes(sc.get("appArmorProfile"), f"{path}.appArmorProfile")
    groups_policy = sc.get("supplementalGroupsPolicy")
    if groups_policy is not None and groups_policy not in ("Merge", "Strict"):
        causes.append(not_supported(f"{path}.supplementalGroupsPolicy", groups_policy, ("Merge", "Strict")))
    return causes


def host_users(spec: dict[str, Any]) -> bool:
    """`spec.hostUsers`, true unless set false."""
    return spec.get("hostUsers") is not False


def container_causes(sc: Any, path: str, *, users: bool) -> list[Cause]:
    """`ValidateSecurityContext`."""
    if not isinstance(sc, dict):
        return []
    causes = id_causes(sc.get("runAsUser"), f"{path}.runAsUser")
    causes += id_causes(sc.get("runAsGroup"), f"{path}.runAsGroup")
    proc = sc.get("procMount")
    if proc is not None:
        if proc not in ("Default", "Unmasked"):
            causes.append(not_supported(f"{path}.procMount", proc, ("Default", "Unmasked")))
        if users and proc == "Unmasked":
            causes.append(invalid(f"{path}.procMount", proc, "`hostUsers` must be false to use `Unmasked`"))
    causes += seccomp_causes(sc.get("seccompProfile"), f"{path}.seccompProfile")
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged") is True:
            message = "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            causes.append(invalid(path, _go_security_context(sc), message))
        added = mapping(sc.get("capabilities")).get("add")
        for cap in added if isinstance(added, list) else []:
            if cap == "CAP_SYS_ADMIN":
                message = (
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"
                )
                causes.append(invalid(path, _go_security_context(sc), message))
    return causes + apparmor_causes(sc.get("appArmorProfile"), f"{path}.appArmorProfile")
