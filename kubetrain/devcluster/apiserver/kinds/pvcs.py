"""core/v1 PersistentVolumeClaims as kube-apiserver admits them.

PersistentVolumeClaim (pkg/apis/core/validation `ValidatePersistentVolumeClaim`, the registry
strategy and the v1 defaults): the name is a DNS-1123 subdomain (`namerules.py`); on create any
status sent is dropped and `status.phase` is `Pending`, `spec.volumeMode` defaults to
`Filesystem`; `spec.accessModes` is required, each one of ReadOnlyMany, ReadWriteMany,
ReadWriteOnce, ReadWriteOncePod, and ReadWriteOncePod not with another mode;
`spec.resources.requests.storage` is required (reported at `spec.resources[storage]`, as
kube-apiserver words it) and a quantity greater than zero. On update the spec is immutable
except `volumeName` (set once) and, for a Bound claim, `resources.requests`, which may not
shrink. No volume is provisioned or bound: a claim stays Pending (binding is the cluster's
provisioner's, which devcluster does not simulate).
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api.quantity import QuantityError, parse_quantity
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj

ACCESS_MODES = (
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
)  # sorted, as kube lists them
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
VOLUME_MODES = ("Block", "Filesystem")
STORAGE_PATH = "spec.resources[storage]"
IMMUTABLE = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName "
    "for bound claims"
)


def default_pvc(pvc: Obj, old: Obj | None) -> None:
    spec = pvc.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    if old is None:
        pvc["status"] = {"phase": "Pending"}
    elif not isinstance(pvc.get("status"), dict) or not pvc["status"].get("phase"):
        pvc["status"] = {**(pvc.get("status") or {}), "phase": "Pending"}


def _supported(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def validate_pvc(pvc: Obj, old: Obj | None) -> list[Cause]:
    spec = pvc.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(
            Cause(
                "FieldValueRequired", "Required value: at least 1 access mode is required", "spec.accessModes"
            )
        )
    once_pod = other = False
    for mode in modes if isinstance(modes, list) else []:
        if mode not in ACCESS_MODES:
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{mode}": supported values: {_supported(ACCESS_MODES)}',
                    "spec.accessModes",
                )
            )
        elif mode == READ_WRITE_ONCE_POD:
            once_pod = True
        else:
            other = True
    if once_pod and other:
        causes.append(
            Cause(
                "FieldValueForbidden",
                "Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.accessModes",
            )
        )
    requests = (spec.get("resources") or {}).get("requests") or {}
    storage = requests.get("storage") if isinstance(requests, dict) else None
    if storage is None:
        causes.append(Cause("FieldValueRequired", "Required value", STORAGE_PATH))
    else:
        try:
            positive = parse_quantity(storage) > 0
        except QuantityError:
            positive = False
        if not positive:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{storage}": must be greater than zero',
                    STORAGE_PATH,
                )
            )
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{mode}": supported values: {_supported(VOLUME_MODES)}',
                "spec.volumeMode",
            )
        )
    if old is not None and not causes:
        causes += _update_causes(pvc, old)
    return causes


def _update_causes(pvc: Obj, old: Obj) -> list[Cause]:
    new_spec: dict[str, Any] = copy.deepcopy(pvc.get("spec") or {})
    old_spec: dict[str, Any] = copy.deepcopy(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec.pop("volumeName", None)
        new_spec.pop("volumeName", None)
    bound = (pvc.get("status") or {}).get("phase") == "Bound"
    causes: list[Cause] = []
    if bound:
        new_size = ((new_spec.get("resources") or {}).get("requests") or {}).get("storage")
        old_size = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
        try:
            shrinks = parse_quantity(new_size) < parse_quantity(old_size)
        except QuantityError:
            shrinks = False
        if shrinks:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: field can not be less than previous value",
                    "spec.resources.requests.storage",
                )
            )
        for s in (new_spec, old_spec):
            s.setdefault("resources", {}).pop("requests", None)
    for s in (new_spec, old_spec):
        s.pop("volumeAttributesClassName", None)
    if new_spec != old_spec:
        causes.append(Cause("FieldValueForbidden", f"Forbidden: {IMMUTABLE}", "spec"))
    return causes
