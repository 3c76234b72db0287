"""Lease leader election between two electors and Event aggregation, against devcluster."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubetrain.kube.client import KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.leader import LeaderElector
from kubetrain.kube.resources import EVENTS, LEASES

NS = "default"


def elector(kube: KubeClient, identity: str, leading: dict[str, bool]) -> LeaderElector:
    return LeaderElector(
        kube,
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


async def test_only_one_elector_leads_and_the_other_takes_over_after_release(kube: KubeClient) -> None:
    leading: dict[str, bool] = {}
    a, b = elector(kube, "a", leading), elector(kube, "b", leading)
    run_a = asyncio.ensure_future(a.run())
    await wait_until(lambda: a.is_leader)
    run_b = asyncio.ensure_future(b.run())
    try:
        await asyncio.sleep(2.5)  # longer than a lease: a keeps renewing, b never gets in
        assert a.is_leader and not b.is_leader
        assert leading == {"a": True}
        lease = await kube.get(LEASES, NS, "kubetrain-controller")
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert b.leader == "a"

        a.stop()
        await asyncio.wait_for(run_a, 5)
        assert leading["a"] is False
        await wait_until(lambda: b.is_leader, limit=2)  # released: no need to wait out the lease
        lease = await kube.get(LEASES, NS, "kubetrain-controller")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        a.stop()
        b.stop()
        await asyncio.gather(run_a, run_b, return_exceptions=True)


async def test_a_crashed_leader_is_replaced_after_the_lease_expires(kube: KubeClient) -> None:
    leading: dict[str, bool] = {}
    a = elector(kube, "a", leading)
    a.release_on_stop = False  # a crash: the lease is left behind, held by "a"
    run_a = asyncio.ensure_future(a.run())
    await wait_until(lambda: a.is_leader)
    run_a.cancel()
    await asyncio.gather(run_a, return_exceptions=True)
    assert (await kube.get(LEASES, NS, "kubetrain-controller"))["spec"]["holderIdentity"] == "a"

    b = elector(kube, "b", leading)
    loop = asyncio.get_running_loop()
    start = loop.time()
    run_b = asyncio.ensure_future(b.run())
    try:
        await wait_until(lambda: b.is_leader, limit=6)
        assert loop.time() - start >= 1.9  # not before the 2 s lease ran out
    finally:
        b.stop()
        await asyncio.gather(run_b, return_exceptions=True)


async def test_repeated_events_are_aggregated_on_the_server(kube: KubeClient, devcluster: Any) -> None:
    subject = await kube.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "subject", "namespace": NS},
        },
    )
    recorder = EventRecorder(kube)
    devcluster.requests.reset()
    for _ in range(3):
        await recorder.event(subject, "Warning", "FailedCreatePod", "pods is forbidden: exceeded quota")
    recorder.emit(subject, "Normal", "Other", "different message")
    await recorder.flush()
    events = (await kube.list(EVENTS, NS))["items"]
    warning = [e for e in events if e["reason"] == "FailedCreatePod"]
    assert len(warning) == 1
    assert warning[0]["count"] == 3
    assert warning[0]["involvedObject"]["kind"] == "Lease"
    assert warning[0]["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert warning[0]["source"]["component"] == "kubetrain-operator"
    assert [e["reason"] for e in events if e["reason"] == "Other"] == ["Other"]
    assert devcluster.requests.count(verb="create", resource="events") == 2
    assert devcluster.requests.count(verb="patch", resource="events") == 2
