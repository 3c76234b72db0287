"""devcluster refuses pod and container security contexts as kube-apiserver does
(kinds/securitycontextvalidation.py; upstream pkg/apis/core/validation
`validatePodSpecSecurityContext`, `ValidateSecurityContext`, `validateSeccompProfileField`,
`ValidateAppArmorProfileField`, `validateSysctls`)."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtins

POD = "spec.securityContext"
C0 = "spec.containers[0].securityContext"
ID_RANGE = "must be between 0 and 2147483647, inclusive"


def causes(
    pod_context: dict[str, Any] | None = None, container: dict[str, Any] | None = None, **spec: Any
) -> list[tuple[str, str, str]]:
    c: dict[str, Any] = {"name": "c", "image": "busybox"}
    if container is not None:
        c["securityContext"] = container
    pod: dict[str, Any] = {"spec": {"containers": [c], **spec}}
    builtins.default_pod(pod)
    if pod_context is not None:
        pod["spec"]["securityContext"] = pod_context
    return [(x.reason, x.field, x.message) for x in builtins.validate_pod(pod, None)]


def test_user_and_group_ids() -> None:
    assert (
        causes(
            {"runAsUser": 0, "runAsGroup": 1000, "fsGroup": 2000, "supplementalGroups": [5]}, {"runAsUser": 1}
        )
        == []
    )
    assert causes(
        {"runAsUser": -1, "fsGroup": 2147483648, "supplementalGroups": [1, -5]}, {"runAsGroup": -1}
    ) == [
        ("FieldValueInvalid", f"{C0}.runAsGroup", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", f"{POD}.fsGroup", f"Invalid value: 2147483648: {ID_RANGE}"),
        ("FieldValueInvalid", f"{POD}.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", f"{POD}.supplementalGroups[1]", f"Invalid value: -5: {ID_RANGE}"),
    ]


def test_share_process_namespace_not_with_host_pid() -> None:
    assert causes(shareProcessNamespace=True) == []
    assert causes(shareProcessNamespace=True, hostPID=True) == [
        (
            "FieldValueInvalid",
            f"{POD}.shareProcessNamespace",
            "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
        )
    ]


def test_sysctls() -> None:
    assert (
        causes(
            {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}, {"name": "kernel/shm_rmid_forced"}]}
        )
        == []
    )
    pattern = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
    assert causes({"sysctls": [{"name": ""}, {"name": "Net.Core"}, {"name": "a.b"}, {"name": "a.b"}]}) == [
        ("FieldValueRequired", f"{POD}.sysctls[0].name", "Required value"),
        (
            "FieldValueInvalid",
            f"{POD}.sysctls[1].name",
            f'Invalid value: "Net.Core": must have at most 253 characters and match regex {pattern}',
        ),
        ("FieldValueDuplicate", f"{POD}.sysctls[3].name", 'Duplicate value: "a.b"'),
    ]
    assert causes(
        {"sysctls": [{"name": "net.ipv4.ip_forward"}, {"name": "kernel.shmmax"}]},
        hostNetwork=True,
        hostIPC=True,
    ) == [
        (
            "FieldValueInvalid",
            f"{POD}.sysctls[0].name",
            "Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true",
        ),
        (
            "FieldValueInvalid",
            f"{POD}.sysctls[1].name",
            "Invalid value: \"kernel.shmmax\": may not be specified when 'hostIPC' is true",
        ),
    ]


def test_fs_group_change_and_supplemental_groups_policies() -> None:
    assert causes({"fsGroupChangePolicy": "OnRootMismatch", "supplementalGroupsPolicy": "Strict"}) == []
    assert causes({"fsGroupChangePolicy": "Never", "supplementalGroupsPolicy": "All"}) == [
        (
            "FieldValueNotSupported",
            f"{POD}.fsGroupChangePolicy",
            'Unsupported value: "Never": supported values: "Always", "OnRootMismatch"',
        ),
        (
            "FieldValueNotSupported",
            f"{POD}.supplementalGroupsPolicy",
            'Unsupported value: "All": supported values: "Merge", "Strict"',
        ),
    ]


def test_seccomp_profiles() -> None:
    assert (
        causes(
            {"seccompProfile": {"type": "RuntimeDefault"}},
            {"seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"}},
        )
        == []
    )
    assert causes(
        {"seccompProfile": {"type": "Localhost"}},
        {"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x.json"}},
    ) == [
        (
            "FieldValueInvalid",
            f"{C0}.seccompProfile.localhostProfile",
            'Invalid value: {"Type":"RuntimeDefault","LocalhostProfile":"x.json"}: '
            "can only be set when seccomp type is Localhost",
        ),
        (
            "FieldValueRequired",
            f"{POD}.seccompProfile.localhostProfile",
            "Required value: must be set when seccomp type is Localhost",
        ),
    ]
    assert causes(
        {"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/../p.json"}},
        {"seccompProfile": {}},
    ) == [
        (
            "FieldValueRequired",
            f"{C0}.seccompProfile.type",
            "Required value: type is required when seccompProfile is set",
        ),
        (
            "FieldValueInvalid",
            f"{POD}.seccompProfile.localhostProfile",
            'Invalid value: "/etc/../p.json": must be a relative path',
        ),
        (
            "FieldValueInvalid",
            f"{POD}.seccompProfile.localhostProfile",
            "Invalid value: \"/etc/../p.json\": must not contain '..'",
        ),
    ]


def test_apparmor_profiles() -> None:
    assert (
        causes(
            {"appArmorProfile": {"type": "Unconfined"}},
            {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-deny"}},
        )
        == []
    )
    assert causes(
        {"appArmorProfile": {"type": "Other"}},
        {"appArmorProfile": {"type": "Localhost", "localhostProfile": " p "}},
    ) == [
        (
            "FieldValueInvalid",
            f"{C0}.appArmorProfile.localhostProfile",
            'Invalid value: " p ": must not be padded with whitespace',
        ),
        (
            "FieldValueNotSupported",
            f"{POD}.appArmorProfile.type",
            'Unsupported value: "Other": supported values: "Localhost", "RuntimeDefault", "Unconfined"',
        ),
    ]
    assert causes(None, {"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}}) == [
        (
            "FieldValueInvalid",
            f"{C0}.appArmorProfile.localhostProfile",
            'Invalid value: "p": can only be set when AppArmor type is Localhost',
        )
    ]


def test_privileged_or_sys_admin_conflicts_with_no_privilege_escalation() -> None:
    assert causes(None, {"privileged": True, "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}}) == []
    assert causes(None, {"allowPrivilegeEscalation": False, "capabilities": {"add": ["NET_ADMIN"]}}) == []
    shown = (
        '{"Capabilities":{"Add":["CAP_SYS_ADMIN"],"Drop":null},"Privileged":true,"SELinuxOptions":null,'
        '"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,'
        '"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,'
        '"SeccompProfile":null,"AppArmorProfile":null}'
    )
    assert causes(
        None,
        {"privileged": True, "allowPrivilegeEscalation": False, "capabilities": {"add": ["CAP_SYS_ADMIN"]}},
    ) == [
        (
            "FieldValueInvalid",
            C0,
            f"Invalid value: {shown}: "
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        ),
        (
            "FieldValueInvalid",
            C0,
            f"Invalid value: {shown}: "
            "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
        ),
    ]


def test_proc_mount() -> None:
    assert causes(None, {"procMount": "Unmasked"}, hostUsers=False) == []
    assert causes(None, {"procMount": "Unmasked"}) == [
        (
            "FieldValueInvalid",
            f"{C0}.procMount",
            'Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`',
        )
    ]
    assert causes(None, {"procMount": "Masked"}) == [
        (
            "FieldValueNotSupported",
            f"{C0}.procMount",
            'Unsupported value: "Masked": supported values: "Default", "Unmasked"',
        )
    ]
