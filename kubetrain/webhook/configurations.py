"""The Mutating/ValidatingWebhookConfigurations kubetrain needs, built in code.

The Helm chart templates the same objects for in-cluster installs (service references); this
module builds them for URL-mode registration — `kubetrain dev`, the integration tests and the
e2e tier, where the webhook runs on this machine's loopback.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from kubetrain.api.groups import KUBETRAIN_GROUP, TRAINER_GROUP, group_version, job_groups
from kubetrain.frameworks.registry import FRAMEWORKS, group_serves, job_version
from kubetrain.jobs.crdgen import has_scale_subresource
from kubetrain.webhook.crons import VALIDATE_CRONS, cron_rules

Obj = dict[str, Any]

MUTATING_NAME = "kubetrain-mutating"
VALIDATING_NAME = "kubetrain-validating"
MUTATE_JOBS = "mutate.jobs.kubetrain.io"
VALIDATE_JOBS = "validate.jobs.kubetrain.io"
VALIDATE_POLICIES = "validate.trainingpolicies.kubetrain.io"
MUTATE_TRAINER = "mutate.trainjobs.trainer.kubeflow.org"
VALIDATE_TRAINER = "validate.trainer.kubeflow.org"


def trainer_rules(validating: bool) -> list[Obj]:
    """TrainJobs (CREATE, UPDATE); for validation also the runtimes, DELETE included (in-use
    protection)."""
    rules: list[Obj] = [
        {
            "apiGroups": [TRAINER_GROUP],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainjobs"],
            "scope": "Namespaced",
        }
    ]
    if validating:
        rules.append(
            {
                "apiGroups": [TRAINER_GROUP],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "resources": ["trainingruntimes", "clustertrainingruntimes"],
                "scope": "*",
            }
        )
    return rules


def job_rules(groups: Sequence[str] = (KUBETRAIN_GROUP,)) -> list[Obj]:
    """The job kinds of the API groups the operator serves (kubetrain.api.groups), one rule per
    group and version: each kind the group has (training.kubedl.io: KubeDL's kinds only, at
    v1alpha1) at the version it is admitted at (MPIJob in kubeflow.org at v2beta1 only, so the
    API server converts a kubeflow.org/v1 MPIJob to v2beta1 for the webhooks — matchPolicy
    Equivalent)."""
    rules: list[Obj] = []
    for group in groups:
        by_version: dict[str, list[str]] = {}
        for kind, fw in FRAMEWORKS.items():
            if group_serves(group, kind):
                by_version.setdefault(job_version(kind, group), []).append(fw.plural)
        for version, plurals in by_version.items():
            rules.append(
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": plurals,
                    "scope": "Namespaced",
                }
            )
    return rules


def scale_rule(groups: Sequence[str] = (KUBETRAIN_GROUP,)) -> Obj:
    """Writes to the scale subresource (`kubectl scale`, an HPA): kube-apiserver sends them to a
    webhook only when a rule names `<plural>/scale`; the object is an autoscaling/v1 Scale."""
    return {
        "apiGroups": list(groups),
        "apiVersions": sorted({group_version(g) for g in groups}),
        "operations": ["UPDATE"],
        "resources": [f"{fw.plural}/scale" for fw in FRAMEWORKS.values() if has_scale_subresource(fw)],
        "scope": "Namespaced",
    }


def policy_rule() -> Obj:
    return {
        "apiGroups": ["kubetrain.io"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["trainingpolicies"],
        "scope": "Cluster",
    }


def webhook_configurations(
    base_url: str,
    ca_pem: bytes,
    *,
    namespace_selector: Obj | None = None,
    timeout_seconds: int = 10,
    mutating_name: str = MUTATING_NAME,
    validating_name: str = VALIDATING_NAME,
    api_groups: Sequence[str] = (KUBETRAIN_GROUP,),
) -> tuple[Obj, Obj]:
    """(mutating, validating) configurations calling `base_url` + /mutate and /validate.

    failurePolicy Fail (a job is never stored without defaulting and validation), sideEffects
    None (dry-run requests are safe), admissionReviewVersions v1.
    """
    ca = base64.b64encode(ca_pem).decode()
    base_url = base_url.rstrip("/")

    def hook(name: str, path: str, rule: Obj | list[Obj], selector: Obj | None) -> Obj:
        webhook: Obj = {
            "name": name,
            "clientConfig": {"url": f"{base_url}{path}", "caBundle": ca},
            "rules": rule if isinstance(rule, list) else [rule],
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": timeout_seconds,
        }
        if selector is not None:
            webhook["namespaceSelector"] = selector
        return webhook

    served = job_groups(api_groups)
    # A rule with no apiGroups is invalid: no job hooks when only trainer.kubeflow.org is served.
    job_mutating = [hook(MUTATE_JOBS, "/mutate", job_rules(served), namespace_selector)] if served else []
    job_validating = (
        [hook(VALIDATE_JOBS, "/validate", [*job_rules(served), scale_rule(served)], namespace_selector)]
        if served
        else []
    )
    mutating: Obj = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mutating_name},
        "webhooks": job_mutating,
    }
    if TRAINER_GROUP in api_groups:
        mutating["webhooks"].append(hook(MUTATE_TRAINER, "/mutate", trainer_rules(False), namespace_selector))
    validating: Obj = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": validating_name},
        "webhooks": [
            *job_validating,
            hook(VALIDATE_POLICIES, "/validate", policy_rule(), None),
            hook(VALIDATE_CRONS, "/validate", cron_rules(api_groups), namespace_selector),
        ],
    }
    if TRAINER_GROUP in api_groups:
        validating["webhooks"].append(hook(VALIDATE_TRAINER, "/validate", trainer_rules(True), None))
    return mutating, validating
