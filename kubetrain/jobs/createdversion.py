"""The apiVersion a job was created at, kept in `kubetrain.io/created-api-version` — for a kind
served at more than one version of its group (an MPIJob in kubeflow.org: `v2beta1`,
mpi-operator's and the storage version, and `v1`, training-operator's). Pure.

The API server converts a write at another served version to the version the webhooks are
registered for (`matchPolicy: Equivalent`) before admission, so the object the webhooks and the
controller see no longer says which version its author wrote; the AdmissionReview's
`requestKind` does (`kind` is the converted version). The mutating webhook records it:

- CREATE: the annotation is set to `<group>/<requestKind version>` — only the API server knows
  what the client sent — unless the client set it to a served version itself: that value is
  kept (with a warning when it is not the version written), so a job exported with
  `kubectl get -o yaml` (at v1, the CRD's preferred version) and created again keeps its pods'
  labels; another value is refused by validation;
- UPDATE: the stored job's value is kept; an update that drops the annotation gets it back (a
  `kubectl replace` or a server-side apply of the original manifest drops what the webhook
  added), and validation refuses one that changes it, or adds it to a job stored without it —
  pods already created carry the labels the old value chose.

The frameworks read it from the job's annotations (MPIJob: the pod labels, frameworks/mpilabels.py).
A job stored without it (created with the webhooks off, or by an older kubetrain) keeps the
labels of the storage version's operator. On kinds served at one version it means nothing and
is left as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, forbidden, not_supported
from kubetrain.api.groups import group_of
from kubetrain.api.labels import ANNOTATION_CREATED_API_VERSION, annotations_of
from kubetrain.frameworks.registry import converted_versions, job_version

PATH = f"metadata.annotations[{ANNOTATION_CREATED_API_VERSION}]"


def served_api_versions(kind: str, group: str) -> tuple[str, ...]:
    """The apiVersions a kind is created at in `group` when it is served at more than one (the
    stored version first), else () — such a kind records none."""
    converted = converted_versions(kind, group)
    if not converted:
        return ()
    return tuple(f"{group}/{v}" for v in (job_version(kind, group), *converted))


def served_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """`served_api_versions` of a wire-form job's kind and group."""
    return served_api_versions(str(obj.get("kind") or ""), group_of(obj.get("apiVersion")))


def created_api_version(obj: Mapping[str, Any] | None) -> Any:
    """The annotation as written on a wire-form job (None when absent)."""
    return annotations_of(obj).get(ANNOTATION_CREATED_API_VERSION) if isinstance(obj, Mapping) else None


def _with_annotation(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """A copy of `obj` whose annotation is `value` (sub-objects shared, not copied)."""
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    meta["annotations"] = {**annotations_of(obj), ANNOTATION_CREATED_API_VERSION: value}
    return {**obj, "metadata": meta}


def record_created_version(
    obj: dict[str, Any], client_version: str, old: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The job as the mutating webhook stores it, and its warnings: on CREATE (`old` None) the
    annotation names the version the client wrote (`client_version`: requestKind's version)
    unless the client set it to a served version itself (kept, with a warning when it differs);
    on UPDATE the stored job's annotation is put back when the update dropped it. `obj` itself
    is not changed."""
    served = served_of(obj)
    if not served:
        return obj, []
    written = created_api_version(obj)
    if old is not None:
        before = created_api_version(old)
        if written is None and before is not None:
            return _with_annotation(obj, str(before)), []
        return obj, []  # unchanged, or a change validation refuses
    value = f"{group_of(obj.get('apiVersion'))}/{client_version}"
    if value not in served:  # requestKind missing or odd: the version the webhook is called at
        called_at = obj.get("apiVersion")
        value = called_at if isinstance(called_at, str) and called_at in served else served[0]
    if written is None:
        return _with_annotation(obj, value), []
    if written in served and written != value:
        return obj, [
            f"{PATH} is {QUOTE.encode(written)}: the job's pods get the labels of {written} although it is "
            f"created at {value}"
        ]
    return obj, []  # the version written, or a value validation refuses


def created_version_errors(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """`check_created_version` of a wire-form job (and of `old`, the stored job, on update)."""
    before = created_api_version(old) if old is not None else None
    return check_created_version(served_of(obj), created_api_version(obj), before, updating=old is not None)


def check_created_version(
    served: tuple[str, ...], value: Any, before: Any = None, *, updating: bool = False
) -> list[FieldError]:
    """The annotation names one of the apiVersions the kind is `served` at (none: not checked);
    on update it is the stored job's (`before`), whatever that is: the pods already created carry
    the labels that value chose."""
    if not served:
        return []
    if updating and value != before:
        was = "absent" if before is None else f"{QUOTE.encode(before)}"
        return [
            forbidden(
                PATH,
                f"is immutable (was {was}): it records the apiVersion the job was created at, "
                "which chose its pods' labels; delete and recreate the job at the version you want",
            )
        ]
    if updating:
        return []  # kept as stored (a value stored without the webhook is the controller's to report)
    if value is not None and value not in served:
        return [not_supported(PATH, value, served)]
    return []
