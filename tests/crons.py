"""Cron manifests (TrainingCron, KubeDL's Cron) for every tier, built around tests/jobs.py's jobs.
Import with `from crons import training_cron, kubedl_cron`."""

from __future__ import annotations

from typing import Any

from jobs import job

Obj = dict[str, Any]


def template_of(kind: str = "PyTorchJob", replicas: dict[str, Any] | None = None, **job_options: Any) -> Obj:
    """A job of `kind` as a cron template: apiVersion, kind, metadata without name, spec."""
    built = job(kind, "x", replicas if replicas is not None else {"Master": 1, "Worker": 1}, **job_options)
    meta = {k: v for k, v in built["metadata"].items() if k not in ("name", "namespace")}
    return {"apiVersion": built["apiVersion"], "kind": kind, "metadata": meta, "spec": built["spec"]}


def training_cron(
    name: str = "nightly",
    schedule: str = "*/5 * * * *",
    *,
    namespace: str | None = "ns",
    template: Obj | None = None,
    **spec_fields: Any,
) -> Obj:
    """A kubetrain.io/v1 TrainingCron; `spec_fields` (camelCase) are added to its spec."""
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    spec: Obj = {"schedule": schedule, "template": template or template_of(), **spec_fields}
    return {"apiVersion": "kubetrain.io/v1", "kind": "TrainingCron", "metadata": metadata, "spec": spec}


def kubedl_cron(
    name: str = "nightly",
    schedule: str = "*/5 * * * *",
    *,
    namespace: str | None = "ns",
    template: Obj | None = None,
    **spec_fields: Any,
) -> Obj:
    """An apps.kubedl.io/v1alpha1 Cron in KubeDL's layout (template.workload holds metadata+spec)."""
    tmpl = template or template_of()
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    workload = {"metadata": tmpl.get("metadata") or {}, "spec": tmpl["spec"]}
    spec: Obj = {
        "schedule": schedule,
        "template": {"apiVersion": tmpl["apiVersion"], "kind": tmpl["kind"], "workload": workload},
        **spec_fields,
    }
    return {"apiVersion": "apps.kubedl.io/v1alpha1", "kind": "Cron", "metadata": metadata, "spec": spec}
