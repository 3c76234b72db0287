"""What the tests of devcluster's node controllers share: a DevStack whose pod simulator runs on a
FakeClock (conftest's `clocked_env`), a job's worker Running on one of its nodes, and one period
of the health monitor or the pod garbage collector, each advanced on that clock until the
controller's pass that follows it is done (nothing sleeps for it)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.controllers.nodehealth import NodeHealthMonitor
from kubetrain.devcluster.controllers.podgc import PodGC
from kubetrain.devcluster.controllers.podgcplan import GC_CHECK_PERIOD
from kubetrain.devcluster.kubelet.heartbeat import HEARTBEAT_SECONDS
from kubetrain.kube.clock import FakeClock

from .controller_support import Harness, eventually, job_manifest, open_stack


async def clocked_stack() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    """A started DevStack and Harness whose pod simulator (and its node controllers) runs on the
    FakeClock yielded with them, starting now."""
    clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0))
    async for stack, h in open_stack(simulator_clock=clock):
        yield stack, h, clock


async def running_worker(h: Harness, ns: str, name: str) -> dict[str, Any]:
    """A PyTorchJob `name` (a Master, a Worker; backoffLimit 0) created and Running: its worker pod,
    Running on one of the simulated nodes."""
    manifest = job_manifest("PyTorchJob", name, {"Master": 1, "Worker": 1}, run_policy={"backoffLimit": 0})
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, name, 2)
    await h.wait_condition("PyTorchJob", ns, name, "Running")
    worker = await eventually(lambda: h.running_pod(ns, f"{name}-worker-0"), what="the worker Running")
    assert isinstance(worker, dict)
    return worker


async def heartbeats(stack: DevStack, clock: FakeClock, n: int) -> None:
    """`n` heartbeat periods, one at a time, each until the Lease renewals and the health
    monitor's pass that follows them are done."""
    assert stack.simulator is not None and stack.simulator.heartbeats.monitor is not None
    monitor = stack.simulator.heartbeats.monitor
    for _ in range(n):
        await _one_period(monitor, clock, HEARTBEAT_SECONDS, "the health monitor's pass")


async def gc_pass(stack: DevStack, clock: FakeClock) -> None:
    """One pod GC period, until the pass that follows it is done."""
    assert stack.simulator is not None and stack.simulator.pod_gc is not None
    await _one_period(stack.simulator.pod_gc, clock, GC_CHECK_PERIOD, "the pod GC's pass")


async def _one_period(
    controller: NodeHealthMonitor | PodGC, clock: FakeClock, period: float, what: str
) -> None:
    done = controller.passes
    await clock.advance(period)
    await eventually(functools.partial(_more, controller, done), what=what)


async def _more(controller: NodeHealthMonitor | PodGC, done: int) -> bool | None:
    return True if controller.passes > done else None
