"""Event validation, as pkg/apis/core/validation/events.go checks the stored (core) Event per the
request's group version (`ValidateEventCreate` / `ValidateEventUpdate(new, old, requestVersion)`).

Every write passes `legacyValidateEvent`: an Event without `eventTime` must live in its
involved object's namespace — or, for a cluster-scoped involved object, in "default"; one with
`eventTime` names a `reportingController` (a qualified name), a `reportingInstance` and an
`action` (at most 128 characters each, as `reason`) and a message of at most 1024 characters.
Through core/v1 the controller's errors name the field `reportingComponent`, its core/v1 name
(upstream's `reportingControllerFieldName`), and nothing more is checked: an update is checked as
a create (client-go's recorder patches count, lastTimestamp and the message of an aggregated
Event). The name of an Event created through core/v1 need only be a valid path segment (not `.`
or `..`, no `/` or `%`: the generic registry's `BeforeCreate`, checked only when the rules above
pass, as upstream returns the strategy's errors first), so `Pod_A:1` or a 300-character name is
accepted; through events.k8s.io/v1 it must be a DNS-1123 subdomain (`ValidateObjectMeta(...,
NameIsDNSSubdomain)`, reported after the legacy rules' problems and before the strict ones').
A `generateName` is checked first, by the same version's rule as a prefix (core/v1:
`IsValidPathSegmentPrefix`, no `/` or `%`, `.` allowed; events.k8s.io/v1: a DNS-1123 subdomain
once a trailing dash is masked), at `metadata.generateName`; the generated name is checked too,
so a bad prefix is reported at both paths, as upstream.

Through events.k8s.io/v1 (`via` EVENTS_V1) the strict rules follow, with the stored (core)
field names in their paths as upstream's: a create needs `eventTime` and a `type` of Normal or
Warning, and must leave `firstTimestamp`, `lastTimestamp`, `count` and `source` unset
(`deprecated*` in events.k8s.io/v1); a `series` needs a count of at least 2 and a
`lastObservedTime`. An update may change only the series (checked again when changed), the
metadata and — to the microsecond — nothing else: every other field is immutable ("field is
immutable"; `reason` is checked twice, so reported twice, as upstream's list has it twice).
**Limit:** an immutable object or time field's value is shown as its JSON, where Go prints the
internal type."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors
from kubetrain.devcluster.apiserver.kinds.eventsv1 import EVENTS_V1
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    dns1123_subdomain_errors,
    dns1123_subdomain_prefix_errors,
    path_segment_name_problems,
    path_segment_prefix_problems,
    qualified_name_problems,
)

LIMIT = 128
NOTE_LIMIT = 1024
CONTROLLER_FIELD = "reportingComponent"  # legacyValidateEvent, for a core/v1 request
TYPES = ("Normal", "Warning")
# ValidateEventUpdate's immutable fields, in its order (the stored, core/v1, names)
IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
# the field paths of the immutable fields whose events.k8s.io/v1 error names another
_PATHS = {"reportingComponent": "reportingController"}
_ZERO: dict[str, Any] = {"count": 0, "source": {}}


def _invalid(field: str, value: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "{value}": {message}', field)


def event_causes(event: dict[str, Any], old: dict[str, Any] | None, via: str = "") -> list[Cause]:
    """The problems of a stored (core/v1) Event written through `via` (the request's group
    version: "v1" or "" for core/v1, EVENTS_V1), its name's on a create."""
    strict = via == EVENTS_V1
    causes = legacy_causes(event, "reportingController" if strict else CONTROLLER_FIELD)
    md = event.get("metadata") or {}
    name, prefix = str(md.get("name") or ""), str(md.get("generateName") or "")
    if not strict:
        if old is None and not causes:  # BeforeCreate's check, once the strategy's passed
            causes = [
                _invalid("metadata.generateName", prefix, p) for p in path_segment_prefix_problems(prefix)
            ]
            causes += [_invalid("metadata.name", name, p) for p in path_segment_name_problems(name)]
        return causes
    if old is None:
        problems = dns1123_subdomain_prefix_errors(prefix) if prefix else []  # only one given
        causes += [_invalid("metadata.generateName", prefix, p) for p in problems]
        causes += [_invalid("metadata.name", name, p) for p in dns1123_subdomain_errors(name)]
        return causes + _create_causes(event)
    if event.get("series") != old.get("series"):
        causes += _series_causes(event)
    for field in IMMUTABLE:
        value = _normalized(field, event.get(field))
        if field == "eventTime":
            same = _micro(value) == _micro(_normalized(field, old.get(field)))
        else:
            same = value == _normalized(field, old.get(field))
        if not same:
            shown = "" if value is None else value
            causes.append(fielderrors.invalid(_PATHS.get(field, field), shown, "field is immutable"))
    return causes


def legacy_causes(event: dict[str, Any], controller_field: str = CONTROLLER_FIELD) -> list[Cause]:
    """`legacyValidateEvent`: what every Event write must pass."""
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
        causes.append(Cause("FieldValueRequired", "Required value", controller_field))
    causes += [_invalid(controller_field, controller, p) for p in qualified_name_problems(controller)]
    for field in ("reportingInstance", "action", "reason"):
        value = str(event.get(field) or "")
        if not value:
            causes.append(Cause("FieldValueRequired", "Required value", field))
        if len(value) > LIMIT:
            causes.append(_invalid(field, "", f"can have at most {LIMIT} characters"))
    if len(str(event.get("message") or "")) > NOTE_LIMIT:
        causes.append(_invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return causes


def core_event_causes(event: dict[str, Any]) -> list[Cause]:
    """A core/v1 request's checks (`legacyValidateEvent` alone)."""
    return legacy_causes(event)


def _create_causes(event: dict[str, Any]) -> list[Cause]:
    causes = _series_causes(event)
    if not event.get("eventTime"):
        causes.append(Cause("FieldValueRequired", "Required value", "eventTime"))
    kind = event.get("type")
    if kind not in TYPES:
        causes.append(_invalid("type", "", f"has invalid value: {'' if kind is None else kind}"))
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(field):
            causes.append(_invalid(field, "", "needs to be unset"))
    source = event.get("source")
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(_invalid("source", "", "needs to be unset"))
    return causes


def _series_causes(event: dict[str, Any]) -> list[Cause]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    causes: list[Cause] = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(_invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(Cause("FieldValueRequired", "Required value", "series.lastObservedTime"))
    return causes


def _normalized(field: str, value: Any) -> Any:
    """Absent and Go's zero value are one value (the stored Go struct cannot tell them apart)."""
    if value is None or value == "" or value == _ZERO.get(field):
        return _ZERO.get(field)
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v not in (None, "")}
    return value


def _micro(value: Any) -> Any:
    """A MicroTime compared to the microsecond (a finer fraction is cut, as upstream truncates)."""
    if not isinstance(value, str) or "." not in value:
        return value
    head, _, tail = value.partition(".")
    digits = "".join(c for c in tail if c.isdigit())
    zone = tail[len(digits) :]
    return f"{head}.{(digits + '000000')[:6]}{zone}"
