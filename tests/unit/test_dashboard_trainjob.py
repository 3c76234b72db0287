"""What the dashboard shows of a Kubeflow Trainer TrainJob: its state from Trainer's conditions
and `jobsStatus` (no Created/Running conditions), the Replicas column per step (Jobs, not pods,
and says so), and the job page's steps instead of an empty replica table. The statuses are
written by the operator's own Trainer status projection, as a running TrainJob carries them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from kubetrain.dashboard.views import joblist, jobpage, trainjob
from kubetrain.dashboard.views.kinds import TRAINJOB, served_kinds
from kubetrain.jobs.projection import GroupTally
from kubetrain.jobs.shape import FAILED, SUCCEEDED
from kubetrain.operator.statusprojection import TRAINER

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)


def example_trainjob(name: str = "trainer/trainjob-torch.yaml") -> dict[str, Any]:
    docs = yaml.safe_load_all((ROOT / "examples" / name).read_text())
    job = next(d for d in docs if d and d.get("kind") == "TrainJob")
    job["metadata"].update(namespace="default", uid="uid-tj", creationTimestamp="2026-11-26T08:00:00Z")
    return dict(job)


def with_groups(job: dict[str, Any], *groups: GroupTally) -> dict[str, Any]:
    job = copy.deepcopy(job)
    status = job.setdefault("status", {})
    TRAINER.write_groups(status, list(groups))
    return job


def node(**counts: int) -> GroupTally:
    return GroupTally("node", 2, **counts)


def pod(name: str, step: str, phase: str) -> dict[str, Any]:
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": step}
    return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase}}


def test_a_trainjob_without_a_status_is_pending() -> None:
    job = example_trainjob()
    assert "status" not in job
    assert joblist.job_state(job) == "Pending"
    assert joblist.job_row(TRAINJOB, job).replicas == ""


def test_a_trainjob_whose_jobs_are_active_is_running_with_no_condition_at_all() -> None:
    job = with_groups(example_trainjob(), node(active=1, ready=1))
    assert "conditions" not in job["status"]  # Trainer writes no Running condition
    row = joblist.job_row(TRAINJOB, job)
    assert (row.state, row.replicas) == ("Running", "node 1/1")
    # Its jobs created, no pod active yet: not running yet.
    assert joblist.job_state(with_groups(example_trainjob(), node())) == "Pending"
    # One step done (an initializer), the trainer's Job not started: under way.
    init = GroupTally("dataset-initializer", 1, succeeded=1)
    assert joblist.job_state(with_groups(example_trainjob(), init, node())) == "Running"


def test_trainers_conditions_read_as_the_dashboards_states() -> None:
    running = with_groups(example_trainjob(), node(active=1, ready=1))
    suspended = copy.deepcopy(running)
    TRAINER.set_suspended(suspended["status"], "TrainJob", NOW)
    TRAINER.write_groups(suspended["status"], [node(suspended=1)])
    assert joblist.job_state(suspended) == "Suspended"
    assert joblist.job_row(TRAINJOB, suspended).replicas == "node 0/1"

    resumed = copy.deepcopy(suspended)
    TRAINER.set_resumed(resumed["status"], "TrainJob", NOW + timedelta(seconds=5))
    assert resumed["status"]["conditions"][0]["type"] == "Suspended"  # stays, status False
    assert joblist.job_state(resumed) == "Pending"  # resumed, no pod yet: not Suspended
    TRAINER.write_groups(resumed["status"], [node(active=1)])
    assert joblist.job_state(resumed) == "Running"

    complete = copy.deepcopy(resumed)
    TRAINER.set_finished(complete["status"], SUCCEEDED, "AllJobsCompleted", "done", NOW)
    TRAINER.write_groups(complete["status"], [node(succeeded=1)])
    assert [c["type"] for c in complete["status"]["conditions"]] == ["Suspended", "Complete"]
    assert joblist.job_state(complete) == "Succeeded"
    assert "Succeeded" in joblist.TERMINAL and "Complete" not in joblist.STATES
    assert joblist.job_row(TRAINJOB, complete).replicas == "node 1/1"

    failed = copy.deepcopy(running)
    TRAINER.set_finished(failed["status"], FAILED, "FailedJobs", "jobset failed", NOW)
    TRAINER.write_groups(failed["status"], [node(failed=1)])
    assert joblist.job_state(failed) == "Failed"
    assert joblist.job_row(TRAINJOB, failed).replicas == "node 0/1"


def test_a_suspended_trainjob_with_a_terminal_condition_reads_terminal() -> None:
    job = example_trainjob()
    job["status"] = {}
    TRAINER.set_suspended(job["status"], "TrainJob", NOW)
    TRAINER.set_finished(job["status"], FAILED, "DeadlineExceeded", "too long", NOW)
    assert joblist.job_state(job) == "Failed"


def test_the_list_filters_trainjobs_by_the_state_they_read() -> None:
    running = with_groups(example_trainjob(), node(active=1, ready=1))
    done = with_groups(example_trainjob(), node(succeeded=1))
    done["metadata"]["name"] = "done"
    TRAINER.set_finished(done["status"], SUCCEEDED, "AllJobsCompleted", "done", NOW)
    rows = [joblist.job_row(TRAINJOB, j) for j in (running, done)]
    page = joblist.build_page(rows, joblist.ListQuery(state="Running"))
    assert [r.name for r in page.rows] == ["trainjob-torch-mnist"]
    assert page.state_counts == {"Running": 1, "Succeeded": 1}


def test_the_replicas_cell_says_it_counts_jobs_per_step_not_pods() -> None:
    init = GroupTally("dataset-initializer", 1, succeeded=1)
    job = with_groups(example_trainjob(), init, node(active=1))
    row = joblist.job_row(TRAINJOB, job)
    assert row.replicas == "dataset-initializer 1/1 · node 1/1"
    assert "Jobs, not pods" in row.replicas_title and "status.jobsStatus" in row.replicas_title
    assert "node: 1 active, 0 ready, 0 succeeded, 0 failed, 0 suspended" in row.replicas_title
    assert "TrainJob" in joblist.REPLICAS_TITLE and "Pods of each replica type" in joblist.REPLICAS_TITLE


def test_other_kinds_are_unchanged() -> None:
    tf = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "t", "namespace": "a"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
        "status": {"conditions": [{"type": "Running", "status": "True"}]},
    }
    kind = next(k for k in served_kinds(["kubeflow.org"]) if k.kind == "TFJob")
    row = joblist.job_row(kind, tf)
    assert (row.state, row.replicas, row.replicas_title) == ("Running", "Worker 0/2", "")
    assert not trainjob.is_trainjob(tf)
    # A kind named TrainJob in another group is not Trainer's.
    assert not trainjob.is_trainjob({"apiVersion": "example.com/v1", "kind": "TrainJob"})


def test_the_steps_of_a_running_trainjob() -> None:
    init = GroupTally("dataset-initializer", 1, succeeded=1)
    job = with_groups(example_trainjob(), init, node(active=1, ready=1))
    pods = [
        pod("tj-dataset-initializer-0-0", "dataset-initializer", "Succeeded"),
        pod("tj-node-0-0", "node", "Running"),
        pod("tj-node-0-1", "node", "Pending"),
    ]
    lines = trainjob.steps(job, pods)
    assert [(s.name, s.nodes, s.pods) for s in lines] == [
        ("dataset-initializer", "", "0 running of 1"),
        ("node", "2", "1 running of 2"),
    ]
    assert lines[1].jobs == "1 active, 1 ready, 0 succeeded, 0 failed, 0 suspended"
    assert trainjob.steps(example_trainjob(), pods) == ()  # no status names a step yet
    unset = example_trainjob()
    del unset["spec"]["trainer"]["numNodes"]
    assert trainjob.steps(with_groups(unset, node(active=1)), [])[0].nodes == ""
    assert trainjob.steps(with_groups(unset, node(active=1)), [])[0].pods == "none"


def page_html(job: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    """The Spec part of the job page as the template renders it."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(ROOT / "kubetrain/dashboard/templates"), autoescape=True
    )
    source = env.loader.get_source(env, "job.html")[0]  # type: ignore[union-attr]
    spec_part = source[source.index('<section class="grid">') : source.index('<div data-live="progress"')]
    steps = trainjob.steps(job, pods) if trainjob.is_trainjob(job) else ()
    return env.from_string(spec_part).render(summary=jobpage.summary(job), steps=steps)


