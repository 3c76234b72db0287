"""Lease leader election and the event recorder against an in-memory API with kube's
optimistic-concurrency rules, on a fake clock (the real-server versions are integration tests)."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any, cast

import pytest

from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.leader import LeaderElector
from kubetrain.kube.resources import EVENTS, ResourceRef

Obj = dict[str, Any]


class MemoryApi:
    """get/create/replace/patch with resourceVersion conflicts (409), AlreadyExists, 404."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.rv = 0
        self.down: set[str] = set()  # callers (by tag) whose requests fail like a partition
        self.calls: list[tuple[str, str]] = []

    def client(self, tag: str) -> KubeClient:
        return cast(KubeClient, _Client(self, tag))

    def _key(self, ref: ResourceRef, ns: str | None, name: str) -> tuple[str, str, str]:
        return (ref.plural, ns or "", name)

    def _bump(self, obj: Obj) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)


class _Client:
    def __init__(self, api: MemoryApi, tag: str) -> None:
        self.api = api
        self.tag = tag

    def _check(self, verb: str, ref: ResourceRef) -> None:
        self.api.calls.append((verb, ref.plural))
        if self.tag in self.api.down:
            raise ApiError(0, "ClientConnectionError", "network partition")

    async def get(self, ref: ResourceRef, ns: str | None, name: str) -> Obj:
        self._check("get", ref)
        obj = self.api.objects.get(self.api._key(ref, ns, name))
        if obj is None:
            raise ApiError(404, "NotFound", f'{ref.plural} "{name}" not found')
        return copy.deepcopy(obj)

    async def create(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> Obj:
        self._check("create", ref)
        meta = obj["metadata"]
        key = self.api._key(ref, meta.get("namespace"), meta["name"])
        if key in self.api.objects:
            raise ApiError(409, "AlreadyExists", f'{ref.plural} "{meta["name"]}" already exists')
        stored = copy.deepcopy(obj)
        self.api.objects[key] = stored
        return self.api._bump(stored)

    async def replace(self, ref: ResourceRef, obj: Obj) -> Obj:
        self._check("update", ref)
        meta = obj["metadata"]
        key = self.api._key(ref, meta.get("namespace"), meta["name"])
        current = self.api.objects.get(key)
        if current is None:
            raise ApiError(404, "NotFound", "not found")
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        stored = copy.deepcopy(obj)
        self.api.objects[key] = stored
        return self.api._bump(stored)

    async def patch(self, ref: ResourceRef, ns: str | None, name: str, patch: Obj, **_: Any) -> Obj:
        self._check("patch", ref)
        current = self.api.objects.get(self.api._key(ref, ns, name))
        if current is None:
            raise ApiError(404, "NotFound", "not found")
        current.update(patch)
        return self.api._bump(current)


def lease(api: MemoryApi) -> Obj:
    spec: Obj = api.objects[("leases", "kube-system", "kubetrain")]["spec"]
    return spec


def elector(api: MemoryApi, ident: str, clock: FakeClock, log: list[str]) -> LeaderElector:
    return LeaderElector(
        api.client(ident),
        namespace="kube-system",
        name="kubetrain",
        identity=ident,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        on_started_leading=lambda: log.append(f"{ident} started"),
        on_stopped_leading=lambda: log.append(f"{ident} stopped"),
        clock=clock,
    )


async def a_then_b(
    api: MemoryApi, clock: FakeClock, log: list[str]
) -> tuple[tuple[LeaderElector, asyncio.Future[None]], tuple[LeaderElector, asyncio.Future[None]]]:
    """Electors "a" and "b" running, "a" started first (at the same instant on the clock)."""
    a, b = elector(api, "a", clock, log), elector(api, "b", clock, log)
    run_a = asyncio.ensure_future(a.run())
    await clock.advance(0)
    return (a, run_a), (b, asyncio.ensure_future(b.run()))


async def test_only_one_of_two_electors_leads_and_the_other_takes_over_after_release() -> None:
    api, clock, log = MemoryApi(), FakeClock(), list[str]()
    (a, run_a), (b, run_b) = await a_then_b(api, clock, log)
    for _ in range(10):
        await clock.advance(2)
    assert a.is_leader and not b.is_leader
    assert b.leader == "a"
    assert log == ["a started"]
    assert lease(api)["holderIdentity"] == "a" and lease(api)["leaseTransitions"] == 0
    a.stop()
    await clock.advance(0)
    await asyncio.wait_for(run_a, 1)
    assert lease(api)["holderIdentity"] == ""  # released on graceful stop
    await clock.advance(2)  # b's next retry: no need to wait out the lease
    assert b.is_leader
    assert lease(api)["holderIdentity"] == "b" and lease(api)["leaseTransitions"] == 1
    assert log == ["a started", "a stopped", "b started"]
    run_b.cancel()
    await asyncio.gather(run_b, return_exceptions=True)


async def test_a_leader_that_cannot_renew_steps_down_and_a_standby_takes_over_after_expiry() -> None:
    api, clock, log = MemoryApi(), FakeClock(), list[str]()
    (a, run_a), (b, run_b) = await a_then_b(api, clock, log)
    await clock.advance(4)
    assert a.is_leader
    api.down.add("a")  # a is partitioned from the API server
    await clock.advance(11)  # the renewal started at t=6 has 10 s to succeed
    assert a.is_leader
    await clock.advance(2)  # t=17: the renew deadline has passed
    assert not a.is_leader
    await asyncio.wait_for(run_a, 1)
    assert log == ["a started", "a stopped"]
    assert not b.is_leader  # b last saw the lease change at t=4: not expired before t=19
    await clock.advance(4)
    assert b.is_leader
    assert lease(api)["holderIdentity"] == "b"
    run_b.cancel()
    await asyncio.gather(run_b, return_exceptions=True)


async def test_racing_candidates_cannot_both_win_a_free_lease() -> None:
    api, clock = MemoryApi(), FakeClock()
    a, b = elector(api, "a", clock, []), elector(api, "b", clock, [])
    assert await a.try_acquire_or_renew()
    await clock.advance(20)  # a stopped renewing: expired for everybody observing it
    b_view = elector(api, "b", clock, [])
    assert not await b_view.try_acquire_or_renew()  # first look: starts b's expiry observation
    c = elector(api, "c", clock, [])
    assert not await c.try_acquire_or_renew()
    await clock.advance(16)
    # both see it expired; both PUT with the same resourceVersion: exactly one wins
    results = await asyncio.gather(b_view.try_acquire_or_renew(), c.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert lease(api)["leaseTransitions"] == 1
    del b


async def test_cancelling_run_releases_the_lease_and_cancels_the_leading_task() -> None:
    api, clock = MemoryApi(), FakeClock()
    working = asyncio.Event()
    cancelled: list[bool] = []

    async def lead() -> None:
        working.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    el = LeaderElector(
        api.client("a"), namespace="kube-system", name="kubetrain", identity="a",
        lease_duration=3, renew_deadline=2, retry_period=1, on_started_leading=lead, clock=clock,
    )  # fmt: skip
    task = asyncio.ensure_future(el.run())
    await clock.advance(0)
    await asyncio.wait_for(working.wait(), 1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert cancelled == [True]
    assert lease(api)["holderIdentity"] == ""


# --- events ------------------------------------------------------------------------------------

JOB = {
    "apiVersion": "kubetrain.io/v1",
    "kind": "TFJob",
    "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}


async def test_repeated_identical_events_are_aggregated_into_one_object() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), host="node-1", clock=clock)
    await rec.event(JOB, "Warning", "FailedCreatePod", "quota exceeded")
    await clock.advance(30)
    await rec.event(JOB, "Warning", "FailedCreatePod", "quota exceeded")
    await rec.event(JOB, "Normal", "SuccessfulCreatePod", "Created pod j-worker-0")
    events = [o for (plural, _, _), o in api.objects.items() if plural == EVENTS.plural]
    assert len(events) == 2
    failed = next(e for e in events if e["reason"] == "FailedCreatePod")
    assert failed["count"] == 2
    assert failed["firstTimestamp"] == "2024-01-01T00:00:00Z"
    assert failed["lastTimestamp"] == "2024-01-01T00:00:30Z"
    assert failed["involvedObject"] == {
        "apiVersion": "kubetrain.io/v1", "kind": "TFJob", "name": "j", "namespace": "ns",
        "uid": "u-1", "resourceVersion": "7",
    }  # fmt: skip
    assert failed["type"] == "Warning"
    assert failed["metadata"]["namespace"] == "ns"
    assert failed["metadata"]["name"].startswith("j.")
    assert failed["source"] == {"component": "kubetrain-operator", "host": "node-1"}
    assert [c[0] for c in api.calls] == ["create", "patch", "create"]


async def test_an_expired_aggregated_event_is_recreated() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), clock=clock)
    await rec.event(JOB, "Normal", "Restarting", "pod j-worker-0 exited 137")
    api.objects.clear()  # the API server's event TTL removed it
    await clock.advance(1)
    await rec.event(JOB, "Normal", "Restarting", "pod j-worker-0 exited 137")
    assert len(api.objects) == 1
    assert next(iter(api.objects.values()))["count"] == 1


