"""KubeDL's tenancy annotation: who a job belongs to, as labels kubetrain can select on. Pure.

`kubedl.io/tenancy` holds KubeDL's `Tenancy` JSON — `{"tenant": "...", "user": "...", "idc":
"...", "region": "..."}`, every field a string. KubeDL only stores it; kubetrain also records each
non-empty field as a label (`tenancy.kubetrain.io/<field>`) on the job (at admission, with the
other defaults, and by the controller for a job stored without the webhook) and on every pod it
owns, so TrainingPolicies select a tenant's jobs (`jobSelector`), `kubectl get pods -l
tenancy.kubetrain.io/tenant=vision` lists a tenant's pods, and metrics count per tenant.

Each field's value must be a valid label value (it becomes one); the annotation must be a JSON
object with only KubeDL's four fields. A malformed annotation is refused at admission naming the
annotation and the field: `metadata.annotations[kubedl.io/tenancy].tenant: Invalid value: ...`.
While the annotation is set, the labels follow it: a job's own labels of those keys are
overwritten, and removed when the annotation does not name that field. A job without the
annotation keeps whatever labels it has (a platform may label tenants itself).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid, json_object, json_type
from kubetrain.api.labels import (
    KUBEDL_ANNOTATION_TENANCY,
    LABEL_TENANT,
    LABEL_TENANT_IDC,
    LABEL_TENANT_REGION,
    LABEL_TENANT_USER,
    annotations_of,
)

ANNOTATION_PATH = f"metadata.annotations[{KUBEDL_ANNOTATION_TENANCY}]"
FIELD_LABELS: dict[str, str] = {
    "tenant": LABEL_TENANT,
    "user": LABEL_TENANT_USER,
    "idc": LABEL_TENANT_IDC,
    "region": LABEL_TENANT_REGION,
}
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_tenancy(raw: Any) -> tuple[dict[str, str], list[FieldError]]:
    """The tenancy fields of an annotation value (empty ones left out), and what is wrong with it."""
    value, problems = json_object(raw, ANNOTATION_PATH)
    if value is None:
        return {}, problems
    fields: dict[str, str] = {}
    errors: list[FieldError] = []
    for key, item in value.items():
        path = f"{ANNOTATION_PATH}.{key}"
        if key not in FIELD_LABELS:
            valid = ", ".join(FIELD_LABELS)
            errors.append(invalid(path, f"unknown field; KubeDL's tenancy has: {valid}"))
        elif item is None or item == "":
            continue
        elif not isinstance(item, str):
            errors.append(invalid(path, f"must be a string, not {json_type(item)}"))
        elif len(item) > 63 or not _LABEL_VALUE.match(item):
            errors.append(
                invalid(
                    path,
                    f"{QUOTE.encode(item)} is recorded as a label value: at most 63 characters, "
                    "alphanumeric, "
                    "'-', '_' or '.', starting and ending with an alphanumeric character",
                )
            )
        else:
            fields[key] = item
    return fields, errors


def tenancy_labels(obj: Mapping[str, Any]) -> dict[str, str]:
    """The tenancy labels the job's annotation asks for ({} without one, or a malformed one)."""
    return labels_of_annotations(annotations_of(obj))


def labels_of_annotations(annotations: Mapping[str, Any]) -> dict[str, str]:
    """`tenancy_labels` of a job with these annotations."""
    raw = annotations.get(KUBEDL_ANNOTATION_TENANCY)
    if raw is None:
        return {}
    fields, errors = parse_tenancy(raw)
    if errors:
        return {}
    return {FIELD_LABELS[k]: v for k, v in fields.items()}


def default_tenancy_labels(obj: dict[str, Any], fields: Mapping[str, str] | None) -> None:
    """Make the job's tenancy labels follow its annotation's `fields` (`parse_tenancy` of it; None
    without the annotation or with one validation refuses: the job is left as it is). In place;
    `metadata` is copied."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or fields is None:
        return
    raw_labels = meta.get("labels")
    labels = dict(raw_labels) if isinstance(raw_labels, Mapping) else {}
    wanted = {FIELD_LABELS[k]: v for k, v in fields.items()}
    updated = {k: v for k, v in labels.items() if k not in FIELD_LABELS.values() or k in wanted}
    updated.update(wanted)
    if updated == labels:
        return
    meta = obj["metadata"] = dict(meta)
    if updated:
        meta["labels"] = updated
    else:
        meta.pop("labels", None)
