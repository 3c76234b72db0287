"""Admission of the cron kinds (TrainingCron; KubeDL's Cron when apps.kubedl.io is served): a
cron is refused with every problem `kubetrain.cron.shape.validate_cron` finds — a bad schedule
naming `spec.schedule`, an unknown `spec.timeZone`, a template the job webhooks would refuse at
its path in the cron — so a stored cron never fails later, at every scheduled time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubetrain.api import cron as cronapi
from kubetrain.cron.shape import validate_cron
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

Obj = dict[str, Any]
VALIDATE_CRONS = "validate.crons.kubetrain.io"
CRON_KINDS = tuple(cronapi.CRON_KINDS.values())


def is_cron_kind(kind: str) -> bool:
    return kind in CRON_KINDS


def validate_cron_object(request: AdmissionRequest) -> AdmissionResponse:
    obj = request.object
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource or obj is None:
        return AdmissionResponse.allow(request.uid)
    old = request.old_object if request.operation == "UPDATE" else None
    if old is not None and old.get("spec") == obj.get("spec"):
        return AdmissionResponse.allow(request.uid)  # status, labels: never blocked
    errors = validate_cron(obj)
    if not errors:
        return AdmissionResponse.allow(request.uid)
    name = request.name or str((obj.get("metadata") or {}).get("name") or "")
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return AdmissionResponse.deny(request.uid, f'{request.kind} "{name}" is invalid: {listed}')


def cron_rules(api_groups: Sequence[str]) -> list[Obj]:
    """The webhook rules of the cron kinds served: TrainingCron always, Cron with apps.kubedl.io."""
    rules = [_rule(cronapi.GROUP, cronapi.VERSION, cronapi.PLURAL)]
    if cronapi.KUBEDL_GROUP in api_groups:
        rules.append(_rule(cronapi.KUBEDL_GROUP, cronapi.KUBEDL_VERSION, cronapi.KUBEDL_PLURAL))
    return rules


def _rule(group: str, version: str, plural: str) -> Obj:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "operations": ["CREATE", "UPDATE"],
        "resources": [plural],
        "scope": "Namespaced",
    }
