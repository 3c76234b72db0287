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
