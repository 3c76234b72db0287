"""The pod simulator against devcluster, through its public API only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pods
import pytest

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.devcluster.kubelet import behaviour, podstatus
from kubetrain.kube.clock import FakeClock

NS = "default"


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=2, clock=clock) as s:
        yield s


def pod_manifest(
    name: str,
    *,
    restart_policy: str = "Never",
    annotations: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    extra = {"schedulerName": scheduler} if scheduler else {}
    return pods.pod_manifest(
        name,
        namespace=NS,
        container="pytorch",
        image="trainer:1",
        annotations=annotations or {},
        restart_policy=restart_policy,
        **extra,
    )


async def create(raw: RawApi, pod: dict[str, Any]) -> dict[str, Any]:
    code, body = await raw.request("POST", f"/api/v1/namespaces/{NS}/pods", body=pod)
    assert code == 201, body
    return dict(body)


async def get(raw: RawApi, name: str) -> tuple[int, Any]:
    return await raw.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")


def restarted(times: int) -> Callable[[dict[str, Any] | None], bool]:
    return lambda pod: pod is not None and podstatus.restart_count(pod) == times


def main_container(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["status"]["containerStatuses"][0])


async def test_registers_ready_nodes_once(devcluster: DevCluster, sim: PodSimulator, raw: RawApi) -> None:
    code, nodes = await raw.request("GET", "/api/v1/nodes")
    assert code == 200
    names = sorted(n["metadata"]["name"] for n in nodes["items"])
    assert names == ["kubetrain-sim-node-0", "kubetrain-sim-node-1"]
    for node in nodes["items"]:
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
    async with PodSimulator(devcluster.kubeconfig_path, nodes=2):
        pass
    code, again = await raw.request("GET", "/api/v1/nodes")
    assert len(again["items"]) == 2


async def test_binds_and_runs_a_pod_and_holds_it(sim: PodSimulator, raw: RawApi, clock: FakeClock) -> None:
    await create(raw, pod_manifest("held"))
    await sim.wait_for_phase(NS, "held", "Running")
    code, pod = await get(raw, "held")
    assert code == 200
    assert pod["spec"]["nodeName"] in sim.node_names
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["podIP"].startswith("10.244.")
    assert pod["status"]["startTime"]
    assert main_container(pod)["state"]["running"]
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    await clock.advance(3600)
    code, pod = await get(raw, "held")
    assert pod["status"]["phase"] == "Running"  # no run-seconds: held until a test says otherwise


async def test_run_seconds_and_exit_code_annotations(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    annotations = {behaviour.RUN_SECONDS: "30", behaviour.EXIT_CODE: "137", behaviour.REASON: "OOMKilled"}
    await create(raw, pod_manifest("oom", annotations=annotations))
    await sim.wait_for_phase(NS, "oom", "Running")
    await clock.advance(29)
    assert (await get(raw, "oom"))[1]["status"]["phase"] == "Running"
    await clock.advance(1)
    pod = await sim.wait_for_phase(NS, "oom", "Failed")
    terminated = main_container(pod)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    assert (await get(raw, "oom"))[1]["status"]["phase"] == "Failed"


async def test_on_failure_restarts_in_place_then_gives_up(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    annotations = {behaviour.RUN_SECONDS: "10", behaviour.EXIT_CODE: "1", behaviour.RESTARTS_BEFORE_EXIT: "2"}
    created = await create(raw, pod_manifest("flaky", restart_policy="OnFailure", annotations=annotations))
    await sim.wait_for_phase(NS, "flaky", "Running")
    # The first exit: restarted at once, as a kubelet with no back-off for the container yet.
    await clock.advance(10)
    pod = await sim.wait_for(NS, "flaky", restarted(1))
    assert pod is not None and "running" in main_container(pod)["state"]
    # The second exit: the container waits out a 10 s back-off, the pod Running but not Ready.
    await clock.advance(10)
    pod = await sim.wait_for(NS, "flaky", lambda p: p is not None and "waiting" in main_container(p)["state"])
    assert pod is not None and pod["status"]["phase"] == "Running"
    status, uid = main_container(pod), created["metadata"]["uid"]
    assert status["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 10s restarting failed container=pytorch pod=flaky_{NS}({uid})",
    }
    assert (status["restartCount"], status["ready"]) == (1, False)
    assert status["lastState"]["terminated"]["exitCode"] == 1
    ready = {c["type"]: c for c in pod["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
    assert ready["message"] == "containers with unready status: [pytorch]"
    await clock.advance(9)
    assert "waiting" in main_container((await get(raw, "flaky"))[1])["state"]
    await clock.advance(1)
    pod = await sim.wait_for(NS, "flaky", restarted(2))
    assert pod is not None and "running" in main_container(pod)["state"]
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    # The third exit is past the annotated restarts: terminal.
    await clock.advance(10)
    pod = await sim.wait_for_phase(NS, "flaky", "Failed")
    assert main_container(pod)["restartCount"] == 2
    assert main_container(pod)["state"]["terminated"]["exitCode"] == 1


async def test_each_container_backs_off_for_its_own_delay(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    """Containers exit together but back off apart: one restarted twice (by the test API, which
    moves its back-off on) waits 20 s, one restarted once 10 s; each runs again on its own."""
    manifest = pod_manifest(
        "pair",
        restart_policy="OnFailure",
        annotations={behaviour.RUN_SECONDS: "30", behaviour.EXIT_CODE: "1"},
    )
    manifest["spec"]["containers"].append({"name": "sidecar", "image": "log:1"})
    await create(raw, manifest)
    await sim.wait_for_phase(NS, "pair", "Running")
    for container in ("pytorch", "pytorch", "sidecar"):
        await sim.restart_container(NS, "pair", exit_code=1, container=container)

    def states(pod: dict[str, Any] | None) -> dict[str, tuple[str, int]]:
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        return {cs["name"]: (next(iter(cs["state"])), cs["restartCount"]) for cs in statuses}

    await clock.advance(30)
    pod = await sim.wait_for(
        NS, "pair", lambda p: states(p) == {"pytorch": ("waiting", 2), "sidecar": ("waiting", 1)}
    )
    assert pod is not None
    delays = {
        cs["name"]: cs["state"]["waiting"]["message"].split()[1] for cs in pod["status"]["containerStatuses"]
    }
    assert delays == {"pytorch": "20s", "sidecar": "10s"}
    await clock.advance(10)
    await sim.wait_for(
        NS, "pair", lambda p: states(p) == {"pytorch": ("waiting", 2), "sidecar": ("running", 2)}
    )
    await clock.advance(10)
    pod = await sim.wait_for(
        NS, "pair", lambda p: states(p) == {"pytorch": ("running", 3), "sidecar": ("running", 2)}
    )
    assert pod is not None
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"


async def test_finish_evict_and_restart_container(sim: PodSimulator, raw: RawApi) -> None:
    for name in ("done", "broken", "evicted"):
        await create(raw, pod_manifest(name))
    await create(raw, pod_manifest("restarting", restart_policy="OnFailure"))

    await sim.finish(NS, "done")
    await sim.finish(NS, "broken", exit_code=3)
    await sim.evict(NS, "evicted")
    await sim.restart_container(NS, "restarting", exit_code=137)

    done = (await get(raw, "done"))[1]
    assert done["status"]["phase"] == "Succeeded"
    assert main_container(done)["state"]["terminated"]["reason"] == "Completed"
    broken = (await get(raw, "broken"))[1]
    assert broken["status"]["phase"] == "Failed"
    assert main_container(broken)["state"]["terminated"] == {
        **main_container(broken)["state"]["terminated"],
        "exitCode": 3,
        "reason": "Error",
    }
    evicted = (await get(raw, "evicted"))[1]
    assert (evicted["status"]["phase"], evicted["status"]["reason"]) == ("Failed", "Evicted")
    assert any(
        c["type"] == "DisruptionTarget" and c["status"] == "True" for c in evicted["status"]["conditions"]
    )
    restarting = (await get(raw, "restarting"))[1]
    assert restarting["status"]["phase"] == "Running"
    assert main_container(restarting)["restartCount"] == 1
    assert main_container(restarting)["lastState"]["terminated"]["exitCode"] == 137

    with pytest.raises(ValueError, match="restartPolicy Never"):
        await create(raw, pod_manifest("never"))
        await sim.restart_container(NS, "never")
    with pytest.raises(ValueError, match="already Succeeded"):
        await sim.finish(NS, "done")


async def test_only_its_schedulers_pods_are_bound(devcluster: DevCluster, raw: RawApi) -> None:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1) as sim:
        await create(raw, pod_manifest("gang", scheduler="volcano"))
        await create(raw, pod_manifest("plain"))
        await sim.wait_for_phase(NS, "plain", "Running")
        assert not (await get(raw, "gang"))[1]["spec"].get("nodeName")
    async with PodSimulator(
        devcluster.kubeconfig_path, nodes=1, scheduler_names=("default-scheduler", "volcano")
    ) as sim:
        await sim.wait_for_phase(NS, "gang", "Running")


async def test_a_gated_pod_is_bound_once_its_scheduling_gates_are_removed(
    sim: PodSimulator, raw: RawApi
) -> None:
    gated = pod_manifest("gated")
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    await create(raw, gated)
    await create(raw, pod_manifest("free"))
    await sim.wait_for_phase(NS, "free", "Running")
    pod = (await get(raw, "gated"))[1]
    assert not pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending"
    pod["spec"]["schedulingGates"].append({"name": "another"})  # a gate is never added
    code, body = await raw.request("PUT", f"/api/v1/namespaces/{NS}/pods/gated", body=pod)
    assert code == 422 and "only deletion is allowed" in str(body), body
    del pod["spec"]["schedulingGates"]  # ... but may be removed
    code, body = await raw.request("PUT", f"/api/v1/namespaces/{NS}/pods/gated", body=pod)
    assert code == 200, body
    await sim.wait_for_phase(NS, "gated", "Running")


async def test_graceful_deletion_is_finished(devcluster: DevCluster, sim: PodSimulator, raw: RawApi) -> None:
    await create(raw, pod_manifest("doomed"))
    await sim.wait_for_phase(NS, "doomed", "Running")
    code, body = await raw.request("DELETE", f"/api/v1/namespaces/{NS}/pods/doomed")
    assert code in (200, 202), body
    await sim.wait_for(NS, "doomed", lambda p: p is None)
    assert (await get(raw, "doomed"))[0] == 404
    # The API server only marked it; the simulated kubelet stopped the containers and removed it.
    assert (
        devcluster.requests.count(verb="delete", resource="pods", user_agent="kubetrain-pod-simulator") == 1
    )


async def test_status_write_conflict_is_retried(
    devcluster: DevCluster, sim: PodSimulator, raw: RawApi
) -> None:
    await create(raw, pod_manifest("contended"))
    await sim.wait_for_phase(NS, "contended", "Running")
    rule = devcluster.faults.fail(verb="update", resource="pods/status", name="contended", status=409)
    await sim.finish(NS, "contended", exit_code=0)
    assert rule.fired == 1
    assert (await get(raw, "contended"))[1]["status"]["phase"] == "Succeeded"


async def test_default_run_seconds(devcluster: DevCluster, raw: RawApi, clock: FakeClock) -> None:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock, default_run_seconds=5) as sim:
        await create(raw, pod_manifest("quick"))
        await sim.wait_for_phase(NS, "quick", "Running")
        await clock.advance(5)
        pod = await sim.wait_for_phase(NS, "quick", "Succeeded")
        assert json.dumps(main_container(pod)["state"]["terminated"]["exitCode"]) == "0"


async def test_a_deleted_pod_leaves_no_state_in_the_simulator(
    devcluster: DevCluster, sim: PodSimulator, raw: RawApi
) -> None:
    idle = sim.remembered()
    for name in ("churn-0", "churn-1"):
        await create(raw, pod_manifest(name, restart_policy="OnFailure"))
        await sim.wait_for_phase(NS, name, "Running")
    await sim.restart_container(NS, "churn-0", exit_code=1)  # a second run start, under the pod's lock
    await sim.wait_for(NS, "churn-0", restarted(1))
    assert sim.remembered()["kubelet"] == 2
    for name in ("churn-0", "churn-1"):
        code, body = await raw.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}")
        assert code in (200, 202), body
        await sim.wait_for(NS, name, lambda p: p is None)
    # Every per-pod lock, timer, IP, run start and deletion mark went with the pods.
    assert (
        sim.remembered()
        == idle
        == {
            "pods": 0,
            "locks_and_timers": 0,
            "mounts": 0,
            "kubelet": 0,
            "training": 0,
            "scheduler": 0,
        }
    )
