"""The events.k8s.io/v1 view of the stored core Events (kinds/eventsv1.py): upstream's field
renaming both ways, nothing lost, and the events.k8s.io/v1 field labels mapped to the core ones."""

from __future__ import annotations

import pytest

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.kinds import eventsv1

V1 = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "p.1", "namespace": "ns"},
    "eventTime": "2026-01-01T00:00:00.000000Z",
    "series": {"count": 3, "lastObservedTime": "2026-01-01T00:06:00.000000Z"},
    "reportingController": "default-scheduler",
    "reportingInstance": "default-scheduler-h",
    "action": "Scheduling",
    "reason": "FailedScheduling",
    "regarding": {"kind": "Pod", "namespace": "ns", "name": "p"},
    "related": {"kind": "Node", "name": "n"},
    "note": "0/1 nodes are available",
    "type": "Warning",
    "deprecatedSource": {"component": "c"},
    "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
    "deprecatedLastTimestamp": "2026-01-01T00:00:01Z",
    "deprecatedCount": 2,
}


def test_the_two_forms_have_the_same_fields_under_upstreams_names() -> None:
    core = eventsv1.to_core(V1)
    assert core["apiVersion"] == "v1"
    assert {k: core[k] for k in ("involvedObject", "message", "reportingComponent", "source", "count")} == {
        "involvedObject": V1["regarding"],
        "message": V1["note"],
        "reportingComponent": "default-scheduler",
        "source": {"component": "c"},
        "count": 2,
    }
    assert (core["firstTimestamp"], core["lastTimestamp"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z")
    for kept in (
        "eventTime",
        "series",
        "related",
        "action",
        "type",
        "reason",
        "reportingInstance",
        "metadata",
    ):
        assert core[kept] == V1[kept]
    assert len(core) == len(V1)
    assert eventsv1.to_v1(core) == V1


def test_events_k8s_io_field_labels_are_evaluated_as_the_core_labels() -> None:
    assert eventsv1.core_field_selector("regarding.name=p,reportingController!=x,type==Warning") == (
        "involvedObject.name=p,reportingComponent!=x,type==Warning"
    )
    assert eventsv1.core_field_selector("") == ""
    for label in ("source", "involvedObject.name", "note"):
        with pytest.raises(ApiError) as refused:
            eventsv1.core_field_selector(f"{label}=x")
        assert (refused.value.code, refused.value.message) == (400, f"field label not supported: {label}")


def test_the_core_source_label_falls_back_to_the_reporting_component() -> None:
    source = eventsv1.DERIVED_FIELDS["source"]
    assert source({"source": {"component": "kubelet"}, "reportingComponent": "x"}) == "kubelet"
    assert source({"source": {}, "reportingComponent": "default-scheduler"}) == "default-scheduler"
    assert source({}) == ""
