"""The TrainJob planner (operator/trainplan.py), pure: what it decides from a TrainJob, its
runtime and observed pods — the snapshot taken once and used ever after, no duplicate pod after
an operator restart, restarts counted from the snapshot's record, the deadline at its exact
time, dependsOn, and Trainer's conditions only."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from trainjobs import RUNTIME, failed_jobs, planned_trainjob, stored_snapshot, trainjob_pod

from kubetrain.jobs.trainjob import children as ch
from kubetrain.operator.draft import CreateFailure, Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


pod = trainjob_pod
trainjob = planned_trainjob


snapshot = stored_snapshot


def plan(
    job: Obj, pods: list[Obj], extra: list[Obj], runtime: Obj | None = RUNTIME, now: datetime = NOW
) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=extra)
    return plan_trainjob(job, observed, runtime, now, PlannerConfig())


def test_first_reconcile_snapshots_the_runtime_then_creates_every_node() -> None:
    p = plan(trainjob(), [], [])
    [snap] = p.create_children
    assert snap["metadata"]["name"] == "tj-runtime-snapshot"
    assert yaml.safe_load(snap["data"]["runtime"])["metadata"]["name"] == "torch-distributed"
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0", "tj-node-0-1"]
    assert p.status is not None and "conditions" not in p.status  # no Created/Running


def test_a_full_pass_of_a_trainjob_says_the_next_one_continues_it() -> None:
    job = trainjob()
    observed = Observed(pods=[], service={"metadata": {"name": "tj"}}, extra=[snapshot(job)])
    first = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig(max_pod_creates=1))
    assert len(first.create_pods) == 1 and first.creates_continue
    assert not plan(job, [], [snapshot(job)]).creates_continue  # both nodes in one pass


def test_the_snapshot_wins_over_a_changed_or_deleted_runtime() -> None:
    job = trainjob()
    changed = copy.deepcopy(RUNTIME)
    node = changed["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["image"] = "changed"
    for live in (changed, None):
        p = plan(job, [], [snapshot(job)], runtime=live)
        assert {x["spec"]["containers"][0]["image"] for x in p.create_pods} == {
            RUNTIME["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
                "containers"
            ][0]["image"]
        }
        assert not p.create_children


def test_after_an_operator_restart_existing_pods_are_not_created_again() -> None:
    job = trainjob(nodes=3)
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-2", phase="Pending")], [snapshot(job)])
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-1"]
    assert not p.delete_pods


def test_restarts_are_counted_from_the_snapshot_record() -> None:
    job = trainjob()
    runtime = copy.deepcopy(RUNTIME)
    rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    rjob["backoffLimit"] = 0
    rjob["template"]["spec"]["restartPolicy"] = "Never"
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
    # attempt 1 already happened (recorded); a pod of attempt 1 fails now
    snap = snapshot(job, runtime, {"restarts": 1, "failures": {}})
    p = plan(job, [pod("tj-node-0-0", attempt=1), pod("tj-node-0-1", phase="Failed", attempt=1)], [snap])
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]
    # the status does not record it: the plan counts it (kubetrain_jobs_restarted_total)
    assert p.restarts == 1
    [update] = p.update_children
    assert json.loads(update["data"]["state"]) == {
        "restarts": 2,
        "countedRestarts": 2,
        "failures": {},
        "restartedAt": "2026-11-25T12:00:00Z",  # when attempt 2 began (stall detection)
    }
    assert update["metadata"]["resourceVersion"] == "7"
    # the last allowed restart used: the next failure fails the TrainJob
    snap = snapshot(job, runtime, {"restarts": 2, "failures": {}})
    p = plan(job, [pod("tj-node-0-0", attempt=2), pod("tj-node-0-1", phase="Failed", attempt=2)], [snap])
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ReachedMaxRestarts" and failed["lastTransitionTime"] == "2026-11-25T12:00:00Z"


def test_pods_of_an_earlier_attempt_are_deleted_before_new_ones_are_made() -> None:
    job = trainjob()
    snap = snapshot(job, state={"restarts": 1})
    p = plan(job, [pod("tj-node-0-0", attempt=0)], [snap])
    assert p.delete_pods == ["tj-node-0-0"]
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-1"]  # 0-0's slot is still taken
    assert p.create_pods[0]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"


def test_the_deadline_requeues_at_its_exact_time_then_fails() -> None:
    job = trainjob(activeDeadlineSeconds=120)
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snapshot(job)])
    assert p.requeue_at == datetime(2026, 11, 25, 12, 1, 0, tzinfo=UTC)
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snapshot(job)], now=NOW + timedelta(seconds=60))
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]


def test_dependson_ready_waits_for_every_pod_ready() -> None:
    runtime = copy.deepcopy(RUNTIME)
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs.insert(0, copy.deepcopy(rjobs[0]))
    rjobs[0]["name"] = "warmup"
    rjobs[0]["template"]["metadata"] = {}
    rjobs[0]["template"]["spec"]["parallelism"] = 2
    rjobs[0]["template"]["spec"]["completions"] = 2
    rjobs[1]["dependsOn"] = [{"name": "warmup", "status": "Ready"}]
    job = trainjob(nodes=1)
    snap = snapshot(job, runtime)
    p = plan(job, [pod("tj-warmup-0-0"), pod("tj-warmup-0-1", ready=False)], [snap])
    assert not p.create_pods
    p = plan(job, [pod("tj-warmup-0-0"), pod("tj-warmup-0-1")], [snap])
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0"]


def test_a_missing_runtime_is_an_event_not_a_condition() -> None:
    p = plan(trainjob(), [], [], runtime=None)
    assert [e.reason for e in p.events] == ["RuntimeNotFound"]
    assert p.status is None and not p.create_pods


def test_a_suspended_trainjob_without_its_runtime_is_suspended_as_in_trainer() -> None:
    # Trainer's Reconcile sets the Suspended condition after the runtime lookup whatever it
    # found (setSuspendedCondition): a suspended TrainJob whose runtime is missing says so.
    job = trainjob(suspend=True)
    p = plan(job, [], [], runtime=None)
    assert [e.reason for e in p.events] == ["RuntimeNotFound", "Suspended"]
    [cond] = p.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Suspended", "True", "Suspended")
    assert cond["message"] == "TrainJob is suspended"
    assert not p.create_pods and not p.create_children
    # Resumed while the runtime is still missing: Suspended False, reason Resumed.
    job["status"] = p.status
    job["spec"]["suspend"] = False
    p = plan(job, [], [], runtime=None)
    [cond] = p.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Suspended", "False", "Resumed")
    # Nothing changes on the next reconcile.
    job["status"] = p.status
    assert plan(job, [], [], runtime=None).status is None


def test_a_suspended_trainjob_its_runtime_cannot_run_fails_and_is_suspended() -> None:
    job = trainjob(nodes=2, suspend=True)
    job["metadata"]["name"] = "t" * 55  # `<55>-node-0-1`: 64 characters
    p = plan(job, [], [])
    conditions = {x["type"]: (x["status"], x["reason"]) for x in p.status["conditions"]}
    assert conditions == {
        "Failed": ("True", "TrainingRuntimeNotSupported"),
        "Suspended": ("True", "Suspended"),
    }


def test_a_trainjob_breaking_a_rule_of_the_runtime_it_is_built_from_fails_naming_the_field() -> None:
    """kubeflow/trainer#3975: the runtime changed after admission (torch → JAX, whose ML policy
    sets JAX_PROCESS_ID): the first reconcile checks the TrainJob against it, as admission does."""
    jax = copy.deepcopy(RUNTIME)
    jax["spec"]["mlPolicy"] = {"numNodes": 1, "jax": {}}
    job = trainjob(nodes=1)
    job["spec"]["trainer"]["env"] = [{"name": "JAX_PROCESS_ID", "value": "0"}]
    p = plan(job, [], [], runtime=jax)
    [failed] = p.status["conditions"]
    assert (failed["type"], failed["reason"]) == ("Failed", "TrainingRuntimeNotSupported")
    assert "spec.trainer.env[0].name" in failed["message"] and "JAX_PROCESS_ID" in failed["message"]
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "TrainingRuntimeNotSupported")]
    assert not p.create_pods and not p.create_children
    # The same TrainJob built from the torch runtime it was admitted with runs.
    assert plan(job, [], []).create_pods


def gang_plan(job: Obj, runtime: Obj, gang: str, pods: list[Obj], pod_group: Obj | None) -> Any:
    observed = Observed(
        pods=pods, service={"metadata": {"name": "tj"}}, pod_group=pod_group, extra=[snapshot(job, runtime)]
    )
    return plan_trainjob(job, observed, runtime, NOW, PlannerConfig(gang_scheduler=gang))


def test_pod_group_policy_volcano_gets_a_podgroup_and_pods_wait_for_admission() -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {"volcano": {}}
    job = trainjob(nodes=2, trainer={"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "2"}}})
    p = gang_plan(job, runtime, "volcano", [], None)
    assert p.create_pod_group is not None and not p.create_pods
    assert p.create_pod_group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert p.create_pod_group["spec"] == {"minMember": 2, "minResources": {"cpu": "4"}}
    assert p.create_pod_group["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    pending = {"metadata": {"name": "tj"}, "status": {"phase": "Pending"}}
    assert not gang_plan(job, runtime, "volcano", [], pending).create_pods
    admitted = {"metadata": {"name": "tj"}, "status": {"phase": "Inqueue"}}
    pods = gang_plan(job, runtime, "volcano", [], admitted).create_pods
    assert [x["spec"]["schedulerName"] for x in pods] == ["volcano", "volcano"]
    assert pods[0]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tj"
    assert pods[0]["metadata"]["annotations"]["volcano.sh/task-spec"] == "node"


def test_coscheduling_needs_scheduler_plugins() -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 100}}
    job = trainjob(nodes=2)
    p = gang_plan(job, runtime, "scheduler-plugins", [], None)
    assert p.create_pod_group is not None
    assert p.create_pod_group["spec"]["scheduleTimeoutSeconds"] == 100
    assert p.create_pod_group["spec"]["minMember"] == 2
    assert [x["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for x in p.create_pods] == ["tj", "tj"]
    p = gang_plan(job, runtime, "none", [], None)
    assert p.create_pod_group is None and len(p.create_pods) == 2
    assert "PodGroupPolicyNotServed" in [e.reason for e in p.events]


def test_a_snapshot_of_an_earlier_trainjob_of_the_name_is_not_used() -> None:
    job = trainjob()
    old = snapshot(job, state={"restarts": 5})
    old["metadata"]["ownerReferences"][0]["uid"] = "an-earlier-uid"
    p = plan(job, [], [old])
    [snap] = p.create_children  # its own, from the live runtime
    assert json.loads(snap["data"]["state"]) == {"restarts": 0, "failures": {}}
    assert p.create_pods[0]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"


def test_jobset_failure_policy_rules() -> None:
    from kubetrain.jobs.trainjob.failurepolicy import decide

    assert decide("tj", None, failed_jobs("node"), 0).reason == "FailedJobs"
    never = decide("tj", {"maxRestarts": 0}, failed_jobs("node"), 0)
    assert (never.restart, never.reason) == (False, "ReachedMaxRestarts")
    assert never.message.endswith("(first failed job: tj-node-0)")
    policy = {
        "maxRestarts": 1,
        "rules": [
            {"action": "FailJobSet", "targetReplicatedJobs": ["dataset-initializer"]},
            {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["BackoffLimitExceeded"]},
        ],
    }
    failed = decide("tj", policy, failed_jobs("dataset-initializer", "node"), 0)
    assert (failed.restart, failed.reason) == (False, "FailJobSetFailurePolicyAction")
    ignoring = decide("tj", policy, failed_jobs("node"), 5)
    assert (ignoring.restart, ignoring.counts) == (True, False)
    assert ignoring.reason == "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
    other = {
        "maxRestarts": 1,
        "rules": [{"action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]}],
    }
    restart = decide("tj", other, failed_jobs("node"), 0)  # no rule applies: RestartJobSet
    assert (restart.restart, restart.counts, restart.reason) == (
        True,
        True,
        "RestartJobSetFailurePolicyAction",
    )
    assert decide("tj", other, failed_jobs("node"), 1).reason == "ReachedMaxRestarts"


def finished_trainjob(ctype: str = "Complete") -> Obj:
    job = trainjob()
    job["status"] = {
        "conditions": [
            {
                "type": ctype,
                "status": "True",
                "reason": "AllJobsCompleted" if ctype == "Complete" else "FailedJobs",
                "message": "done",
                "lastTransitionTime": "2026-11-25T12:00:00Z",
            }
        ]
    }
    return job


def runtime_with_ttl(seconds: int) -> Obj:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] = seconds
    return runtime


def test_ttl_after_finished_deletes_the_finished_pods_at_its_exact_time() -> None:
    job = finished_trainjob()
    pods = [pod("tj-node-0-0", phase="Succeeded"), pod("tj-node-0-1", phase="Succeeded")]
    snap = snapshot(job, runtime_with_ttl(60))
    p = plan(job, pods, [snap], now=NOW + timedelta(seconds=59))
    assert p.delete_pods == []
    assert p.requeue_at == NOW + timedelta(seconds=60)
    p = plan(job, pods, [snap], now=NOW + timedelta(seconds=60))
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]
    assert p.status is None  # the TrainJob and its conditions stay, as in Trainer


def test_a_failed_trainjob_honours_the_ttl_and_no_ttl_keeps_the_pods() -> None:
    job = finished_trainjob("Failed")
    pods = [pod("tj-node-0-0", phase="Failed")]
    p = plan(job, pods, [snapshot(job, runtime_with_ttl(0))])
    assert p.delete_pods == ["tj-node-0-0"]
    p = plan(job, pods, [snapshot(job)], now=NOW + timedelta(days=30))
    assert p.delete_pods == [] and p.requeue_at is None


def test_kubedls_tensorboard_annotation_makes_nothing_for_a_trainjob() -> None:
    """A TrainJob's status has no place for KubeDL's TensorBoard: its shape serves none, so the
    annotation neither adds a pod nor touches the status."""
    from kubetrain.api.labels import KUBEDL_ANNOTATION_TENSORBOARD

    job = trainjob()
    job["metadata"]["annotations"] = {KUBEDL_ANNOTATION_TENSORBOARD: json.dumps({"logDir": "/logs"})}
    p = plan(job, [], [])
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-0", "tj-node-0-1"]
    assert p.tensorboard_creates == [] and "tensorBoard" not in (p.status or {})


def test_a_complete_condition_kubetrain_did_not_write_deletes_no_running_pod() -> None:
    job = finished_trainjob()
    pods = [pod("tj-node-0-0", phase="Succeeded"), pod("tj-node-0-1")]
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=[snapshot(job)])
    p = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())
    assert p.delete_pods == [] and p.status is None
    assert [e.reason for e in p.events] == ["UnverifiedStatus"]
    observed.terminal_recorded = True  # this operator process wrote it
    p = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())
    assert p.delete_pods == ["tj-node-0-1"] and p.events == []


def test_a_running_pod_goes_when_the_trainjob_finishes_not_when_its_ttl_expires() -> None:
    """JobSet issue 666: with `ttlSecondsAfterFinished` set, JobSet kept a finished JobSet's
    active Jobs (and their pods) until the TTL deleted it all. Here a pod still running when the
    TrainJob finishes is deleted at once; the TTL later takes the finished pods only."""
    job = finished_trainjob()
    pods = [pod("tj-node-0-0", phase="Succeeded"), pod("tj-node-0-1")]
    snap = snapshot(job, runtime_with_ttl(600))
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=[snap], terminal_recorded=True)
    p = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())
    assert p.delete_pods == ["tj-node-0-1"] and p.requeue_at == NOW + timedelta(seconds=600)
    observed.pods = [pods[0]]
    p = plan_trainjob(job, observed, RUNTIME, NOW + timedelta(seconds=600), PlannerConfig())
    assert p.delete_pods == ["tj-node-0-0"]


def test_the_plan_that_writes_complete_says_it_finishes_the_trainjob() -> None:
    """The applier records a finish it wrote itself (the trust rule's `terminal_recorded`) from
    `Plan.finishes`: for a TrainJob that is Trainer's Complete, not Kubeflow's Succeeded."""
    job = trainjob()
    snap = snapshot(job)
    running = [pod("tj-node-0-0"), pod("tj-node-0-1")]
    assert not plan(job, running, [snap]).finishes
    done = [pod("tj-node-0-0", phase="Succeeded"), pod("tj-node-0-1", phase="Succeeded")]
    p = plan(job, done, [snap])
    conditions = {c["type"]: c["status"] for c in (p.status or {}).get("conditions", [])}
    assert conditions.get("Complete") == "True" and p.finishes
    assert p.outcome == "Succeeded"  # counted once in kubetrain_jobs_succeeded_total


def test_pods_refused_in_the_last_wave_are_a_warning_at_each_retry_and_no_condition() -> None:
    job = trainjob()
    refused = CreateFailure(
        "FailedCreatePod", 'could not create pod tj-node-0-1: pods "tj-node-0-1" is forbidden'
    )
    observed = Observed(
        pods=[pod("tj-node-0-0")],
        service={"metadata": {"name": "tj"}},
        extra=[snapshot(job)],
        create_failure=refused,
    )
    p = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig())
    assert [x["metadata"]["name"] for x in p.create_pods] == ["tj-node-0-1"]  # retried
    assert [(e.type, e.reason, e.message) for e in p.events] == [
        ("Warning", "FailedCreatePod", f"TrainJob tj: {refused.message}")
    ]
    assert "conditions" not in (p.status or {})
    # nothing left to create: nothing to tell
    both = Observed(
        pods=[pod("tj-node-0-0"), pod("tj-node-0-1")],
        service={"metadata": {"name": "tj"}},
        extra=[snapshot(job)],
        create_failure=refused,
    )
    assert not plan_trainjob(job, both, RUNTIME, NOW, PlannerConfig()).events


def test_a_trainjob_whose_pod_hostnames_would_be_too_long_fails_without_pods() -> None:
    job = trainjob(nodes=2)
    job["metadata"]["name"] = "t" * 55  # `<55>-node-0-1`: 64 characters
    p = plan(job, [], [])
    assert not p.create_pods
    [failed] = [x for x in (p.status or {}).get("conditions") or [] if x["type"] == "Failed"]
    assert failed["reason"] == "TrainingRuntimeNotSupported"
    assert "must be no more than 54 characters for this runtime and numNodes" in failed["message"]


def test_the_webhook_reads_only_the_trainjobs_own_snapshot() -> None:
    """An update is checked against the TrainJob's snapshot (kubeflow/trainer#3923): one left by
    an earlier TrainJob of the name, or one that cannot be read, is none (the live runtime is)."""
    job = trainjob()
    assert ch.frozen_runtime(snapshot(job), job) == ch.snapshot_runtime(RUNTIME)
    earlier = snapshot(job)
    earlier["metadata"]["ownerReferences"][0]["uid"] = "an-earlier-trainjob"
    assert ch.frozen_runtime(earlier, job) is None
    broken = snapshot(job)
    broken["data"]["state"] = "{not json"
    assert ch.frozen_runtime(broken, job) is None
