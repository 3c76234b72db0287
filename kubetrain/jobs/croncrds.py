"""The CustomResourceDefinitions of the cron kinds: TrainingCron (kubetrain.io/v1, always
installed with the job kinds) and KubeDL's Cron (apps.kubedl.io/v1alpha1, for an operator run with
`--api-groups` including apps.kubedl.io), generated from `kubetrain.api.cron` like the job kinds'.

TrainingCron's schema carries batch/v1 CronJob's defaults (concurrencyPolicy Allow, suspend
false, 3 succeeded and 1 failed job kept), applied by the API server; KubeDL's Cron has none, as in
KubeDL (its historyLimit bounds only `status.history`: every finished job is kept)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kubetrain.api import cron as api
from kubetrain.jobs.crdgen import model_schema

_LABELS = {"app.kubernetes.io/name": "kubetrain", "app.kubernetes.io/part-of": "kubetrain"}
_DEFAULTS = {
    "concurrencyPolicy": api.DEFAULT_CONCURRENCY_POLICY,
    "suspend": False,
    "successfulJobsHistoryLimit": api.DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT,
    "failedJobsHistoryLimit": api.DEFAULT_FAILED_JOBS_HISTORY_LIMIT,
}


def cron_crds(group: str) -> list[dict[str, Any]]:
    """The cron CRDs of one API group (none for kubeflow.org)."""
    if group == api.GROUP:
        return [training_cron_crd()]
    if group == api.KUBEDL_GROUP:
        return [kubedl_cron_crd()]
    return []


def training_cron_crd() -> dict[str, Any]:
    schema = _schema(
        api.TrainingCron, "TrainingCron: creates a training job from its template on a cron schedule"
    )
    spec_props = schema["properties"]["spec"]["properties"]
    for name, value in _DEFAULTS.items():
        spec_props[name]["default"] = value
    return _crd(
        api.GROUP,
        api.VERSION,
        api.KIND,
        api.PLURAL,
        api.SINGULAR,
        list(api.SHORT_NAMES),
        schema,
    )


def kubedl_cron_crd() -> dict[str, Any]:
    schema = _schema(
        api.KubeDLCron, "Cron: KubeDL's scheduled training (apps.kubedl.io), served by kubetrain"
    )
    return _crd(
        api.KUBEDL_GROUP,
        api.KUBEDL_VERSION,
        api.KUBEDL_KIND,
        api.KUBEDL_PLURAL,
        api.KUBEDL_SINGULAR,
        [],
        schema,
    )


def _schema(model: type[BaseModel], description: str) -> dict[str, Any]:
    schema = model_schema(model)
    schema["description"] = f"{description} (batch/v1 CronJob semantics)."
    return schema


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    singular: str,
    short_names: list[str],
    schema: dict[str, Any],
) -> dict[str, Any]:
    names: dict[str, Any] = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": singular}
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": dict(_LABELS)},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": names,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"},
                        {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
                        {"name": "Last Schedule", "type": "date", "jsonPath": ".status.lastScheduleTime"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ],
        },
    }