async def test_recording_never_raises_into_the_caller() -> None:
    api, clock = MemoryApi(), FakeClock()
    api.down.add("op")
    rec = EventRecorder(api.client("op"), clock=clock)
    await rec.event(JOB, "Warning", "FailedCreatePod", "x")  # logged, not raised
    await rec.event(JOB, "Bogus", "Reason", "x")  # invalid type: logged too
    rec.emit(JOB, "Normal", "Created", "y")
    await rec.flush()
    assert api.objects == {}


class _Refusing:
    """An API server that refuses every Event with `err`."""

    def __init__(self, err: ApiError) -> None:
        self.err = err

    async def create(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> Obj:
        raise self.err


TERMINATING = ApiError(
    403,
    "Forbidden",
    'events "j.1" is forbidden: unable to create new content in namespace ns because it is being terminated',
    {
        "kind": "Status",
        "reason": "Forbidden",
        "details": {"name": "j.1", "kind": "events", "causes": [{"reason": "NamespaceTerminating"}]},
        "code": 403,
    },
)


async def test_an_event_refused_for_a_terminating_namespace_is_dropped_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # client-go's recordEvent (tools/record/event.go): a StatusError that IsAlreadyExists or has
    # the NamespaceTerminating cause is logged at V(5) only; any other refusal is an error.
    forbidden = ApiError(403, "Forbidden", 'events is forbidden: User "op" cannot create resource "events"')
    exists = ApiError(409, "AlreadyExists", 'events "j.1" already exists')
    logged = []
    for err in (TERMINATING, exists, forbidden):
        caplog.clear()
        rec = EventRecorder(cast(KubeClient, _Refusing(err)), clock=FakeClock())
        with caplog.at_level(logging.DEBUG, logger="kubetrain.kube.events"):
            await rec.event(JOB, "Normal", "SuccessfulDeletePod", "Deleted pod: j-worker-0", budgeted=True)
        logged.append([r.levelno for r in caplog.records])
    assert logged == [[logging.DEBUG], [logging.DEBUG], [logging.WARNING]]


async def test_emit_writes_in_the_background_and_long_messages_are_truncated() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), clock=clock)
    rec.emit(JOB, "Normal", "Created", "m" * 5000)
    rec.emit(JOB, "Normal", "Created", "m" * 5000)
    await rec.flush()
    (event,) = api.objects.values()
    assert len(event["message"]) == 1024
    assert event["count"] == 2  # concurrent identical emits still aggregate
