"""A runtime's replicated job `backoffLimitPerIndex` with a `FailIndex` rule, through the
controller, webhook and devcluster: kubetrain plays the Job controller's part. Index 0 failing
once is retried; exit 42 (the FailIndex rule) fails index 0 at once — its pod kept, not made
again — while index 1 runs on; once index 1 succeeded the Job has failed with `FailedIndexes`,
and so has the TrainJob (no JobSet failurePolicy)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import get_tj, wait_condition
from .test_trainjob_pod_failure_policy import policy_runtime, recorded, replaced, start

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
ON_42 = {"containerName": "node", "operator": "In", "values": [42]}
FAIL_INDEX = {"action": "FailIndex", "onExitCodes": ON_42}


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def per_index_runtime(name: str) -> Obj:
    """Trainer's torch runtime whose node Job has backoffLimitPerIndex 1 and a FailIndex rule
    on exit 42 (backoffLimit unset: batch/v1's default with it, MaxInt32)."""
    runtime = policy_runtime(name)
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    del job_spec["backoffLimit"]
    job_spec["backoffLimitPerIndex"] = 1
    job_spec["podFailurePolicy"] = {"rules": [FAIL_INDEX]}
    return runtime


async def test_a_failed_index_is_not_retried_and_fails_the_job_once_the_others_finish(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("perindex")
    await start(h, ns, per_index_runtime("pi"), "px")
    pod = await h.pod(ns, "px-node-0-0")
    assert pod is not None
    await h.sim.finish(ns, "px-node-0-0", exit_code=1)  # counted against index 0, retried
    pod = await replaced(h, ns, "px-node-0-0", pod["metadata"]["uid"])
    assert (await recorded(h, ns, "px")).get("failures") == {"node": 1, "node#0": 1}

    await h.sim.finish(ns, "px-node-0-0", exit_code=42)  # FailIndex: index 0 failed at once
    failed_uid = pod["metadata"]["uid"]

    async def index_failed() -> Obj | None:
        state = await recorded(h, ns, "px")
        return state if state.get("failures", {}).get("node#0") == 2 else None

    await eventually(index_failed, what="index 0 recorded as failed")
    kept = await h.pod(ns, "px-node-0-0")
    assert kept is not None and kept["metadata"]["uid"] == failed_uid and kept["status"]["phase"] == "Failed"
    tj = await get_tj(h, ns, "px")
    assert not any(c["type"] == "Failed" for c in (tj.get("status") or {}).get("conditions") or [])

    await h.sim.finish(ns, "px-node-0-1", exit_code=0)
    tj = await wait_condition(h, ns, "px", "Failed")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailedJobs"
    event = await h.wait_event(ns, "px", "FailedIndexes")
    assert event["type"] == "Warning" and event["message"] == "Job has failed indexes"
    kept = await h.pod(ns, "px-node-0-0")
    assert kept is not None and kept["metadata"]["uid"] == failed_uid  # never made again
