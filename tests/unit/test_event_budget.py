"""The budget of per-pod Events (kubetrain/kube/eventbudget.py), as client-go's EventCorrelator:
burst 25 writes per involved object refilled one per 5 minutes, similar events combined from the
10th distinct message in 10 minutes, and events outside the budget never starved by it. All on
a fake clock against an in-memory API."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.eventbudget import EventBudget
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.resources import EVENTS
from tests.unit.test_kube_leader_events import MemoryApi

Obj = dict[str, Any]
JOB: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "big", "namespace": "ns", "uid": "u-1", "resourceVersion": "3"},
}
OTHER = {**JOB, "metadata": {**JOB["metadata"], "name": "other", "uid": "u-2"}}
OBJ = ("u-1", "PyTorchJob", "ns", "big", "kubeflow.org/v1")


def events(api: MemoryApi) -> list[Obj]:
    return [o for (plural, _, _), o in api.objects.items() if plural == EVENTS.plural]


def writes(api: MemoryApi) -> int:
    return sum(1 for verb, plural in api.calls if plural == EVENTS.plural and verb in ("create", "patch"))


async def create_pods(rec: EventRecorder, job: Obj, first: int, count: int) -> None:
    for i in range(first, first + count):
        rec.emit(
            job,
            "Normal",
            "SuccessfulCreatePod",
            f"Created pod: {job['metadata']['name']}-worker-{i}",
            budgeted=True,
        )
    await rec.flush()


async def test_a_token_bucket_gives_25_then_one_per_5_minutes_up_to_25() -> None:
    clock = FakeClock()
    budget = EventBudget(clock)
    assert [budget.allow(OBJ) for _ in range(26)] == [True] * 25 + [False]
    await clock.advance(299)
    assert not budget.allow(OBJ)
    await clock.advance(1)
    assert [budget.allow(OBJ) for _ in range(2)] == [True, False]
    await clock.advance(3 * 3600)  # refilled far past the burst: still 25
    assert sum(budget.allow(OBJ) for _ in range(40)) == 25
    assert budget.allow(("u-2", "PyTorchJob", "ns", "other", "kubeflow.org/v1"))  # its own bucket


async def test_the_tenth_distinct_message_in_ten_minutes_is_combined() -> None:
    clock = FakeClock()
    budget = EventBudget(clock)
    got = [budget.aggregate(OBJ, "Normal", "SuccessfulCreatePod", f"Created pod: p-{i}") for i in range(11)]
    assert got[:9] == [(f"Created pod: p-{i}", False) for i in range(9)]
    assert got[9:] == [
        ("(combined from similar events): Created pod: p-9", True),
        ("(combined from similar events): Created pod: p-10", True),
    ]
    # another reason (or type) is another group
    assert budget.aggregate(OBJ, "Normal", "SuccessfulDeletePod", "Deleted pod: p-0") == (
        "Deleted pod: p-0",
        False,
    )
    await clock.advance(600)  # not more than 10 minutes since the last one: still combined
    assert budget.aggregate(OBJ, "Normal", "SuccessfulCreatePod", "Created pod: p-11")[1]
    await clock.advance(601)  # a quiet 10 minutes: the window starts again
    assert budget.aggregate(OBJ, "Normal", "SuccessfulCreatePod", "Created pod: p-12") == (
        "Created pod: p-12",
        False,
    )


def test_a_budget_refuses_settings_that_would_never_write() -> None:
    with pytest.raises(ValueError, match="burst"):
        EventBudget(FakeClock(), burst=0)


async def test_a_1000_pod_job_writes_25_events_then_none_until_the_refill() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), host="node-1", clock=clock)
    await create_pods(rec, JOB, 0, 1000)
    assert writes(api) == 25  # 9 Events of their own, the combined one, 15 bumps of it
    single = sorted(e["message"] for e in events(api) if not e["message"].startswith("(combined"))
    assert single == sorted(f"Created pod: big-worker-{i}" for i in range(9))
    (combined,) = (e for e in events(api) if e["message"].startswith("(combined"))
    assert combined["message"] == "(combined from similar events): Created pod: big-worker-24"
    # Every occurrence is counted, written or not (as client-go's eventLogger counts them): the
    # 975 over budget were emitted before the combined Event's writes went out.
    assert (combined["count"], combined["type"], combined["reason"]) == (991, "Normal", "SuccessfulCreatePod")
    assert combined["involvedObject"]["kind"] == "PyTorchJob"

    await clock.advance(299)
    await create_pods(rec, JOB, 1000, 1)
    assert writes(api) == 25  # no token yet
    await clock.advance(1)
    await create_pods(rec, JOB, 1001, 2)
    assert writes(api) == 26  # one token in 5 minutes, one write
    (combined,) = (e for e in events(api) if e["message"].startswith("(combined"))
    assert combined["count"] == 1003 - 9  # every pod but the 9 with an Event of their own
    assert combined["message"] == "(combined from similar events): Created pod: big-worker-1001"


async def test_events_outside_the_budget_are_never_starved_by_per_pod_ones() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), clock=clock)
    await create_pods(rec, JOB, 0, 100)
    assert writes(api) == 25
    await rec.event(JOB, "Normal", "PyTorchJobRunning", "PyTorchJob big is running.")
    await rec.event(JOB, "Warning", "FailedCreatePod", "could not create pod big-worker-100: quota")
    reasons = {e["reason"] for e in events(api)}
    assert {"PyTorchJobRunning", "FailedCreatePod"} <= reasons
    await create_pods(rec, OTHER, 0, 3)  # another job has its own budget
    assert sum(1 for e in events(api) if e["involvedObject"]["name"] == "other") == 3


async def test_an_identical_budgeted_event_bumps_its_event_and_takes_a_token() -> None:
    api, clock = MemoryApi(), FakeClock()
    rec = EventRecorder(api.client("op"), clock=clock)
    for _ in range(30):
        await rec.event(JOB, "Normal", "SuccessfulDeletePod", "Deleted pod: big-worker-0", budgeted=True)
    (event,) = events(api)
    assert event["count"] == 25 and writes(api) == 25


class SlowEvents:
    """Creates Events after a loop turn, noting how many were in flight at once."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.created: list[str] = []

    async def create(self, ref: Any, obj: Obj, namespace: str | None = None) -> Obj:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        self.created.append(obj["reason"])
        return obj


async def test_budgeted_events_are_written_one_at_a_time_and_others_are_not_held_up() -> None:
    api = SlowEvents()
    rec = EventRecorder(cast(KubeClient, api), clock=FakeClock())
    for i in range(8):
        rec.emit(JOB, "Normal", "SuccessfulCreatePod", f"Created pod: big-worker-{i}", budgeted=True)
    rec.emit(JOB, "Warning", "FailedCreateService", "could not create Service big: quota")
    await rec.flush()
    assert api.most == 2  # one budgeted write, and the Warning beside it
    assert api.created.count("SuccessfulCreatePod") == 8
    assert api.created.index("FailedCreateService") < 7  # not queued behind the per-pod ones
