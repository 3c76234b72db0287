"""A gang-scheduled MPIJob whose Launcher waits for its Workers (launcherCreationPolicy
WaitForWorkersReady) starts and runs to Succeeded under the simulated Volcano and
scheduler-plugins (kubetrain.devcluster.gang): the PodGroup counts the Workers only, the gang
scheduler binds them as one gang, and the Launcher, created once they are Ready, joins the
running group. A PodGroup that counted the Launcher would hold the Workers forever
(docs/behaviour.md §8; mpi-operator issue #608)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS

from .controller_support import Harness, eventually, running_stack

Obj = dict[str, Any]
PI = Path(__file__).resolve().parents[1] / "data" / "mpi-operator" / "examples" / "v2beta1" / "pi" / "pi.yaml"
GROUPS = {"volcano": VOLCANO_PODGROUPS, "scheduler-plugins": SCHEDULER_PLUGINS_PODGROUPS}


def stack(gang: str, **options: Any) -> contextlib.AbstractAsyncContextManager[tuple[DevStack, Harness]]:
    return running_stack(gang_scheduler=gang, **options)


def waiting_pi() -> Obj:
    obj: Obj = yaml.safe_load(PI.read_text())
    obj["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    replicas = obj["spec"]["mpiReplicaSpecs"]
    # The Launcher asks for little, each Worker for a GPU: minResources shows who is counted.
    replicas["Launcher"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    replicas["Worker"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    return obj


@pytest.mark.parametrize("gang", ["volcano", "scheduler-plugins"])
async def test_wait_for_workers_ready_mpijob_starts_under_gang_scheduling(gang: str) -> None:
    async with stack(gang) as (s, h):
        assert s.gang_simulator is not None
        ns = await h.namespace("mpigang")
        job = await h.create_job(waiting_pi(), ns)
        # The webhook's gang default leaves the waiting Launcher out.
        assert job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
        group = await eventually(lambda: h.get(GROUPS[gang], ns, "pi"), what=f"{gang} PodGroup pi")
        assert group["spec"]["minMember"] == 2
        assert group["spec"]["minResources"] == {"nvidia.com/gpu": "2"}

        async def launcher_bound() -> Obj | None:
            pod = await h.pod(ns, "pi-launcher-0")
            return pod if pod is not None and pod["spec"].get("nodeName") else None

        launcher = await eventually(launcher_bound, what="the launcher, bound by the gang scheduler")
        await h.assert_ready_by(ns, ["pi-worker-0", "pi-worker-1"], launcher["metadata"]["creationTimestamp"])
        # Every pod went through the gang scheduler: the Workers as one gang, then the Launcher.
        bound = [p for ns_, p, _ in s.gang_simulator.bindings if ns_ == ns]
        assert sorted(bound[:2]) == ["pi-worker-0", "pi-worker-1"] and bound[2:] == ["pi-launcher-0"]

        await h.wait_condition("MPIJob", ns, "pi", "Running")
        await h.sim.finish(ns, "pi-launcher-0")
        await h.wait_condition("MPIJob", ns, "pi", "Succeeded")
