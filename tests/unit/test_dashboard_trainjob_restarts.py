"""The dashboard's Restarts column for a TrainJob: Trainer's status has no restart count, so the
row takes the TrainJob's whole-gang restarts from its pods — the planner stamps every pod of a
run with the run's record (`jobset.sigs.k8s.io/restart-attempt`, the snapshot's
`data.state.restarts`) — as the dashboard's informers see them, in whichever order the job and
its pods arrive. Other kinds keep their status' counts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, cast

from trainjobs import RUNTIME, UID

from kubetrain.dashboard.views import joblist, trainjob
from kubetrain.dashboard.views.kinds import TRAINJOB, served_kinds
from kubetrain.dashboard.views.podhistory import life_from_pod
from kubetrain.dashboard.watch import JobWatch
from kubetrain.jobs.trainjob import children as ch
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainplan import trainjob as trainjob_manifest

Obj = dict[str, Any]
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def train_job() -> Obj:
    job = trainjob_manifest()
    job["metadata"]["creationTimestamp"] = "2026-11-26T11:00:00Z"
    job["status"] = {"jobsStatus": [{"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 1}]}
    return job


def pods_of_run(restarts: int) -> list[Obj]:
    """The pods the planner creates for the run whose record counts `restarts`, as the API
    server stores them (uid, creationTimestamp)."""
    job = train_job()
    snapshot = ch.build_snapshot(job, RUNTIME, {"restarts": restarts, "failures": {}})
    snapshot["metadata"]["ownerReferences"][0]["uid"] = UID
    observed = Observed(pods=[], service={"metadata": {"name": "tj"}}, extra=[snapshot])
    pods = plan_trainjob(job, observed, RUNTIME, NOW, PlannerConfig()).create_pods
    assert pods, "the planner creates the run's pods"
    for i, pod in enumerate(pods):
        pod["metadata"].update(
            uid=f"pod-{restarts}-{i}", creationTimestamp=f"2026-11-26T11:{10 + restarts}:0{i}Z"
        )
    return pods


def watch() -> JobWatch:
    return JobWatch(cast(Any, None), served_kinds(["trainer.kubeflow.org"]))


def row(w: JobWatch) -> joblist.JobRow:
    return w.rows[(TRAINJOB.group, TRAINJOB.plural, "ns", "tj")]


def labelled(pod: Obj, **labels: str) -> Obj:
    pod = copy.deepcopy(pod)
    pod["metadata"]["labels"].update(labels)
    return pod


def test_a_pods_attempt_is_jobsets_label_on_a_trainjobs_pod() -> None:
    [first, _] = pods_of_run(2)
    assert first["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "2"
    assert life_from_pod(first).attempt == 2  # the Gantt chart's attempt of a TrainJob's pod
    assert trainjob.is_trainjob_pod(first)
    tally = trainjob.RestartTally()
    for pod in pods_of_run(0) + pods_of_run(3):
        tally.observe(pod)
    assert tally.total == 3
    tally.observe(labelled(first, **{"jobset.sigs.k8s.io/restart-attempt": "x"}))
    assert tally.total == 3


def test_restarts_of_single_jobs_add_to_the_whole_gang_restarts() -> None:
    """Under a RestartJob rule each pod also carries its own Job's restarts
    (`jobset.sigs.k8s.io/job-restart-attempt`), kept across whole-gang restarts: per Job the
    highest, added to the whole-gang attempt."""
    [a, b] = pods_of_run(1)
    job_a, job_b = "tj-node-0", "tj-node-1"
    tally = trainjob.RestartTally()
    for pod, job, attempt in ((a, job_a, "2"), (a, job_a, "1"), (b, job_b, "1"), (b, job_b, "0")):
        tally.observe(
            labelled(
                pod,
                **{"batch.kubernetes.io/job-name": job, "jobset.sigs.k8s.io/job-restart-attempt": attempt},
            )
        )
    assert (tally.gang, tally.jobs, tally.total) == (1, {job_a: 2, job_b: 1}, 4)


def test_the_row_counts_the_restarts_its_pods_carry() -> None:
    w = watch()
    w._on_job(TRAINJOB)(train_job())
    assert row(w).restarts == 0  # the status has no count, and no pod was seen yet
    for pod in pods_of_run(0):
        w._on_pod(pod)
    assert row(w).restarts == 0
    # a whole-gang restart: the old pods deleted, the next attempt's created
    for pod in pods_of_run(0):
        w._on_pod_delete(pod)
    for pod in pods_of_run(1):
        w._on_pod(pod)
    assert row(w).restarts == 1
    w._on_job(TRAINJOB)(train_job())  # the TrainJob's own update keeps it
    assert row(w).restarts == 1
    for pod in pods_of_run(1):
        w._on_pod_delete(pod)  # a suspended (or finished, past its TTL) TrainJob has no pods left
    w._on_job(TRAINJOB)(train_job())
    assert row(w).restarts == 1


def test_pods_seen_before_their_trainjob_count_too() -> None:
    """After a dashboard restart the informers list pods and jobs in any order."""
    w = watch()
    for pod in pods_of_run(4):
        w._on_pod(pod)
    w._on_job(TRAINJOB)(train_job())
    assert row(w).restarts == 4


def test_a_deleted_trainjobs_pods_leave_no_tally_behind() -> None:
    w = watch()
    w._on_job(TRAINJOB)(train_job())
    pods = pods_of_run(1)
    for pod in pods:
        w._on_pod(pod)
    w._on_job_delete(TRAINJOB)(train_job())
    for pod in pods:  # garbage collection: each pod updated (terminating), then deleted
        w._on_pod(pod)
        w._on_pod_delete(pod)
    assert w.restart_tallies == {}


def test_other_kinds_keep_their_status_counts() -> None:
    [tfjobs] = [k for k in served_kinds(["kubetrain.io"]) if k.kind == "TFJob"]
    w = JobWatch(cast(Any, None), [tfjobs])
    job = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "ns", "uid": "tf-uid"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1}}},
        "status": {"replicaStatuses": {"Worker": {"restarts": 2}}, "jobRestarts": 1},
    }
    w._on_job(tfjobs)(job)
    pod = copy.deepcopy(pods_of_run(5)[0])  # a pod with a restart-attempt label, owned by the TFJob
    pod["metadata"]["ownerReferences"][0]["uid"] = "tf-uid"
    w._on_pod(pod)
    assert w.rows[(tfjobs.group, tfjobs.plural, "ns", "tf")].restarts == 3


def test_a_runtime_that_restarts_single_jobs_counts_them_too() -> None:
    """The planner's pods after one whole-gang restart and two restarts of the warmup step's Job
    1 alone (a RestartJob rule; the record's `jobRestarts`): the row reads 3."""
    from .test_trainjob_restartjob import rule
    from .test_trainjob_restartjob import runtime as restart_job_runtime

    rt = restart_job_runtime(rule("RestartJob", "warmup"), max_restarts=5)
    job = train_job()
    state = {"restarts": 1, "countedRestarts": 1, "jobRestarts": {"warmup": [0, 2, 0]}}
    snapshot = ch.build_snapshot(job, rt, state)
    snapshot["metadata"]["ownerReferences"][0]["uid"] = UID
    observed = Observed(pods=[], service={"metadata": {"name": "tj"}}, extra=[snapshot])
    made = plan_trainjob(job, observed, rt, NOW, PlannerConfig()).create_pods
    assert {p["metadata"]["labels"].get("jobset.sigs.k8s.io/job-restart-attempt") for p in made} == {"0", "2"}
    w = watch()
    w._on_job(TRAINJOB)(job)
    for i, pod in enumerate(made):
        pod["metadata"].update(uid=f"pod-{i}", creationTimestamp="2026-11-26T11:30:00Z")
        w._on_pod(pod)
    assert row(w).restarts == 3
