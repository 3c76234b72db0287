"""CRDs for the devcluster CRD-validation tests, and the create/update paths they go through:
v1 defaulting (`builtins.default_crd`) then `crdvalidation.crd_causes`, as the devcluster write
path runs them."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtins
from kubetrain.devcluster.apiserver.kinds.crds import validation as crdvalidation

Obj = dict[str, Any]


def crd(
    schema: Obj | None = None,
    *,
    group: str = "example.com",
    status: Obj | None = None,
    plural: str = "widgets",
    kind: str = "Widget",
    **version: Any,
) -> Obj:
    """A valid one-version CRD (Widget unless `plural` and `kind` say otherwise); `schema`
    replaces the spec property's schema, `status` the status property's."""
    spec_schema = schema if schema is not None else {"type": "object"}
    status_schema = status if status is not None else {"type": "object"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema, "status": status_schema},
                        }
                    },
                    **version,
                }
            ],
        },
    }


def root(crd_obj: Obj, version: int = 0) -> Obj:
    schema: Obj = crd_obj["spec"]["versions"][version]["schema"]["openAPIV3Schema"]
    return schema


def two_versions(crd_obj: Obj) -> Obj:
    """`crd_obj` with a second served, non-storage version v2 whose schema differs (an extra field)."""
    out = copy.deepcopy(crd_obj)
    second = copy.deepcopy(out["spec"]["versions"][0])
    second.update(name="v2", storage=False)
    root(out)["properties"]["extra"] = {"type": "string"}
    out["spec"]["versions"].append(second)
    return out


def created(crd_obj: Obj) -> Obj:
    obj = copy.deepcopy(crd_obj)
    builtins.default_crd(obj, None)
    return obj


def causes(crd_obj: Obj) -> list[tuple[str, str]]:
    """(field, message) of each cause a create of `crd_obj` is refused with."""
    return [(c.field, c.message) for c in crdvalidation.crd_causes(created(crd_obj), None)]


def update_causes(old: Obj, new: Obj) -> list[tuple[str, str]]:
    """(field, message) of each cause an update of the stored `old` to `new` is refused with."""
    stored = created(old)
    obj = copy.deepcopy(new)
    obj["status"] = copy.deepcopy(stored["status"])
    builtins.default_crd(obj, stored)
    return [(c.field, c.message) for c in crdvalidation.crd_causes(obj, stored)]
