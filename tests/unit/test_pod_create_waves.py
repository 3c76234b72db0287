"""How a job's pods are sent: slow-start batches (1, 2, 4, … 16) then 16 in flight; a job whose
last wave was a full pass, pipelined, and created everything it sent starts its next wave (the
next pass of at most 500) pipelined; any other wave — the replacements of deleted pods — and a
wave after a refused create slow-start."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.resources import JOB_RESOURCES, ResourceRef
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.writes import PIPELINED_CREATES, SLOW_START_LAST_BATCH, ChildWriter

REF = JOB_RESOURCES["PyTorchJob"]
KEY = "PyTorchJob/ns/big"
JOB = {
    "apiVersion": "kubetrain.io/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "big", "namespace": "ns", "uid": "u1"},
}


class Server:
    """Answers creates after a loop turn; notes how many were in flight as each was sent."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.sent: list[int] = []  # in flight (this one included) when each create was sent
        self.refuse: set[str] = set()

    async def create_only(self, ref: ResourceRef, obj: dict[str, Any], namespace: str | None = None) -> None:
        self.in_flight += 1
        self.sent.append(self.in_flight)
        try:
            await asyncio.sleep(0)
            if obj["metadata"]["name"] in self.refuse:
                raise ApiError(403, "Forbidden", "exceeded quota")
            return None
        finally:
            self.in_flight -= 1


class Recorder:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def emit(
        self, obj: dict[str, Any], type_: str, reason: str, message: str, *, budgeted: bool = False
    ) -> None:
        self.reasons.append(reason)


def writer(server: Server) -> ChildWriter:
    cache = Cache()
    cache.store(REF).upsert(JOB)
    return ChildWriter(
        client=cast(KubeClient, server),
        cache=cache,
        queue=WorkQueue(),
        expectations=Expectations(),
        recorder=cast(EventRecorder, Recorder()),
        pod_group_ref=None,
    )


def pods(first: int, count: int) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"big-worker-{i}", "namespace": "ns"}} for i in range(first, first + count)]


async def test_a_wave_slow_starts_then_pipelines_and_the_next_wave_starts_pipelined() -> None:
    server = Server()
    w = writer(server)
    failures: list[ApiError] = []
    await w._create_pods(KEY, REF, JOB, pods(0, 100), failures, continues=True)
    assert not failures and len(server.sent) == 100
    assert server.sent[:3] == [1, 1, 2]  # one alone, then two together
    assert max(server.sent) == PIPELINED_CREATES
    # Each create in flight holds an HTTP/1.1 connection: once pipelined, the wave needs no more
    # connections than its last slow-start batch opened (no TLS handshakes mid-wave).
    assert max(server.sent) == SLOW_START_LAST_BATCH
    server.sent.clear()
    await w._create_pods(KEY, REF, JOB, pods(100, 100), failures)
    # The first wave was a full pass and went through: the next one sends 16 at once.
    assert server.sent[:PIPELINED_CREATES] == list(range(1, PIPELINED_CREATES + 1))
    server.sent.clear()
    await w._create_pods(KEY, REF, JOB, pods(200, 20), failures)
    # The second was the job's last pass: a later wave (pods replacing deleted ones) slow-starts.
    assert server.sent[:3] == [1, 1, 2]


async def test_replacements_after_a_complete_job_send_one_create_into_a_closing_namespace() -> None:
    """The job's pods all exist, its namespace is being deleted, and its pods go one by one:
    the replacements slow-start, so the namespace's refusal costs one create, not 16."""
    server = Server()
    w = writer(server)
    await w._create_pods(KEY, REF, JOB, pods(0, 500), [], continues=True)
    await w._create_pods(KEY, REF, JOB, pods(500, 500), [], continues=False)
    server.refuse = {f"big-worker-{i}" for i in range(40)}  # NamespaceTerminating, as a 403
    server.sent.clear()
    failures: list[ApiError] = []
    await w._create_pods(KEY, REF, JOB, pods(0, 40), failures)
    assert server.sent == [1] and len(failures) == 1


async def test_a_refused_create_puts_the_job_back_on_slow_start() -> None:
    server = Server()
    w = writer(server)
    failures: list[ApiError] = []
    await w._create_pods(KEY, REF, JOB, pods(0, 100), failures, continues=True)
    server.refuse = {"big-worker-100"}
    server.sent.clear()
    await w._create_pods(KEY, REF, JOB, pods(100, 100), failures)
    assert len(failures) == 1 and server.sent == list(
        range(1, PIPELINED_CREATES + 1)
    )  # the 16 in flight finish
    assert "u1" in w.create_failures
    server.refuse = set()
    server.sent.clear()
    await w._create_pods(KEY, REF, JOB, pods(101, 99), failures[:0])
    assert server.sent[:3] == [1, 1, 2]


async def test_a_small_wave_proves_nothing() -> None:
    server = Server()
    w = writer(server)
    await w._create_pods(KEY, REF, JOB, pods(0, 3), [], continues=True)
    server.sent.clear()
    await w._create_pods(KEY, REF, JOB, pods(3, 3), [])
    assert server.sent == [1, 1, 2]
