"""JobSet's run policies in the TrainJob planner, as JobSet applies them: `startupPolicy`
InOrder (a replicated job starts once those before it have started), `failurePolicy.restartStrategy`
BlockingRecreate (no pod of a new attempt while one of an earlier attempt is left; Recreate: each
slot refilled as soon as it is free) and `coordinator` (every pod labelled and annotated with the
coordinator pod's address; an invalid one fails the TrainJob naming the field)."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainplan import NOW, RUNTIME, pod, snapshot, trainjob

Obj = dict[str, Any]
COORDINATOR = "jobset.sigs.k8s.io/coordinator"


def with_warmup(**template_spec: Any) -> Obj:
    """The torch runtime with a 2-pod `warmup` replicated job before `node`, no dependsOn."""
    runtime = copy.deepcopy(RUNTIME)
    spec = runtime["spec"]["template"]["spec"]
    rjobs = spec["replicatedJobs"]
    rjobs.insert(0, copy.deepcopy(rjobs[0]))
    rjobs[0]["name"] = "warmup"
    rjobs[0]["template"]["metadata"] = {}
    rjobs[0]["template"]["spec"]["parallelism"] = 2
    rjobs[0]["template"]["spec"]["completions"] = 2
    spec.update(template_spec)
    return runtime


def plan(job: Obj, runtime: Obj, pods: list[Obj], state: Obj | None = None) -> Any:
    observed = Observed(
        pods=pods, service={"metadata": {"name": "tj"}}, extra=[snapshot(job, runtime, state)]
    )
    return plan_trainjob(job, observed, runtime, NOW, PlannerConfig())


def names(p: Any) -> list[str]:
    return [x["metadata"]["name"] for x in p.create_pods]


def test_any_order_starts_every_replicated_job_at_once() -> None:
    job = trainjob(nodes=1)
    assert names(plan(job, with_warmup(), [])) == ["tj-warmup-0-0", "tj-warmup-0-1", "tj-node-0-0"]
    explicit = with_warmup(startupPolicy={"startupPolicyOrder": "AnyOrder"})
    assert names(plan(job, explicit, [])) == ["tj-warmup-0-0", "tj-warmup-0-1", "tj-node-0-0"]


def test_in_order_starts_a_replicated_job_once_those_before_it_started() -> None:
    job = trainjob(nodes=1)
    runtime = with_warmup(startupPolicy={"startupPolicyOrder": "InOrder"})
    assert names(plan(job, runtime, [])) == ["tj-warmup-0-0", "tj-warmup-0-1"]
    # one warmup pod not Ready yet: the node waits
    assert names(plan(job, runtime, [pod("tj-warmup-0-0"), pod("tj-warmup-0-1", ready=False)])) == []
    # Ready, Succeeded or Failed all count as started
    started = [pod("tj-warmup-0-0", phase="Succeeded", ready=False), pod("tj-warmup-0-1")]
    assert names(plan(job, runtime, started)) == ["tj-node-0-0"]


def test_in_order_does_not_wait_for_a_replicated_job_still_waiting_for_its_dependency() -> None:
    """JobSet skips a replicated job whose dependsOn is unmet and goes on with the next."""
    runtime = with_warmup(startupPolicy={"startupPolicyOrder": "InOrder"})
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[0]["dependsOn"] = [{"name": "node", "status": "Complete"}]
    job = trainjob(nodes=1)
    assert names(plan(job, runtime, [])) == ["tj-node-0-0"]


def restart_runtime(strategy: str | None) -> Obj:
    runtime = copy.deepcopy(RUNTIME)
    policy: Obj = {"maxRestarts": 3}
    if strategy is not None:
        policy["restartStrategy"] = strategy
    runtime["spec"]["template"]["spec"]["failurePolicy"] = policy
    return runtime


def test_recreate_refills_each_slot_as_soon_as_it_is_free() -> None:
    job = trainjob(nodes=2)
    for strategy in (None, "Recreate"):
        old = pod("tj-node-0-0", attempt=0)
        p = plan(job, restart_runtime(strategy), [old], {"restarts": 1})
        assert p.delete_pods == ["tj-node-0-0"]
        assert names(p) == ["tj-node-0-1"]


def test_blocking_recreate_waits_until_every_pod_of_the_earlier_attempt_is_gone() -> None:
    job = trainjob(nodes=2)
    runtime = restart_runtime("BlockingRecreate")
    old = pod("tj-node-0-0", attempt=0)
    p = plan(job, runtime, [old], {"restarts": 1})
    assert p.delete_pods == ["tj-node-0-0"]
    assert names(p) == []
    going = copy.deepcopy(old)
    going["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    assert names(plan(job, runtime, [going], {"restarts": 1})) == []  # still terminating
    p = plan(job, runtime, [], {"restarts": 1})
    assert names(p) == ["tj-node-0-0", "tj-node-0-1"]
    assert {x["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for x in p.create_pods} == {"1"}


def test_the_coordinator_address_labels_and_annotates_every_pod() -> None:
    runtime = with_warmup(coordinator={"replicatedJob": "node", "jobIndex": 0, "podIndex": 1})
    p = plan(trainjob(nodes=2), runtime, [])
    assert len(p.create_pods) == 4
    for created in p.create_pods:
        assert created["metadata"]["labels"][COORDINATOR] == "tj-node-0-1.tj"
        assert created["metadata"]["annotations"][COORDINATOR] == "tj-node-0-1.tj"


def test_without_coordinator_no_pod_gets_the_label() -> None:
    p = plan(trainjob(nodes=1), with_warmup(), [])
    assert all(COORDINATOR not in x["metadata"]["labels"] for x in p.create_pods)


def failed_reason_and_message(p: Any) -> tuple[str, str]:
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    return failed["reason"], failed["message"]


def test_an_invalid_coordinator_fails_the_trainjob_naming_the_field() -> None:
    cases = {
        "replicatedJob": {"replicatedJob": "nope"},
        "jobIndex": {"replicatedJob": "node", "jobIndex": 1},
        "podIndex": {"replicatedJob": "node", "podIndex": 2},
    }
    for field, coordinator in cases.items():
        p = plan(trainjob(nodes=2), with_warmup(coordinator=coordinator), [])
        assert not p.create_pods
        _, message = failed_reason_and_message(p)
        assert f"runtime.spec.template.spec.coordinator.{field}" in message, message


def test_a_steps_pods_are_its_parallelism_which_trainer_also_makes_its_completions() -> None:
    """Trainer's newRuntimeInfo counts a replicated job's pods as its `parallelism` (default 1)
    and writes that count into the Job's `completions` too (syncParallelCount): a runtime's own
    `completions` never makes more pods."""
    job = trainjob(nodes=1)
    runtime = with_warmup()
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] = 4
    assert names(plan(job, runtime, [])) == ["tj-warmup-0-0", "tj-warmup-0-1", "tj-node-0-0"]
    del runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"]
    assert names(plan(job, runtime, [])) == ["tj-warmup-0-0", "tj-node-0-0"]
