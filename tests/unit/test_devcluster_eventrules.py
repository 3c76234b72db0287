"""devcluster's core/v1 Event validation (kinds/eventrules.py) against upstream's
pkg/apis/core/validation/events.go `legacyValidateEvent` / `ValidateEventUpdate` for a core/v1
request."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtins


def event(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "j.1", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "j"},
        "reason": "Created",
        "message": "m",
        **fields,
    }


def causes(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    return [(c.reason, c.field, c.message) for c in builtins.validate_builtin("events", obj, old)]


def test_a_new_style_event_names_its_controller_by_the_core_v1_field() -> None:
    """With eventTime set the controller is required and a qualified name; through core/v1 the
    error names `reportingComponent` (the core/v1 field), not events.k8s.io's
    `reportingController`."""
    new_style = event(eventTime="2026-01-01T00:00:00.000000Z", reportingInstance="h", action="Create")
    assert causes({**new_style, "reportingComponent": "kubetrain-operator"}) == []
    assert causes(new_style) == [
        ("FieldValueRequired", "reportingComponent", "Required value"),
        ("FieldValueInvalid", "reportingComponent", 'Invalid value: "": name part must be non-empty'),
        (
            "FieldValueInvalid",
            "reportingComponent",
            "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ]


def test_a_core_v1_update_may_change_what_the_recorder_patches_but_not_the_namespace_rule() -> None:
    """client-go's recorder (and kubetrain's) patches count, lastTimestamp and a combined
    Event's message; no field is immutable through core/v1. The namespace must still match."""
    old = event(count=1, lastTimestamp="2026-01-01T00:00:00Z")
    assert causes(event(count=2, lastTimestamp="2026-01-01T00:00:05Z", message="combined"), old) == []
    moved = event(involvedObject={"kind": "Pod", "namespace": "other", "name": "j"})
    assert causes(moved, old) == [
        (
            "FieldValueInvalid",
            "involvedObject.namespace",
            'Invalid value: "other": does not match event.namespace',
        )
    ]
    cluster_scoped = event(involvedObject={"kind": "Node", "name": "n"})
    cluster_scoped["metadata"]["namespace"] = "default"
    assert causes(cluster_scoped) == []


