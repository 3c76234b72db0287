"""A runtime's replicated job `podFailurePolicy`, through the controller, webhook and devcluster:
kubetrain plays the Job controller's part for the TrainJob's pods. With Ignore on
DisruptionTarget and FailJob on exit code 42 (backoffLimit 0: any counted failure would fail
the Job), an evicted pod is replaced however often without using up the backoff limit, and exit
42 fails the TrainJob at once — or restarts the gang when a JobSet failurePolicy rule with
`onJobFailureReasons: [PodFailurePolicy]` says so. A policy the Job API refuses is refused on
the runtime, naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import get_tj, refusal, training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
RULES = [
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    {"action": "FailJob", "onExitCodes": {"containerName": "node", "operator": "In", "values": [42]}},
]
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def policy_runtime(name: str, failure_policy: Obj | None = None, restart_policy: str = "Never") -> Obj:
    """Trainer's torch runtime whose node Job has backoffLimit 0 and the rules above."""
    runtime = training_runtime(name)
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["backoffLimit"] = 0
    job_spec["podFailurePolicy"] = {"rules": RULES}
    job_spec["template"]["spec"]["restartPolicy"] = restart_policy
    if failure_policy is not None:
        runtime["spec"]["template"]["spec"]["failurePolicy"] = failure_policy
    return runtime


async def recorded(h: Harness, ns: str, name: str) -> Obj:
    snapshot = await h.get(CONFIG_MAPS, ns, f"{name}-runtime-snapshot")
    assert snapshot is not None
    return dict(json.loads(snapshot["data"].get("state") or "{}"))


async def replaced(h: Harness, ns: str, name: str, old_uid: str) -> Obj:
    async def check() -> Obj | None:
        pod = await h.pod(ns, name)
        fresh = pod is not None and pod["metadata"]["uid"] != old_uid
        running = fresh and (pod or {}).get("status", {}).get("phase") == "Running"
        return pod if running and not pod["metadata"].get("deletionTimestamp") else None  # type: ignore[index]

    result: Obj = await eventually(check, what=f"{name} replaced and running")
    return result


async def start(h: Harness, ns: str, runtime: Obj, name: str) -> list[Obj]:
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    job = trainjob(name, num_nodes=2, runtime=runtime["metadata"]["name"], runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    await h.wait_pods(ns, name, 2)
    return await h.wait_pod_names(ns, name, [f"{name}-node-0-0", f"{name}-node-0-1"])


async def test_evictions_are_ignored_and_exit_42_fails_the_trainjob_at_once(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("pfp")
    await start(h, ns, policy_runtime("pfp"), "pf")
    # evicted twice: each time replaced, nothing counted (backoffLimit 0 would fail on one)
    for _ in range(2):
        pod = await h.pod(ns, "pf-node-0-0")
        assert pod is not None
        await h.sim.evict(ns, "pf-node-0-0")
        await replaced(h, ns, "pf-node-0-0", pod["metadata"]["uid"])
    tj = await get_tj(h, ns, "pf")
    assert not any(c["type"] == "Failed" for c in (tj.get("status") or {}).get("conditions") or [])
    assert (await recorded(h, ns, "pf")).get("failures") == {}

    await h.sim.finish(ns, "pf-node-0-1", exit_code=42)
    tj = await wait_condition(h, ns, "pf", "Failed")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailedJobs"
    assert failed["message"] == "jobset failed due to one or more job failures (first failed job: pf-node-0)"
    event = await h.wait_event(ns, "pf", "PodFailurePolicy")
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"Container node for pod {ns}/pf-node-0-1 failed with exit code 42 matching FailJob rule at index 1"
    )
    # the failed pod is kept (its logs), the other one deleted
    await h.wait_pod_names(ns, "pf", ["pf-node-0-1"])
    kept = await h.pod(ns, "pf-node-0-1")
    assert kept is not None and kept["status"]["phase"] == "Failed"


async def test_a_jobset_rule_on_pod_failure_policy_restarts_the_gang(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pfprestart")
    policy = {
        "maxRestarts": 1,
        "rules": [
            {"name": "pod-policy", "action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]},
            {"name": "otherwise", "action": "FailJobSet"},
        ],
    }
    await start(h, ns, policy_runtime("pfr", policy), "pr")
    await h.sim.finish(ns, "pr-node-0-0", exit_code=42)

    async def second_attempt() -> list[Obj] | None:
        pods = [
            p
            for p in await h.pods(ns, "pr")
            if p["metadata"]["labels"].get(ATTEMPT) == "1"
            and not p["metadata"].get("deletionTimestamp")
            and p.get("status", {}).get("phase") == "Running"
        ]
        return pods if len(pods) == 2 else None

    await eventually(second_attempt, what="both pods recreated as restart attempt 1")
    assert "RestartJobSetFailurePolicyAction" in await h.event_reasons(ns, "pr")
    # exit 1 is no rule's: the Job is past backoffLimit 0 (BackoffLimitExceeded), FailJobSet
    await h.sim.finish(ns, "pr-node-0-1", exit_code=1)
    tj = await wait_condition(h, ns, "pr", "Failed")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailJobSetFailurePolicyAction"


async def test_a_policy_the_job_api_refuses_is_refused_on_the_runtime(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pfpbad")
    runtime = policy_runtime("bad", restart_policy="OnFailure")
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["podFailurePolicy"][
        "rules"
    ].append({"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}})
    message = await refusal(h, h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns))
    job = "spec.template.spec.replicatedJobs[0].template.spec"
    assert (
        f'{job}.template.spec.restartPolicy: Invalid: OnFailure: only "Never" is supported when '
        "podFailurePolicy is specified"
    ) in message
    assert (
        f"{job}.podFailurePolicy.rules[2].action: Invalid: requires the backoffLimitPerIndex to be set"
    ) in message
