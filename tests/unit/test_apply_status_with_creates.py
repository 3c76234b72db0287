"""A plan's status write goes out while its pods are being created (the status is the plan's,
whatever the creates answer): a reconcile that creates pods and writes its status costs one API
round trip less than creates-then-status. The writes are the same; a refused create still fails
the reconcile, and a status conflict still skips the plan's events."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.resources import ResourceRef, job_resources_in
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.apply import PlanApplier
from kubetrain.operator.draft import EventSpec, Plan

REF = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
KEY = "PyTorchJob/ns/job"
JOB = {  # a kubeflow.org job: it gets training-operator's per-pod Events
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "job", "namespace": "ns", "uid": "u1", "resourceVersion": "5"},
}


class Server:
    """Answers each write after a loop turn and logs when each is sent and answered."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.refuse_pods: set[str] = set()
        self.status_conflict = False

    async def create_only(self, ref: ResourceRef, obj: dict[str, Any], namespace: str | None = None) -> None:
        name = obj["metadata"]["name"]
        self.log.append(f"send {name}")
        await asyncio.sleep(0)
        self.log.append(f"done {name}")
        if name in self.refuse_pods:
            raise ApiError(403, "Forbidden", "exceeded quota")

    async def replace_status(self, ref: ResourceRef, obj: dict[str, Any]) -> dict[str, Any]:
        self.log.append("send status")
        await asyncio.sleep(0)
        self.log.append("done status")
        if self.status_conflict:
            raise ApiError(409, "Conflict", "the object has been modified")
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "6"}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []  # the plan's events
        self.per_pod: list[str] = []  # the budgeted per-pod ones, sent as each write returns

    def emit(
        self, obj: dict[str, Any], type_: str, reason: str, message: str, *, budgeted: bool = False
    ) -> None:
        (self.per_pod if budgeted else self.events).append(reason)


def applier(server: Server, recorder: Recorder) -> PlanApplier:
    cache = Cache()
    cache.store(REF).upsert(JOB)
    return PlanApplier(
        client=cast(KubeClient, server),
        cache=cache,
        queue=WorkQueue(),
        expectations=Expectations(),
        recorder=cast(EventRecorder, recorder),
        pod_group_ref=None,
    )


def plan(pods: int) -> Plan:
    return Plan(
        create_pods=[{"metadata": {"name": f"job-worker-{i}", "namespace": "ns"}} for i in range(pods)],
        status={"conditions": [{"type": "Created", "status": "True"}]},
        events=[EventSpec("Normal", "Created", "created")],
    )


async def test_the_status_write_is_sent_with_the_first_pod_create() -> None:
    server, recorder = Server(), Recorder()
    await applier(server, recorder).apply(KEY, REF, JOB, plan(4))
    # Slow start 1, 2, 1 — and the status goes out with the first create, not after the last.
    assert server.log.index("send status") < server.log.index("done job-worker-0")
    assert sorted(e for e in server.log if e.startswith("send")) == [
        "send job-worker-0",
        "send job-worker-1",
        "send job-worker-2",
        "send job-worker-3",
        "send status",
    ]
    assert recorder.events == ["Created"]  # after both: the status was written
    assert recorder.per_pod == ["SuccessfulCreatePod"] * 4  # one per pod the server created


async def test_a_refused_create_still_fails_the_reconcile_after_the_status_is_written() -> None:
    server, recorder = Server(), Recorder()
    server.refuse_pods = {"job-worker-0"}
    a = applier(server, recorder)
    with pytest.raises(ApiError) as err:
        await a.apply(KEY, REF, JOB, plan(4))
    assert err.value.status == 403
    assert "done status" in server.log
    assert [e for e in server.log if e.startswith("send job")] == ["send job-worker-0"]  # wave stopped
    assert a.create_failures["u1"].reason == "FailedCreatePod"  # for the next plan to report
    assert recorder.per_pod == []  # the refused pod is no SuccessfulCreatePod


async def test_a_status_conflict_skips_the_events_once_the_creates_are_done() -> None:
    server, recorder = Server(), Recorder()
    server.status_conflict = True
    await applier(server, recorder).apply(KEY, REF, JOB, plan(2))
    assert {"done job-worker-0", "done job-worker-1"} <= set(server.log)
    assert recorder.events == []
    assert recorder.per_pod == ["SuccessfulCreatePod"] * 2  # those pods exist all the same


async def test_a_kubetrain_job_gets_no_per_pod_events() -> None:
    server, recorder = Server(), Recorder()
    job = {**JOB, "apiVersion": "kubetrain.io/v1"}
    await applier(server, recorder).apply(KEY, REF, job, plan(2))
    assert recorder.events == ["Created"]
    assert recorder.per_pod == []  # kubetrain.io's write budget (docs/behaviour.md §5)
