"""The TrainJob producer of the job shape (jobs/trainjob/shape.py): one group per replicated
job in the runtime's order, JobSet's pod names as the shape's naming (so the shared slot code
finds the pods), dependsOn with JobSet's Ready (a Succeeded pod counts), the success policy as
the shape's rules, the TrainJob's run policy — and the planner deciding dependencies and
success through the shared slot code."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.jobs.shape import COMPLETE, READY, DependsOn
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import trainjob_shape
from kubetrain.operator.slots import dependencies_met, slot_pods
from kubetrain.operator.statusprojection import TRAINER

from .test_trainplan import RUNTIME, failed_jobs, pod, trainjob
from .test_trainplan_jobset_policies import names, plan, with_warmup

Obj = dict[str, Any]


def shape_of(job: Obj, runtime: Obj) -> Any:
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    return trainjob_shape(job, resolved, runtime["spec"]["template"]["spec"], TRAINER)


def warmup_runtime(replicas: int = 1, **template_spec: Any) -> Obj:
    runtime = with_warmup(**template_spec)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = replicas
    return runtime


def test_one_group_per_replicated_job_with_jobset_pod_names() -> None:
    runtime = warmup_runtime(replicas=2)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [
        {"name": "warmup", "status": "Complete"}
    ]
    shape = shape_of(trainjob(nodes=3), runtime)
    assert list(shape.groups) == ["warmup", "node"]
    assert (shape.count("warmup"), shape.count("node")) == (4, 3)  # 2 jobs x 2 pods; 1 job x 3 pods
    assert [shape.pod_name("warmup", k) for k in range(4)] == [
        "tj-warmup-0-0",
        "tj-warmup-0-1",
        "tj-warmup-1-0",
        "tj-warmup-1-1",
    ]
    assert shape.pod_name("node", 2) == "tj-node-0-2"
    assert shape.groups["node"].depends_on == (DependsOn("warmup", COMPLETE, succeeded_is_ready=True),)
    assert shape.groups["node"].container_name == "node"
    assert shape.kind == "TrainJob" and shape.layout.kind == "TrainJob"


def test_the_shared_slot_code_finds_trainjob_pods_by_name_only() -> None:
    shape = shape_of(trainjob(nodes=2), warmup_runtime())
    pods = [pod("tj-warmup-0-1"), pod("tj-node-0-0"), pod("tj-node-0-7"), pod("other-node-0-0")]
    slots, former = slot_pods(shape, pods)
    assert {k: v["metadata"]["name"] for k, v in slots.items()} == {
        ("warmup", 1): "tj-warmup-0-1",
        ("node", 0): "tj-node-0-0",
    }
    assert former == []


def test_ready_dependencies_count_succeeded_pods_as_jobset_does() -> None:
    runtime = warmup_runtime()
    runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [
        {"name": "warmup", "status": READY}
    ]
    shape = shape_of(trainjob(nodes=1), runtime)
    done = [pod("tj-warmup-0-0", phase="Succeeded", ready=False), pod("tj-warmup-0-1")]
    assert dependencies_met(shape, "node", slot_pods(shape, done)[0])
    waiting = [pod("tj-warmup-0-0", phase="Succeeded", ready=False), pod("tj-warmup-0-1", ready=False)]
    assert not dependencies_met(shape, "node", slot_pods(shape, waiting)[0])


def counts(**done: tuple[int, ...]) -> dict[str, ReplicaCounts]:
    return {g: ReplicaCounts(succeeded=len(i), succeeded_indices=frozenset(i)) for g, i in done.items()}


def test_the_success_policy_is_the_shapes_rule() -> None:
    # 2 warmup jobs of 2 pods; node: 1 job of 2 pods
    every = shape_of(trainjob(nodes=2), warmup_runtime(replicas=2))
    assert not every.succeeded(counts(warmup=(0, 1, 2, 3), node=(0,)))
    assert every.succeeded(counts(warmup=(0, 1, 2, 3), node=(0, 1)))
    policy = {"operator": "Any", "targetReplicatedJobs": ["warmup"]}
    anyone = shape_of(trainjob(nodes=2), warmup_runtime(replicas=2, successPolicy=policy))
    assert not anyone.succeeded(counts(warmup=(0, 3)))  # no job has both pods done
    assert anyone.succeeded(counts(warmup=(2, 3)))  # job 1 is done
    assert anyone.failed(counts()) is None


def test_the_run_policy_is_the_trainjobs() -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] = 30
    job = trainjob(
        suspend=True, activeDeadlineSeconds=600, managedBy="trainer.kubeflow.org/trainjob-controller"
    )
    policy = shape_of(job, runtime).run_policy
    assert (policy.suspend, policy.active_deadline_seconds, policy.ttl_seconds_after_finished) == (
        True,
        600,
        30,
    )
    assert policy.managed_by == "trainer.kubeflow.org/trainjob-controller"
    assert shape_of(trainjob(), RUNTIME).run_policy.ttl_seconds_after_finished is None


def test_a_ready_pod_of_an_earlier_attempt_does_not_meet_a_new_attempts_dependency() -> None:
    runtime = warmup_runtime()
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[1]["dependsOn"] = [{"name": "warmup", "status": READY}]
    job = trainjob(nodes=1)
    stale = [pod("tj-warmup-0-0", attempt=0), pod("tj-warmup-0-1", attempt=0)]
    p = plan(job, runtime, stale, {"restarts": 1})
    assert sorted(p.delete_pods) == ["tj-warmup-0-0", "tj-warmup-0-1"]
    assert names(p) == []  # the warmup slots are still taken, and the node waits for the new ones
    fresh = [pod("tj-warmup-0-0", attempt=1), pod("tj-warmup-0-1", attempt=1)]
    assert names(plan(job, runtime, fresh, {"restarts": 1})) == ["tj-node-0-0"]


def test_the_ttl_of_a_suspended_finished_trainjob_waits_as_every_kinds_does() -> None:
    from datetime import timedelta

    from .test_trainplan import NOW, finished_trainjob, runtime_with_ttl, snapshot
    from .test_trainplan import plan as plan_with

    job = finished_trainjob()
    pods = [pod("tj-node-0-0", phase="Succeeded")]
    job["spec"]["suspend"] = True
    p = plan_with(job, pods, [snapshot(job, runtime_with_ttl(0))], now=NOW + timedelta(days=1))
    assert p.delete_pods == [] and p.requeue_at is None
    job["spec"]["suspend"] = False
    p = plan_with(job, pods, [snapshot(job, runtime_with_ttl(0))], now=NOW + timedelta(days=1))
    assert p.delete_pods == ["tj-node-0-0"]


def with_restarts(p: Obj, restarts: int) -> Obj:
    p["status"]["containerStatuses"] = [{"name": "node", "restartCount": restarts}]
    return p


def test_the_failure_model_is_the_shapes_data() -> None:
    from kubetrain.jobs.failuremodel import DEFAULT_JOB_BACKOFF_LIMIT

    runtime = warmup_runtime()
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 3}
    failure = shape_of(trainjob(nodes=2), runtime).failure
    assert failure.backoff_limit("warmup") == 0
    assert failure.backoff_limit("node") == RUNTIME["spec"]["template"]["spec"]["replicatedJobs"][0][
        "template"
    ]["spec"].get("backoffLimit", DEFAULT_JOB_BACKOFF_LIMIT)
    assert failure.gang is not None and failure.gang.max_restarts == 3
    verdict = failure.gang.decide(failed_jobs("warmup"), 0)
    assert (verdict.restart, verdict.reason) == (True, "RestartJobSetFailurePolicyAction")
    assert failure.gang.decide(failed_jobs("warmup"), 3).reason == "ReachedMaxRestarts"
    # without a failurePolicy a failed replicated job fails the TrainJob
    plain = shape_of(trainjob(nodes=2), warmup_runtime()).failure
    assert plain.gang is not None and plain.gang.max_restarts == 0
    assert plain.gang.decide(failed_jobs("node"), 0).reason == "FailedJobs"
    # the v1 kinds keep the per-pod model (operator/restarts.py)
    from .test_job_shape import job, replica
    from .test_job_shape import shape_of as v1_shape_of

    v1 = v1_shape_of(job("TFJob", {"Worker": replica("TFJob", 2)}))
    assert v1.failure.gang is None and v1.gang_groups is None


def test_groups_fail_by_the_job_controllers_backoff_rule() -> None:
    from kubetrain.operator.groupfailure import judge

    runtime = warmup_runtime()
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[0]["template"]["spec"]["backoffLimit"] = 1
    rjobs[0]["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    rjobs[1]["template"]["spec"]["backoffLimit"] = 2
    rjobs[1]["template"]["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    shape = shape_of(trainjob(nodes=2), runtime)
    pods = [pod("tj-warmup-0-0", phase="Failed"), pod("tj-warmup-0-1"), pod("tj-node-0-0")]
    first = judge(shape, slot_pods(shape, pods)[0], set(), {})
    assert (first.delete, first.failures, first.failed) == (["tj-warmup-0-0"], {"warmup": 1}, [])
    second = judge(shape, slot_pods(shape, pods)[0], set(), {"warmup": 1})
    assert second.failed == ["warmup"]  # 2 failures > backoffLimit 1
    # OnFailure: container restarts of live pods count too (2 >= backoffLimit 2)
    restarted = [with_restarts(pod("tj-node-0-0"), 1), with_restarts(pod("tj-node-0-1"), 1)]
    assert judge(shape, slot_pods(shape, restarted)[0], set(), {}).failed == ["node"]
    # pods being deleted count for nothing
    deleting = judge(shape, slot_pods(shape, restarted)[0], {"tj-node-0-1"}, {})
    assert deleting.failed == []


def test_the_trainjob_gang_counts_the_steps_started_together_its_podgroup_built_as_every_jobs() -> None:
    from kubetrain.operator.jobchildren import build_pod_group

    runtime = warmup_runtime()
    runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [
        {"name": "warmup", "status": "Complete"}
    ]
    runtime["spec"]["podGroupPolicy"] = {"volcano": {"networkTopology": {"mode": "hard"}}}
    shape = shape_of(trainjob(nodes=2), runtime)
    assert shape.gang_groups == {"node"} and shape.gang_slots() == [("node", 0), ("node", 1)]
    group = build_pod_group(shape, "volcano")
    assert group is not None
    assert group["spec"]["minMember"] == 2  # the node pods, not the warmup pods they wait for
    assert group["spec"]["networkTopology"] == {"mode": "hard"}
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    cosched = build_pod_group(shape_of(trainjob(nodes=2), runtime), "scheduler-plugins")
    assert cosched is not None and cosched["spec"]["scheduleTimeoutSeconds"] == 60


def test_the_ml_policys_env_is_the_shapes_env_plugin() -> None:
    runtime = warmup_runtime()
    warmup_pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    warmup_pod["spec"]["containers"][0]["name"] = "warmup"  # Trainer refuses envInjection naming `node`
    runtime["spec"]["mlPolicy"]["torch"]["envInjection"] = {
        "targets": [{"jobName": "warmup", "containerNames": ["warmup"]}]
    }
    node_step = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    node_step["spec"]["containers"][0]["env"] = [
        {"name": "PET_NNODES", "value": "from-template"},
        {"name": "KEEP", "value": "1"},
    ]
    job = trainjob(nodes=2)
    resolved, _ = resolve(job, runtime)
    assert resolved is not None
    # the resolved templates hold no ML policy env: the shape's plug-in adds it to each pod
    [node_template] = [s for s in resolved.steps if s.name == "node"]
    template_env = node_template.pod_template["spec"]["containers"][0]["env"]
    assert [e["name"] for e in template_env] == ["PET_NNODES", "KEEP"]
    assert shape_of(job, runtime).plugin == resolved.env
    pods = {p["metadata"]["name"]: p for p in plan(job, runtime, []).create_pods}
    node = pods["tj-node-0-1"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert [e["name"] for e in node["env"]][:2] == ["PET_NNODES", "KEEP"]  # replaced in place
    assert env["PET_NNODES"] == "2" and env["PET_MASTER_PORT"] == "29500"
    assert {"containerPort": 29500} in node["ports"]
    warmup = {e["name"]: e.get("value") for e in pods["tj-warmup-0-0"]["spec"]["containers"][0]["env"]}
    assert warmup["PET_NNODES"] == "2" and warmup["PET_MASTER_ADDR"] == "tj-node-0-0.tj"
