"""core/v1 Event validation, as pkg/apis/core/validation/events.go legacyValidateEvent checks an
Event written through the core API (what client-go's and kubetrain's event recorders create and
patch). An Event without `eventTime` must live in its involved object's namespace — or, for a
cluster-scoped involved object, in "default"; one with `eventTime` names a
`reportingController` (a qualified name), a `reportingInstance` and an `action` (at most 128
characters each, as `reason`) and a message of at most 1024 characters. Through core/v1 the
controller's errors name the field `reportingComponent`, its core/v1 name (upstream's
`reportingControllerFieldName`); an update is checked as a create (`ValidateEventUpdate` holds
no field immutable for a core/v1 request: client-go's recorder patches count, lastTimestamp and
the message of an aggregated Event)."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.objectmeta import qualified_name_problems

LIMIT = 128
NOTE_LIMIT = 1024
CONTROLLER_FIELD = "reportingComponent"  # legacyValidateEvent, for a core/v1 request


def _invalid(field: str, value: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "{value}": {message}', field)


def core_event_causes(event: dict[str, Any]) -> list[Cause]:
    namespace = (event.get("metadata") or {}).get("namespace", "")
    involved = event.get("involvedObject") or {}
    involved_ns = str(involved.get("namespace") or "")
    causes: list[Cause] = []
    if not event.get("eventTime"):
        # a cluster-scoped involved object: "default" (or no namespace), for old clients
        mismatch = namespace != involved_ns if involved_ns else namespace not in ("", "default")
        if mismatch:
            causes.append(_invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        return causes
    if not involved_ns and namespace not in ("default", "kube-system"):
        causes.append(_invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    controller = str(event.get("reportingComponent") or "")
    if not controller:
        causes.append(Cause("FieldValueRequired", "Required value", CONTROLLER_FIELD))
    causes += [_invalid(CONTROLLER_FIELD, controller, p) for p in qualified_name_problems(controller)]
    for field in ("reportingInstance", "action", "reason"):
        value = str(event.get(field) or "")
        if not value:
            causes.append(Cause("FieldValueRequired", "Required value", field))
        if len(value) > LIMIT:
            causes.append(_invalid(field, "", f"can have at most {LIMIT} characters"))
    if len(str(event.get("message") or "")) > NOTE_LIMIT:
        causes.append(_invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return causes
