"""Lease leader election between two electors and Event aggregation, against devcluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubetrain.kube.client import KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.leader import LeaderElector
from kubetrain.kube.resources import EVENTS, LEASES

NS = "default"


@pytest.fixture
async def client(devcluster: Any) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as kube:
        yield kube


def elector(client: KubeClient, identity: str, leading: dict[str, bool]) -> LeaderElector:
    return LeaderElector(
        client,
        namespace=NS,
        name="kubetrain-controller",
        identity=identity,
        lease_duration=2,
        renew_deadline=1.5,
        retry_period=0.2,
        on_started_leading=lambda: leading.__setitem__(identity, True),
        on_stopped_leading=lambda: leading.__setitem__(identity, False),
    )


async def wait_until(predicate: Callable[[], bool], limit: float = 10) -> None:
    """Poll `predicate` (leadership has no event to wait on) every 50 ms for `limit` seconds."""
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    assert predicate(), f"not true within {limit} s"


async def test_only_one_elector_leads_and_the_other_takes_over_after_release(client: KubeClient) -> None:
    leading: dict[str, bool] = {}
    a, b = elector(client, "a", leading), elector(client, "b", leading)
    run_a = asyncio.ensure_future(a.run())
    await wait_until(lambda: a.is_leader)
    run_b = asyncio.ensure_future(b.run())
    try:
        await asyncio.sleep(2.5)  # longer than a lease: a keeps renewing, b never gets in
        assert a.is_leader and not b.is_leader
        assert leading == {"a": True}
        lease = await client.get(LEASES, NS, "kubetrain-controller")
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert b.leader == "a"

        a.stop()
        await asyncio.wait_for(run_a, 5)
        assert leading["a"] is False
        await wait_until(lambda: b.is_leader, limit=2)  # released: no need to wait out the lease
        lease = await client.get(LEASES, NS, "kubetrain-controller")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        a.stop()
        b.stop()
        await asyncio.gather(run_a, run_b, return_exceptions=True)


async def test_a_crashed_leader_is_replaced_after_the_lease_expires(client: KubeClient) -> None:
    leading: dict[str, bool] = {}
    a = elector(client, "a", leading)
    a.release_on_stop = False  # a crash: the lease is left behind, held by "a"
    run_a = asyncio.ensure_future(a.run())
    await wait_until(lambda: a.is_leader)
    run_a.cancel()
    await asyncio.gather(run_a, return_exceptions=True)
    assert (await client.get(LEASES, NS, "kubetrain-controller"))["spec"]["holderIdentity"] == "a"

    b = elector(client, "b", leading)
    loop = asyncio.get_running_loop()
    start = loop.time()
    run_b = asyncio.ensure_future(b.run())
    try:
        await wait_until(lambda: b.is_leader, limit=6)
        assert loop.time() - start >= 1.9  # not before the 2 s lease ran out
    finally:
        b.stop()
        await asyncio.gather(run_b, return_exceptions=True)


async def test_repeated_events_are_aggregated_on_the_server(client: KubeClient, devcluster: Any) -> None:
    subject = await client.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "subject", "namespace": NS},
        },
    )
    recorder = EventRecorder(client)
    devcluster.requests.reset()
    for _ in range(3):
        await recorder.event(subject, "Warning", "FailedCreatePod", "pods is forbidden: exceeded quota")
    recorder.emit(subject, "Normal", "Other", "different message")
    await recorder.flush()
    events = (await client.list(EVENTS, NS))["items"]
    warning = [e for e in events if e["reason"] == "FailedCreatePod"]
    assert len(warning) == 1
    assert warning[0]["count"] == 3
    assert warning[0]["involvedObject"]["kind"] == "Lease"
    assert warning[0]["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert warning[0]["source"]["component"] == "kubetrain-operator"
    assert [e["reason"] for e in events if e["reason"] == "Other"] == ["Other"]
    assert devcluster.requests.count(verb="create", resource="events") == 2
    assert devcluster.requests.count(verb="patch", resource="events") == 2
