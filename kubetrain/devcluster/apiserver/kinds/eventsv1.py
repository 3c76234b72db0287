"""events.k8s.io/v1 Events as kube-apiserver serves them: a second view of the one Event resource
(etcd's `/registry/events`), not a resource of its own. pkg/registry/events/rest builds the
events.k8s.io REST storage with the core event registry (pkg/registry/core/event), so an Event
written through either group is read, listed, watched, field-selected and expired through both,
under one resourceVersion. Pure: the conversion, the field labels and their values.

Conversion (pkg/apis/events/v1 `Convert_v1_Event_To_core_Event` / `Convert_core_Event_To_v1_Event`;
the core/v1 JSON names on the right): `regarding` <-> `involvedObject`, `note` <-> `message`,
`reportingController` <-> `reportingComponent`, `deprecatedSource` <-> `source`,
`deprecatedFirstTimestamp` / `deprecatedLastTimestamp` / `deprecatedCount` <-> `firstTimestamp` /
`lastTimestamp` / `count`; `eventTime`, `series`, `related`, `action`, `type`, `reason`,
`reportingInstance` and `metadata` keep their names. The two types have the same fifteen fields,
so the conversion is a renaming both ways and loses nothing. devcluster stores the core/v1 form.

Field labels: through events.k8s.io/v1 only `metadata.name`, `metadata.namespace`, `reason`,
`type`, `reportingController` and `regarding.{kind,namespace,name,uid,apiVersion,resourceVersion,
fieldPath}` (`AddFieldLabelConversionsForEvent`), each mapped to the core label it is evaluated
as; any other — `source`, `involvedObject.name` — is refused "field label not supported". Through
core/v1 the label `source` is `source.component`, or `reportingComponent` when that is empty
(pkg/registry/core/event/strategy.go `ToSelectableFields`).
"""

from __future__ import annotations

from collections.abc import Callable

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj

EVENTS_V1 = "events.k8s.io/v1"
CORE_V1 = "v1"
KIND = "Event"

# events.k8s.io/v1 field -> core/v1 field
V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
CORE_TO_V1 = {core: v1 for v1, core in V1_TO_CORE.items()}

# events.k8s.io/v1 field label -> the core label it is evaluated as
FIELD_LABELS = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    "reason": "reason",
    "type": "type",
    "reportingController": "reportingComponent",
    **{
        f"regarding.{part}": f"involvedObject.{part}"
        for part in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
}


def to_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as (a shallow copy)."""
    out = {V1_TO_CORE.get(key, key): value for key, value in event.items()}
    out["apiVersion"], out["kind"] = CORE_V1, KIND
    return out


def to_v1(event: Obj) -> Obj:
    """A stored (core/v1) Event as events.k8s.io/v1 serves it (a shallow copy)."""
    out = {CORE_TO_V1.get(key, key): value for key, value in event.items()}
    out["apiVersion"], out["kind"] = EVENTS_V1, KIND
    return out


def core_field_selector(text: str) -> str:
    """An events.k8s.io/v1 field selector as the core/v1 selector it is evaluated as; 400 for a
    label events.k8s.io/v1 does not have. Terms that are not `label(=|==|!=)value` are left for
    the selector parser's own error."""
    if not text.strip():
        return text
    terms = []
    for term in text.split(","):
        for op in ("!=", "==", "="):
            if op in term:
                label, value = term.split(op, 1)
                core = FIELD_LABELS.get(label.strip())
                if core is None:
                    raise errors.bad_request(f"field label not supported: {label.strip()}")
                terms.append(f"{core}{op}{value}")
                break
        else:
            terms.append(term)
    return ",".join(terms)


def _source(event: Obj) -> str:
    source = event.get("source")
    component = source.get("component") if isinstance(source, dict) else None
    return str(component or event.get("reportingComponent") or "")


# core/v1 field labels whose value is not the field of that path
DERIVED_FIELDS: dict[str, Callable[[Obj], str]] = {"source": _source}
