"""A runtime's replicated job `successPolicy` (leader-only success), through the controller,
webhook and devcluster: kubetrain plays the Job controller's part. With
`rules: [{succeededIndexes: "0"}]` on a 2-pod node Job, index 0 succeeding is the Job's
success — told in a SuccessPolicy event, recorded, index 1's still running pod deleted and not
made again — and the TrainJob completes."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import get_tj, training_runtime, wait_condition
from .test_trainjob_pod_failure_policy import recorded, start

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def leader_runtime(name: str) -> Obj:
    """Trainer's torch runtime whose node Job succeeds when its index 0 does."""
    runtime = training_runtime(name)
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    return runtime


async def test_the_leader_succeeding_completes_the_job_and_ends_the_other_pod(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("leader")
    await start(h, ns, leader_runtime("leader"), "ld")
    follower = await h.pod(ns, "ld-node-0-1")
    assert follower is not None

    await h.sim.finish(ns, "ld-node-0-0", exit_code=0)
    tj = await wait_condition(h, ns, "ld", "Complete")
    assert not any(c["type"] == "Failed" for c in tj["status"]["conditions"])
    [node] = [s for s in tj["status"]["jobsStatus"] if s["name"] == "node"]
    assert node["succeeded"] == 1 and node["failed"] == 0
    event = await h.wait_event(ns, "ld", "SuccessPolicy")
    assert event["type"] == "Normal" and event["message"].endswith("Matched rules at index 0")
    assert (await recorded(h, ns, "ld")).get("succeededJobs") == ["node"]

    async def follower_gone() -> bool | None:
        return True if await h.pod(ns, "ld-node-0-1") is None else None

    await eventually(follower_gone, what="index 1's pod deleted")
    leader = await h.pod(ns, "ld-node-0-0")
    assert leader is not None and leader["status"]["phase"] == "Succeeded"
    tj = await get_tj(h, ns, "ld")  # still Complete, and index 1 was not made again
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in tj["status"]["conditions"])
    assert await h.pod(ns, "ld-node-0-1") is None
