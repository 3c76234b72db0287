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
from kubetrain.frameworks.registry import FRAMEWORKS
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


def job_rule(groups: Sequence[str] = (KUBETRAIN_GROUP,)) -> Obj:
    """The job kinds of the API groups the operator serves (kubetrain.api.groups)."""
    return {
        "apiGroups": list(groups),
        "apiVersions": sorted({group_version(g) for g in groups}),
        "operations": ["CREATE", "UPDATE"],
        "resources": [fw.plural for fw in FRAMEWORKS.values()],
        "scope": "Namespaced",
    }


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
    job_mutating = [hook(MUTATE_JOBS, "/mutate", job_rule(served), namespace_selector)] if served else []
    job_validating = (
        [hook(VALIDATE_JOBS, "/validate", [job_rule(served), scale_rule(served)], namespace_selector)]
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
