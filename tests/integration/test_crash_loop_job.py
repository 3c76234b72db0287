"""A crash-looping worker of an OnFailure PyTorchJob, end to end on devcluster. The simulated
kubelet restarts it in place with the kubelet's crash-loop back-off: at once after the first
exit, then after 10 s and 20 s, the container waiting in `CrashLoopBackOff` in between. kubetrain
counts each restart against `runPolicy.backoffLimit` and fails the job once the third one is
over the limit of 2. A container that waits out a back-off is not a pod that cannot start: no
`PodsNotStarting`. The simulator's FakeClock is advanced; nothing sleeps for a back-off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.kubelet.behaviour import EXIT_CODE, RUN_SECONDS
from kubetrain.kube.clock import FakeClock

from .controller_support import Harness, condition, is_true, job_manifest, replica_status

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


def worker(pod: Obj | None) -> Obj:
    return dict(((pod or {}).get("status") or {}).get("containerStatuses", [{}])[0])


def running(restarts: int) -> Callable[[Obj | None], bool]:
    return lambda p: worker(p).get("restartCount") == restarts and "running" in (worker(p).get("state") or {})


def backing_off(restarts: int) -> Callable[[Obj | None], bool]:
    return lambda p: worker(p).get("restartCount") == restarts and "waiting" in (worker(p).get("state") or {})


async def test_a_crash_looping_worker_backs_off_and_fails_the_job_past_its_backoff_limit(
    clocked_env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = clocked_env
    sim = stack.simulator
    assert sim is not None
    ns = await h.namespace("crashloop")
    manifest = job_manifest(
        "PyTorchJob",
        "cl",
        {"Master": 1, "Worker": 1},
        restart_policy="OnFailure",
        run_policy={"backoffLimit": 2},
        pod_annotations={"Worker": {RUN_SECONDS: "5", EXIT_CODE: "1"}},
    )
    await h.create_job(manifest, ns)
    await h.wait_condition("PyTorchJob", ns, "cl", "Running")
    pod = await sim.wait_for(ns, "cl-worker-0", running(0))
    uid = pod["metadata"]["uid"]

    async def restarts(n: int) -> Obj:
        return await h.wait_job(
            "PyTorchJob",
            ns,
            "cl",
            lambda j: replica_status(j, "Worker").get("restarts") == n,
            f"restarts {n}",
        )

    # The first exit: restarted at once (the kubelet has no back-off for it yet).
    await clock.advance(5)
    await sim.wait_for(ns, "cl-worker-0", running(1))
    assert not is_true(await restarts(1), "Failed")

    # The second and third exits wait out 10 s, then 20 s, in CrashLoopBackOff.
    for n, delay in ((1, 10), (2, 20)):
        await clock.advance(5)
        pod = await sim.wait_for(ns, "cl-worker-0", backing_off(n))
        status = worker(pod)
        assert status["state"]["waiting"] == {
            "reason": "CrashLoopBackOff",
            "message": f"back-off {delay}s restarting failed container=pytorch pod=cl-worker-0_{ns}({uid})",
        }
        assert status["lastState"]["terminated"]["exitCode"] == 1 and status["ready"] is False
        assert pod is not None and pod["status"]["phase"] == "Running"
        job = await h.job("PyTorchJob", ns, "cl")
        assert replica_status(job, "Worker").get("restarts") == n and not is_true(job, "Failed")
        assert not is_true(job, "PodsNotStarting")  # waiting out a back-off is not failing to start
        await clock.advance(delay - 1)
        assert backing_off(n)(await h.pod(ns, "cl-worker-0"))
        await clock.advance(1)
        if n == 1:
            await sim.wait_for(ns, "cl-worker-0", running(2))
            assert not is_true(await restarts(2), "Failed")

    # The third restart is over the backoffLimit of 2.
    job = await h.wait_condition("PyTorchJob", ns, "cl", "Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "BackoffLimitExceeded"
    assert "backoffLimit of 2" in cond["message"]
    assert replica_status(job, "Worker").get("restarts") == 3