def v1_causes(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    """The problems of a stored Event written through events.k8s.io/v1."""
    return [
        (c.reason, c.field, c.message)
        for c in builtins.validate_builtin("events", obj, old, "events.k8s.io/v1")
    ]


NEW_STYLE = {
    "eventTime": "2026-01-01T00:00:00.000000Z",
    "reportingComponent": "default-scheduler",
    "reportingInstance": "default-scheduler-h",
    "action": "Scheduling",
    "type": "Warning",
}


def test_events_k8s_io_creates_need_a_new_style_event_without_the_deprecated_fields() -> None:
    """ValidateEventCreate for events.k8s.io/v1: eventTime required, type Normal or Warning, the
    deprecated fields unset, a series counted from 2 — paths in the stored (core) names, the
    controller's as events.k8s.io's `reportingController`."""
    assert v1_causes(event(**NEW_STYLE)) == []
    old_style = event(type="Bogus", count=1, firstTimestamp="2026-01-01T00:00:00Z", source={"host": "h"})
    assert v1_causes(old_style) == [
        ("FieldValueRequired", "eventTime", "Required value"),
        ("FieldValueInvalid", "type", 'Invalid value: "": has invalid value: Bogus'),
        ("FieldValueInvalid", "firstTimestamp", 'Invalid value: "": needs to be unset'),
        ("FieldValueInvalid", "count", 'Invalid value: "": needs to be unset'),
        ("FieldValueInvalid", "source", 'Invalid value: "": needs to be unset'),
    ]
    no_controller = event(**{**NEW_STYLE, "reportingComponent": "", "series": {"count": 1}})
    assert v1_causes(no_controller)[:1] == [("FieldValueRequired", "reportingController", "Required value")]
    assert v1_causes(no_controller)[-2:] == [
        ("FieldValueInvalid", "series.count", 'Invalid value: "": should be at least 2'),
        ("FieldValueRequired", "series.lastObservedTime", "Required value"),
    ]
    # the same Events through core/v1: only the legacy rules
    assert causes(old_style) == []


def test_events_k8s_io_updates_change_only_the_series_and_the_event_time_below_a_microsecond() -> None:
    old = event(**NEW_STYLE)
    series = {"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"}
    assert v1_causes(event(**NEW_STYLE, series=series), old) == []
    nanos = {**NEW_STYLE, "eventTime": "2026-01-01T00:00:00.000000900Z"}
    assert v1_causes(event(**nanos), old) == []
    changed = event(**{**NEW_STYLE, "reportingComponent": "other", "action": "Binding"}, reason="Scheduled")
    assert v1_causes(changed, old) == [
        ("FieldValueInvalid", "reason", 'Invalid value: "Scheduled": field is immutable'),
        ("FieldValueInvalid", "reason", 'Invalid value: "Scheduled": field is immutable'),
        ("FieldValueInvalid", "action", 'Invalid value: "Binding": field is immutable'),
        ("FieldValueInvalid", "reportingController", 'Invalid value: "other": field is immutable'),
    ]
    assert causes(changed, old) == []  # core/v1: nothing immutable


SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def named(name: str, **fields: Any) -> dict[str, Any]:
    obj = event(**fields)
    obj["metadata"]["name"] = name
    return obj


def test_a_core_v1_event_name_need_only_be_a_path_segment() -> None:
    """Through core/v1, ValidateEventCreate checks no name: the generic registry's BeforeCreate
    asks a path segment (IsValidPathSegmentName), once the strategy's checks passed."""
    for name in ("Pod_A:1", "x" * 300, "a b", "..."):
        assert causes(named(name)) == []
    assert causes(named(".")) == [
        ("FieldValueInvalid", "metadata.name", "Invalid value: \".\": may not be '.'")
    ]
    assert causes(named("..")) == [
        ("FieldValueInvalid", "metadata.name", "Invalid value: \"..\": may not be '..'")
    ]
    assert causes(named("a/b%c")) == [
        ("FieldValueInvalid", "metadata.name", "Invalid value: \"a/b%c\": may not contain '/'"),
        ("FieldValueInvalid", "metadata.name", "Invalid value: \"a/b%c\": may not contain '%'"),
    ]
    # the strategy's errors come back alone
    moved = named("a/b", involvedObject={"kind": "Pod", "namespace": "other", "name": "j"})
    assert [field for _, field, _ in causes(moved)] == ["involvedObject.namespace"]
    # an update checks no name (it cannot change)
    assert causes(named("a/b"), named("a/b")) == []


def test_an_events_k8s_io_event_name_is_a_dns_subdomain() -> None:
    """Through events.k8s.io/v1, ValidateEventCreate's ValidateObjectMeta(NameIsDNSSubdomain):
    after the legacy problems, before the strict ones."""
    assert v1_causes(named("pod-a.1", **NEW_STYLE)) == []
    assert v1_causes(named("Pod_A:1", **NEW_STYLE)) == [
        ("FieldValueInvalid", "metadata.name", f'Invalid value: "Pod_A:1": {SUBDOMAIN}')
    ]
    assert v1_causes(named("a" * 254, **NEW_STYLE)) == [
        (
            "FieldValueInvalid",
            "metadata.name",
            f'Invalid value: "{"a" * 254}": must be no more than 253 characters',
        )
    ]
    ordered = named("A", **{**NEW_STYLE, "reportingInstance": "", "type": "Bogus"})
    assert [field for _, field, _ in v1_causes(ordered)] == ["reportingInstance", "metadata.name", "type"]
    # an update checks no name
    assert v1_causes(named("Pod_A:1", **NEW_STYLE), named("Pod_A:1", **NEW_STYLE)) == []


def generated(prefix: str, name: str, **fields: Any) -> dict[str, Any]:
    """An Event created with `generateName: prefix`, `name` the one the server generated."""
    obj = named(name, **fields)
    obj["metadata"]["generateName"] = prefix
    return obj


def test_a_core_v1_event_generate_name_is_a_path_segment_prefix() -> None:
    """BeforeCreate's ValidateObjectMetaAccessor checks generateName with ValidatePathSegmentName
    as a prefix (IsValidPathSegmentPrefix: no '/' or '%'; '.' allowed), before the name."""
    for prefix in ("Pod_A:", ".", "x" * 300):
        assert causes(generated(prefix, prefix + "abcde")) == []
    assert causes(generated("a%", "a%bcdef")) == [
        ("FieldValueInvalid", "metadata.generateName", "Invalid value: \"a%\": may not contain '%'"),
        ("FieldValueInvalid", "metadata.name", "Invalid value: \"a%bcdef\": may not contain '%'"),
    ]
    # an update checks no generateName
    assert causes(generated("a%", "a%bcdef"), generated("a%", "a%bcdef")) == []


def test_an_events_k8s_io_event_generate_name_is_a_dns_subdomain_prefix() -> None:
    """ValidateObjectMeta(NameIsDNSSubdomain) checks generateName as a prefix: a trailing dash
    is allowed (masked), anything else a subdomain refuses is refused, before the name."""
    assert v1_causes(generated("pod.a", "pod.axyz12", **NEW_STYLE)) == []
    assert v1_causes(generated("pod-a-", "pod-a-xyz12", **NEW_STYLE)) == []
    assert v1_causes(generated("Pod_A-", "Pod_A-xyz12", **NEW_STYLE)) == [
        ("FieldValueInvalid", "metadata.generateName", f'Invalid value: "Pod_A-": {SUBDOMAIN}'),
        ("FieldValueInvalid", "metadata.name", f'Invalid value: "Pod_A-xyz12": {SUBDOMAIN}'),
    ]
    # a prefix core/v1 accepts
    assert [field for _, field, _ in v1_causes(generated("Pod_A:", "pod-a", **NEW_STYLE))] == [
        "metadata.generateName"
    ]
