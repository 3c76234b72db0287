"""The pod simulator's scheduler against devcluster: a pod is bound only where it fits; one that
fits nowhere stays Pending with kube-scheduler's condition and its FailedScheduling Events, and is
bound once a pod ends or is deleted, or a node changes (seen by the simulator's Node watch)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pods
import pytest

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.simulator import HEARTBEAT_SECONDS
from kubetrain.kube.clock import FakeClock

from .controller_support import eventually
from .scheduling_support import NS, create, node_of, scheduling_events, unschedulable

N0, N1 = "fit-node-0", "fit-node-1"
GPU_MESSAGE = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
    "2 No preemption victims found for incoming pod."
)


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=2, clock=clock, node_prefix="fit-node") as s:
        yield s


def gpu_pod(name: str, gpus: int, **spec: Any) -> dict[str, Any]:
    pod = pods.pod_manifest(name, namespace=NS, image="trainer:1", **spec)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return pod


async def test_a_pod_larger_than_any_node_stays_pending_with_the_condition_and_a_series_of_events(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    await create(raw, gpu_pod("huge", 100))
    pod = await sim.wait_for(NS, "huge", unschedulable(GPU_MESSAGE))
    assert pod is not None and node_of(pod) is None and pod["status"]["phase"] == "Pending"
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["reason"] == "Unschedulable"
    # The Event is written after the condition: wait for it before counting.
    await eventually(lambda: scheduling_events(raw, "huge"), what="the FailedScheduling Event")
    # Tried again at each heartbeat: still nowhere, the condition unchanged; each attempt is a
    # FailedScheduling occurrence, folded by kube-scheduler's event library: an attempt that saw
    # the pod at the same resourceVersion as an earlier one repeats that Event's series.
    for _ in range(3):
        await clock.advance(HEARTBEAT_SECONDS)
    await asyncio.sleep(0.3)
    await sim.events.flush()
    found = await scheduling_events(raw, "huge")
    assert 1 <= len(found) <= 2  # the first attempt saw the pod before its condition was written
    for event in found:
        assert event["type"] == "Warning" and event["message"] == GPU_MESSAGE
        assert event["reportingComponent"] == "default-scheduler" and event["action"] == "Scheduling"
        assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]
    latest = max(found, key=lambda e: str(e["metadata"]["name"]))  # named by when it was recorded
    assert latest["series"]["count"] >= 2 and latest["series"]["lastObservedTime"] >= latest["eventTime"]
    again = sim.pod(NS, "huge")
    assert again is not None and node_of(again) is None
    assert next(c for c in again["status"]["conditions"] if c["type"] == "PodScheduled") == cond

    # The same Events through events.k8s.io/v1, as kube-scheduler wrote them.
    query = {"fieldSelector": "regarding.name=huge,reportingController=default-scheduler"}
    code, body = await raw.request("GET", f"/apis/events.k8s.io/v1/namespaces/{NS}/events", query=query)
    assert code == 200, body
    written = {e["metadata"]["name"]: e for e in body["items"] if e["reason"] == "FailedScheduling"}
    assert written.keys() == {e["metadata"]["name"] for e in found}
    v1 = written[latest["metadata"]["name"]]
    assert v1["note"] == GPU_MESSAGE and v1["series"] == latest["series"]
    assert v1["reportingInstance"].startswith("default-scheduler-")
    assert v1["regarding"]["resourceVersion"] and "deprecatedCount" not in v1


async def test_pods_share_a_nodes_room_and_one_waits_until_a_pod_ends_or_goes(
    sim: PodSimulator, raw: RawApi
) -> None:
    for name in ("a", "b", "c", "d"):
        await create(raw, gpu_pod(name, 4))
    placed = [await sim.wait_for_phase(NS, name, "Running") for name in ("a", "b", "c", "d")]
    assert sorted(node_of(p) or "" for p in placed) == [N0, N0, N1, N1]  # spread, never more than 8 GPUs
    await create(raw, gpu_pod("late", 4))
    await sim.wait_for(NS, "late", unschedulable(GPU_MESSAGE))

    # A pod ends: its room is free, the waiting pod is bound there.
    await sim.finish(NS, "a")
    late = await sim.wait_for_phase(NS, "late", "Running")
    assert node_of(late) == node_of(placed[0])
    cond = next(c for c in late["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["status"] == "True"

    # A pod deleted frees room too.
    await create(raw, gpu_pod("later", 4))
    await sim.wait_for(NS, "later", unschedulable(GPU_MESSAGE))
    code, body = await raw.request(
        "DELETE", f"/api/v1/namespaces/{NS}/pods/b", query={"gracePeriodSeconds": "0"}
    )
    assert code in (200, 202), body
    later = await sim.wait_for_phase(NS, "later", "Running")
    assert node_of(later) == node_of(placed[1])


async def test_a_node_selector_matching_no_node_waits_until_a_node_is_labelled(
    sim: PodSimulator, raw: RawApi
) -> None:
    await create(raw, gpu_pod("picky", 1, nodeSelector={"zone": "a"}))
    message = (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    await sim.wait_for(NS, "picky", unschedulable(message))
    code, node = await raw.request("GET", f"/api/v1/nodes/{N1}")
    assert code == 200, node
    node["metadata"]["labels"]["zone"] = "a"
    code, body = await raw.request("PUT", f"/api/v1/nodes/{N1}", body=node)
    assert code == 200, body  # the Node watch sees the label: tried again without a heartbeat
    picky = await sim.wait_for_phase(NS, "picky", "Running")
    assert node_of(picky) == N1
