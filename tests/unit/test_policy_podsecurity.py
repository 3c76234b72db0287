"""Pod Security Standards on job templates: the pure checks and the webhook's use of the
namespace's enforce label."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.jobs.defaulting import default_job
from kubetrain.policy import PolicyIndex
from kubetrain.policy.podsecurity import enforce_level, pod_security_errors
from kubetrain.webhook.policies import PolicyAdmission
from kubetrain.webhook.review import parse_review, request_review
from kubetrain.webhook.validate import validate

P = "spec.tfReplicaSpecs[Worker].template"

RESTRICTED_OK: dict[str, Any] = {
    "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "tensorflow",
                "image": "tf",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
    }
}


def with_(change: dict[str, Any], base: dict[str, Any] | None = None) -> dict[str, Any]:
    out = copy.deepcopy(base or {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}})

    def merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            elif k == "containers" and isinstance(v, list):
                for i, c in enumerate(v):
                    merge(dst[k][i], c)
            else:
                dst[k] = v

    merge(out, change)
    return out


def paths(template: dict[str, Any], level: str) -> list[str]:
    return [e.path.removeprefix(P) for e in pod_security_errors(template, level, P)]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"spec": {"hostNetwork": True}}, ".spec.hostNetwork"),
        ({"spec": {"hostPID": True}}, ".spec.hostPID"),
        ({"spec": {"hostIPC": True}}, ".spec.hostIPC"),
        (
            {"spec": {"containers": [{"securityContext": {"privileged": True}}]}},
            ".spec.containers[0].securityContext.privileged",
        ),
        ({"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}, ".spec.volumes[0].hostPath"),
        (
            {"spec": {"containers": [{"ports": [{"containerPort": 80, "hostPort": 80}]}]}},
            ".spec.containers[0].ports[0].hostPort",
        ),
        (
            {"spec": {"containers": [{"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}},
            ".spec.containers[0].securityContext.capabilities.add[0]",
        ),
        (
            {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
            ".spec.securityContext.seccompProfile.type",
        ),
        (
            {"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}},
            ".spec.securityContext.appArmorProfile.type",
        ),
        (
            {"spec": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}},
            ".spec.securityContext.seLinuxOptions.type",
        ),
        (
            {"spec": {"containers": [{"securityContext": {"procMount": "Unmasked"}}]}},
            ".spec.containers[0].securityContext.procMount",
        ),
        (
            {"spec": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}},
            ".spec.securityContext.sysctls[0].name",
        ),
        (
            {"spec": {"securityContext": {"windowsOptions": {"hostProcess": True}}}},
            ".spec.securityContext.windowsOptions.hostProcess",
        ),
        (
            {
                "metadata": {
                    "annotations": {"container.apparmor.security.beta.kubernetes.io/tensorflow": "unconfined"}
                }
            },
            ".metadata.annotations[container.apparmor.security.beta.kubernetes.io/tensorflow]",
        ),
    ],
)
def test_baseline_controls(change: dict[str, Any], path: str) -> None:
    template = with_(change)
    assert paths(template, "baseline") == [path]
    assert path in paths(template, "restricted")
    assert paths(template, "privileged") == []


def test_default_template_passes_baseline_but_not_restricted() -> None:
    template = with_({})
    assert paths(template, "baseline") == []
    assert set(paths(template, "restricted")) == {
        ".spec.containers[0].securityContext.allowPrivilegeEscalation",
        ".spec.containers[0].securityContext.runAsNonRoot",
        ".spec.containers[0].securityContext.seccompProfile.type",
        ".spec.containers[0].securityContext.capabilities.drop",
    }


def test_restricted_controls() -> None:
    assert paths(RESTRICTED_OK, "restricted") == []
    bad = with_(
        {
            "spec": {
                "securityContext": {"runAsUser": 0},
                "containers": [{"securityContext": {"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}}],
                "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}],
            }
        },
        RESTRICTED_OK,
    )
    assert set(paths(bad, "restricted")) == {
        ".spec.securityContext.runAsUser",
        ".spec.containers[0].securityContext.capabilities.add[0]",
        ".spec.volumes[0].nfs",
    }
    message = str(pod_security_errors(bad, "restricted", P)[0])
    assert 'under the "restricted" Pod Security level' in message and ": Forbidden: " in message


def test_enforce_level_from_namespace_labels() -> None:
    assert enforce_level({"pod-security.kubernetes.io/enforce": "baseline"}) == "baseline"
    assert enforce_level({"pod-security.kubernetes.io/enforce": "restricted"}) == "restricted"
    assert enforce_level({}) == "privileged"
    assert enforce_level({"pod-security.kubernetes.io/enforce": "bogus"}) == "privileged"


def test_webhook_refuses_a_privileged_template_in_a_baseline_namespace() -> None:
    index = PolicyIndex()
    index.on_namespace_add(
        {"metadata": {"name": "team-a", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    )
    index.on_namespace_add({"metadata": {"name": "open"}})
    admission = PolicyAdmission(index, gang_scheduling=False)

    def job(namespace: str) -> dict[str, Any]:
        return default_job(
            {
                "apiVersion": "kubetrain.io/v1",
                "kind": "TFJob",
                "metadata": {"name": "priv", "namespace": namespace},
                "spec": {
                    "tfReplicaSpecs": {
                        "Worker": {
                            "replicas": 1,
                            "template": with_(
                                {
                                    "spec": {
                                        "hostNetwork": True,
                                        "containers": [{"securityContext": {"privileged": True}}],
                                    }
                                }
                            ),
                        }
                    }
                },
            }
        ).obj

    denied = validate(parse_review(request_review(job("team-a"))), admission)
    assert not denied.allowed
    assert (
        f'{P}.spec.hostNetwork: Forbidden: must be unset or false under the "baseline" Pod Security level'
        in denied.message
    )
    assert f"{P}.spec.containers[0].securityContext.privileged: Forbidden" in denied.message
    assert validate(parse_review(request_review(job("open"))), admission).allowed


def test_training_policy_pod_security_limit() -> None:
    from kubetrain.policy import check_policy_limits, parse_policy

    tpol = parse_policy(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TrainingPolicy",
            "metadata": {"name": "secure"},
            "spec": {"limits": {"podSecurity": "baseline"}},
        }
    )
    job = default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TFJob",
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {
                "tfReplicaSpecs": {"Worker": {"replicas": 1, "template": with_({"spec": {"hostPID": True}})}}
            },
        }
    ).obj
    verdict = check_policy_limits(job, [tpol])
    assert verdict.denials == [
        f'policy "secure": {P}.spec.hostPID: Forbidden: must be unset or false under the "baseline" '
        "Pod Security level (host namespaces)"
    ]
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].pop("hostPID")
    assert check_policy_limits(job, [tpol]).allowed
