"""The simulated kubelet restarts a failed init container as a kubelet does (restartPolicy
OnFailure/Always): restartCount counts the restarts, lastState holds the latest failure, the state
waits in CrashLoopBackOff for the back-off (10s, then doubled), and a try that succeeds starts the
pod with the init container's restartCount kept. Under Never the first failure fails the pod.
Time is a FakeClock: no real back-off is slept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pods
import pytest

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.clock import FakeClock

NS = "default"
REPO = "https://git.example.com/team/code.git"


@pytest.fixture
async def sim(devcluster: DevCluster, clock: FakeClock) -> AsyncIterator[PodSimulator]:
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock) as s:
        yield s


def fetching_pod(name: str, restart_policy: str) -> dict[str, Any]:
    pod = pods.pod_manifest(
        name, namespace=NS, container="pytorch", image="trainer:1", restart_policy=restart_policy
    )
    pod["spec"]["initContainers"] = [
        {
            "name": "git-sync-code",
            "image": "alpine/git",
            "env": [{"name": "GIT_SYNC_REPO", "value": REPO}, {"name": "GIT_SYNC_BRANCH", "value": "main"}],
        }
    ]
    return dict(pod)


def init_status(pod: dict[str, Any] | None) -> dict[str, Any]:
    (cs,) = (pod or {})["status"]["initContainerStatuses"]
    return dict(cs)


def restarts(n: int) -> Any:
    def check(pod: dict[str, Any] | None) -> bool:
        statuses = ((pod or {}).get("status") or {}).get("initContainerStatuses") or []
        return bool(statuses) and statuses[0].get("restartCount") == n

    return check


async def test_a_failed_init_container_is_restarted_with_back_off_until_it_succeeds(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    sim.git.fail(REPO, "fatal: unable to access: Could not resolve host: git.example.com")
    code, body = await raw.request(
        "POST", f"/api/v1/namespaces/{NS}/pods", body=fetching_pod("p", "OnFailure")
    )
    assert code == 201, body
    pod = await sim.wait_for(NS, "p", restarts(1))
    cs = init_status(pod)
    assert pod is not None and pod["status"]["phase"] == "Pending"
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=git-sync-code"
    )
    last = cs["lastState"]["terminated"]
    assert last["exitCode"] == 1
    assert last["message"] == (
        f"code sync failed: fetching {REPO} at main: "
        "fatal: unable to access: Could not resolve host: git.example.com"
    )
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    await clock.advance(9)
    assert init_status(sim.pod(NS, "p"))["restartCount"] == 1  # still backing off
    await clock.advance(1.5)
    pod = await sim.wait_for(NS, "p", restarts(2))
    assert "back-off 20s" in init_status(pod)["state"]["waiting"]["message"]
    await clock.advance(19)
    assert init_status(sim.pod(NS, "p"))["restartCount"] == 2
    sim.git.failures.clear()  # the remote is reachable again
    await clock.advance(1.5)
    pod = await sim.wait_for_phase(NS, "p", "Running")
    cs = init_status(pod)
    assert cs["restartCount"] == 2  # two failures, two restarts: the second restart succeeded
    assert cs["state"]["terminated"]["exitCode"] == 0 and len(cs["state"]["terminated"]["message"]) == 40
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert [f[0] for f in sim.git.fetches] == [REPO] * 3


async def test_under_never_the_first_failure_fails_the_pod(
    sim: PodSimulator, raw: RawApi, clock: FakeClock
) -> None:
    sim.git.fail(REPO)
    code, body = await raw.request("POST", f"/api/v1/namespaces/{NS}/pods", body=fetching_pod("n", "Never"))
    assert code == 201, body
    pod = await sim.wait_for_phase(NS, "n", "Failed")
    cs = init_status(pod)
    assert cs["restartCount"] == 0 and cs["state"]["terminated"]["exitCode"] == 1
    await clock.advance(600)
    assert len(sim.git.fetches) == 1  # never restarted
