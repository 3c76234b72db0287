"""training-operator's per-pod Events on a job (kubetrain/operator/podevents.py): the exact
reasons, types and messages of release-1.9's pod_control.go, service_control.go and pod.go,
which jobs get them, recorded where a write went through (writes.py) and where a pod's watch
event shows its framework container terminated (jobevents.py) — all within the job's budget."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest
from pods import watched_pod

from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.resources import EVENTS, SERVICES, ResourceRef, job_resources_in
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.controller import Controller, ControllerConfig
from kubetrain.operator.podevents import exited_with_code, records_pod_events, succeeded_write
from kubetrain.operator.writes import ChildWriter

Obj = dict[str, Any]
REF = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
KEY = "PyTorchJob.kubeflow.org/ns/big"


def job(api_version: str = "kubeflow.org/v1", kind: str = "PyTorchJob", **status: Any) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "big", "namespace": "ns", "uid": "u1", "resourceVersion": "4"},
        "status": status,
    }


def pod(name: str, rv: str, *containers: tuple[str, Obj]) -> Obj:
    statuses = [{"name": n, "restartCount": 0, "state": s} for n, s in containers]
    return watched_pod(name, rv, {"containerStatuses": statuses}, api_version="kubeflow.org/v1")


RUNNING = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}


def exited(code: int, container_id: str = "containerd://1") -> Obj:
    return {"terminated": {"exitCode": code, "reason": "Error", "containerID": container_id}}


@pytest.mark.parametrize(
    ("api_version", "kind", "gets"),
    [
        ("kubeflow.org/v1", "PyTorchJob", True),
        ("kubeflow.org/v1", "TFJob", True),
        ("kubeflow.org/v1", "XGBoostJob", True),
        ("kubetrain.io/v1", "PaddleJob", False),  # the Decision: kubetrain.io's write budget
        ("kubetrain.io/v1", "PyTorchJob", False),
        ("training.kubedl.io/v1alpha1", "PyTorchJob", True),
        ("training.kubedl.io/v1alpha1", "MPIJob", True),  # KubeDL's MPIJob uses the common library
        ("kubeflow.org/v2beta1", "MPIJob", False),  # mpi-operator v2 records none
        ("kubetrain.io/v1", "MPIJob", False),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", False),
    ],
)
def test_which_jobs_get_the_per_pod_events(api_version: str, kind: str, gets: bool) -> None:
    assert records_pod_events(job(api_version, kind)) is gets


def test_the_writes_events_are_training_operators() -> None:
    j = job()
    assert succeeded_write(j, "Create", "Pod", "big-worker-0") == (
        "SuccessfulCreatePod",
        "Created pod: big-worker-0",
    )
    assert succeeded_write(j, "Delete", "Pod", "big-worker-0") == (
        "SuccessfulDeletePod",
        "Deleted pod: big-worker-0",
    )
    assert succeeded_write(j, "Create", "Service", "big-worker-0") == (
        "SuccessfulCreateService",
        "Created service: big-worker-0",
    )
    assert succeeded_write(j, "Delete", "Service", "big-worker-0") == (
        "SuccessfulDeleteService",
        "Deleted service: big-worker-0",
    )
    assert succeeded_write(j, "Create", "PodGroup", "big") is None  # not a pod or Service
    assert succeeded_write(j, "Update", "Pod", "big-worker-0") is None
    assert succeeded_write(job("kubeflow.org/v2beta1", "MPIJob"), "Create", "Pod", "big-launcher") is None


def test_exited_with_code_names_the_pod_and_its_framework_containers_code() -> None:
    j = job()
    before = pod("big-worker-0", "1", ("pytorch", RUNNING), ("sidecar", RUNNING))
    after = pod("big-worker-0", "2", ("pytorch", exited(137)), ("sidecar", RUNNING))
    assert exited_with_code(j, before, after) == "Pod: ns.big-worker-0 exited with code 137"
    assert exited_with_code(j, None, after) == "Pod: ns.big-worker-0 exited with code 137"
    # already terminated in the old version: recorded once, not on every update
    assert exited_with_code(j, after, pod("big-worker-0", "3", ("pytorch", exited(137)))) is None
    # another run of the container (restarted in place, exited again): recorded again
    again = pod("big-worker-0", "4", ("pytorch", exited(1, "containerd://2")))
    assert exited_with_code(j, after, again) == "Pod: ns.big-worker-0 exited with code 1"
    # a sidecar's exit is not the framework container's
    sidecar = pod("big-worker-0", "2", ("pytorch", RUNNING), ("sidecar", exited(1)))
    assert exited_with_code(j, before, sidecar) is None
    # a pod being deleted: its container was stopped by the deletion
    deleting = copy.deepcopy(after)
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    assert exited_with_code(j, before, deleting) is None
    # a finished job: training-operator reconciles no pods of it
    done = job(conditions=[{"type": "Succeeded", "status": "True"}])
    assert exited_with_code(done, before, after) is None
    # KubeDL names the XGBoost container xgboostjob
    kubedl = job("training.kubedl.io/v1alpha1", "XGBoostJob")
    assert (
        exited_with_code(kubedl, None, pod("p", "1", ("xgboostjob", exited(0))))
        == "Pod: ns.p exited with code 0"
    )
    assert exited_with_code(kubedl, None, pod("p", "1", ("xgboost", exited(0)))) is None


class Server:
    """Pods and Services the writer creates and deletes, and the Events the recorder writes."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.event_writes = 0

    async def create_only(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> None:
        await asyncio.sleep(0)
        self.objects[(ref.plural, obj["metadata"]["name"])] = obj

    async def create(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> Obj:
        await asyncio.sleep(0)
        if (ref.plural, obj["metadata"]["name"]) in self.objects:
            raise ApiError(409, "AlreadyExists", "already exists")
        self.event_writes += ref == EVENTS
        self.objects[(ref.plural, obj["metadata"]["name"])] = copy.deepcopy(obj)
        return obj

    async def patch(self, ref: ResourceRef, ns: str | None, name: str, patch: Obj, **_: Any) -> Obj:
        self.event_writes += 1
        self.objects[(ref.plural, name)].update(patch)
        return self.objects[(ref.plural, name)]

    async def delete(self, ref: ResourceRef, ns: str | None, name: str, **_: Any) -> None:
        if self.objects.pop((ref.plural, name), None) is None:
            raise ApiError(404, "NotFound", "not found")

    def events(self) -> list[Obj]:
        return [o for (plural, _), o in self.objects.items() if plural == EVENTS.plural]


def writer(server: Server, j: Obj) -> ChildWriter:
    cache = Cache()
    ref = job_resources_in(["kubeflow.org", "kubetrain.io"])
    cache.store(ref["PyTorchJob.kubeflow.org"]).upsert(j)
    cache.store(ref["MPIJob.kubeflow.org"]).upsert(j)
    client = cast(KubeClient, server)
    return ChildWriter(
        client, cache, WorkQueue(), Expectations(), EventRecorder(client, clock=FakeClock()), None
    )


async def test_creating_30_pods_writes_25_events_and_deletes_and_services_have_theirs() -> None:
    server, j = Server(), job()
    w = writer(server, j)
    failures: list[ApiError] = []
    pods = [{"metadata": {"name": f"big-worker-{i}", "namespace": "ns"}} for i in range(30)]
    await w._create_pods(KEY, REF, j, pods, failures)
    await w.recorder.flush()
    assert failures == [] and server.event_writes == 25  # the job's burst
    counts = {e["message"]: e["count"] for e in server.events()}
    assert all(e["type"] == "Normal" and e["reason"] == "SuccessfulCreatePod" for e in server.events())
    assert sum(counts.values()) == 30  # 9 Events of their own, one combined counting the other 21
    assert len([m for m in counts if m.startswith("Created pod: big-worker-")]) == 9

    server2, j2 = Server(), job(kind="PyTorchJob")
    w2 = writer(server2, j2)
    server2.objects[("pods", "big-worker-3")] = {}
    await w2._create(j2, SERVICES, {"metadata": {"name": "big-master-0"}}, failures)
    await w2._delete_pod(KEY, j2, "big-worker-3", failures)
    await w2._delete_pod(KEY, j2, "big-worker-4", failures)  # NotFound: nothing deleted, no event
    await w2._delete(j2, SERVICES, "big-master-0", failures)
    await w2.recorder.flush()
    assert failures == []
    assert sorted((e["reason"], e["message"]) for e in server2.events()) == [
        ("SuccessfulCreateService", "Created service: big-master-0"),
        ("SuccessfulDeletePod", "Deleted pod: big-worker-3"),
        ("SuccessfulDeleteService", "Deleted service: big-master-0"),
    ]
    assert {e["involvedObject"]["name"] for e in server2.events()} == {"big"}


async def test_an_mpi_operator_mpijob_gets_no_per_pod_events() -> None:
    server, j = Server(), job("kubeflow.org/v2beta1", "MPIJob")
    w = writer(server, j)
    mpi_ref = job_resources_in(["kubeflow.org"])["MPIJob.kubeflow.org"]
    await w._create_pods(
        "MPIJob.kubeflow.org/ns/big", mpi_ref, j, [{"metadata": {"name": "big-launcher"}}], []
    )
    await w.recorder.flush()
    assert ("pods", "big-launcher") in server.objects and server.events() == []


async def test_a_pod_update_with_the_framework_container_terminated_is_exited_with_code() -> None:
    server = Server()
    c = Controller(
        cast(KubeClient, server), ControllerConfig(api_groups=("kubeflow.org",)), clock=FakeClock()
    )
    c.cache.store(REF).upsert(job())
    running = pod("big-worker-0", "1", ("pytorch", RUNNING))
    c._pod_updated(running, pod("big-worker-0", "2", ("pytorch", exited(137))))
    c._pod_updated(running, pod("big-worker-1", "2", ("pytorch", RUNNING)))  # still running
    await c.recorder.flush()
    (event,) = server.events()
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal",
        "ExitedWithCode",
        "Pod: ns.big-worker-0 exited with code 137",
    )
    assert event["involvedObject"]["kind"] == "PyTorchJob" and event["involvedObject"]["uid"] == "u1"


def v1_mpijob(**status: Any) -> Obj:
    """A kubeflow.org MPIJob written at kubeflow.org/v1: training-operator v1.9's MPIJob."""
    j = job("kubeflow.org/v2beta1", "MPIJob", **status)
    j["metadata"]["annotations"] = {"kubetrain.io/created-api-version": "kubeflow.org/v1"}
    return j


def test_a_training_operator_mpijob_gets_its_controllers_pod_create_events_only() -> None:
    # training-operator v1.9's MPIJob controller (pkg/controller.v1/mpi/mpijob_controller.go)
    # creates its pods itself: `getOrCreateWorker` records SuccessfulCreatePod "Created worker
    # pod: <pod>", `ReconcilePods` MPIJobRunning "launcher pod created success: <pod>"; it
    # records no delete, Service or ExitedWithCode event (it overrides the common ReconcilePods).
    j = v1_mpijob()
    assert records_pod_events(j)
    assert succeeded_write(j, "Create", "Pod", "big-worker-3") == (
        "SuccessfulCreatePod",
        "Created worker pod: big-worker-3",
    )
    assert succeeded_write(j, "Create", "Pod", "big-launcher-0") == (
        "MPIJobRunning",
        "launcher pod created success: big-launcher-0",
    )
    assert succeeded_write(j, "Delete", "Pod", "big-worker-3") is None
    assert succeeded_write(j, "Create", "Service", "big-worker-3") is None
    assert succeeded_write(j, "Create", "Pod", "big-tensorboard") is None
    after = pod("big-launcher-0", "2", ("mpi", exited(1)))
    assert exited_with_code(j, None, after) is None
    # written as mpi-operator's (v2beta1, or no annotation): none at all
    assert succeeded_write(job("kubeflow.org/v2beta1", "MPIJob"), "Create", "Pod", "big-worker-3") is None


async def test_a_training_operator_mpijobs_pod_creates_are_recorded_within_the_budget() -> None:
    server, j = Server(), v1_mpijob()
    w = writer(server, j)
    mpi_ref = job_resources_in(["kubeflow.org"])["MPIJob.kubeflow.org"]
    pods = [{"metadata": {"name": f"big-worker-{i}", "namespace": "ns"}} for i in range(2)]
    await w._create_pods("MPIJob.kubeflow.org/ns/big", mpi_ref, j, pods, [])
    await w._create_pods(
        "MPIJob.kubeflow.org/ns/big", mpi_ref, j, [{"metadata": {"name": "big-launcher-0"}}], []
    )
    await w.recorder.flush()
    assert sorted((e["type"], e["reason"], e["message"]) for e in server.events()) == [
        ("Normal", "MPIJobRunning", "launcher pod created success: big-launcher-0"),
        ("Normal", "SuccessfulCreatePod", "Created worker pod: big-worker-0"),
        ("Normal", "SuccessfulCreatePod", "Created worker pod: big-worker-1"),
    ]