def test_the_job_page_shows_a_trainjobs_steps_and_no_empty_replica_table() -> None:
    job = with_groups(example_trainjob(), node(active=1, ready=1))
    html = page_html(job, [pod("tj-node-0-0", "node", "Running"), pod("tj-node-0-1", "node", "Running")])
    assert "Replica type" not in html
    assert "<th" in html and "Step" in html
    step = '<td class="title">node</td><td data-label="Nodes">2</td><td data-label="Pods">2 running of 2</td>'
    assert step in html
    assert "Step" not in page_html(example_trainjob(), [])  # no status yet: no table at all
    tf = {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}}
    assert "Replica type" in page_html(tf, []) and "Step" not in page_html(tf, [])


@pytest.mark.parametrize("example", ["trainer/trainjob-flux.yaml", "trainer/trainjob-torchtune.yaml"])
def test_every_trainjob_example_reads_running_once_its_jobs_are_active(example: str) -> None:
    job = with_groups(example_trainjob(example), node(active=1, ready=1))
    assert joblist.job_state(job) == "Running"


def test_suspend_and_resume_write_the_trainjobs_spec_suspend() -> None:
    assert trainjob.suspend_patch(True) == {"spec": {"suspend": True}}
    assert trainjob.suspend_patch(False) == {"spec": {"suspend": False}}
    job = example_trainjob()
    assert not trainjob.spec_suspended(job)
    job["spec"]["suspend"] = True
    assert trainjob.spec_suspended(job)
    assert trainjob.is_trainjob_kind(TRAINJOB.group, TRAINJOB.kind)
    assert not trainjob.is_trainjob_kind("kubeflow.org", "TFJob")
