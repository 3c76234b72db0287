"""The dashboard's view models: list rows and pages, pod lives, the Gantt chart, plots, submit
errors, credentials. Pure functions, times as epoch seconds."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dashboard.views import joblist, podhistory, progress, timeline
from kubetrain.dashboard.views.auth import LOCAL, PROXY, TOKEN, Credentials, Sessions, credentials
from kubetrain.dashboard.views.kinds import JobKind, register, resolve, served_kinds, url_segment
from kubetrain.dashboard.views.submit import field_errors, parse_manifest
from kubetrain.dashboard.views.timeutil import iso_time

T0 = 1_800_000_000.0
KINDS = served_kinds(["kubetrain.io", "kubeflow.org"])
TF = next(k for k in KINDS if k.kind == "TFJob" and k.group == "kubetrain.io")
PT = next(k for k in KINDS if k.kind == "PyTorchJob" and k.group == "kubetrain.io")
TF_KF = next(k for k in KINDS if k.kind == "TFJob" and k.group == "kubeflow.org")


def cond(type_: str, status: str = "True", at: float = T0, reason: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": iso_time(at)}


def a_job(
    name: str, *conds: dict[str, Any], ns: str = "a", created: float = T0, **status: Any
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": iso_time(created),
        },
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
        "status": {"conditions": list(conds), **status},
    }


# --- kinds ------------------------------------------------------------------------------------------


def test_kinds_follow_the_registry_in_every_group_and_resolve_plural_or_qualified() -> None:
    assert {(k.group, k.kind) for k in KINDS} >= {("kubetrain.io", "MPIJob"), ("kubeflow.org", "JAXJob")}
    assert resolve(KINDS, "tfjobs") == TF
    assert resolve(KINDS, "tfjobs.kubeflow.org") == TF_KF
    assert resolve(KINDS, "nosuchjobs") is None
    assert url_segment(KINDS, TF) == "tfjobs" and url_segment(KINDS, TF_KF) == "tfjobs.kubeflow.org"


def test_trainjobs_with_the_trainer_group() -> None:
    kinds = served_kinds(["kubetrain.io", "trainer.kubeflow.org"])
    assert [k for k in kinds if k.group == "trainer.kubeflow.org"] == [
        JobKind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
    ]


def test_a_registered_kind_is_served() -> None:
    trainjob = JobKind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
    register(trainjob)
    assert trainjob in served_kinds(["kubetrain.io"])
    assert resolve(served_kinds(["kubetrain.io"]), "trainjobs") == trainjob


# --- list -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conds", "state"),
    [
        ((), "Pending"),
        ((cond("Created"),), "Created"),
        ((cond("Created"), cond("Running")), "Running"),
        ((cond("Created"), cond("Running", "False", reason="GangScheduling")), "GangScheduling"),
        ((cond("Running"), cond("Restarting")), "Restarting"),
        ((cond("Running"), cond("Suspended")), "Suspended"),
        ((cond("Running", "False"), cond("Failed"), cond("Restarting")), "Failed"),
        ((cond("Succeeded"), cond("Running", "False")), "Succeeded"),
    ],
)
def test_job_state(conds: tuple[dict[str, Any], ...], state: str) -> None:
    assert joblist.job_state(a_job("j", *conds)) == state


def test_row_summarises_replicas_restarts_and_progress() -> None:
    job = a_job(
        "j",
        cond("Running"),
        replicaStatuses={"Worker": {"active": 1, "restarts": 2}},
        jobRestarts=1,
        trainerStatus={"progressPercentage": 42},
    )
    row = joblist.job_row(TF, job)
    assert (row.replicas, row.restarts, row.progress, row.state) == ("Worker 1/2", 3, 42.0, "Running")


def test_query_errors_name_the_parameter_and_what_is_valid() -> None:
    query, errors = joblist.parse_query(
        {"sort": "size", "state": "Sleeping", "page": "x", "per_page": "7", "kind": "nojobs"}, KINDS
    )
    assert query == joblist.ListQuery()
    joined = " | ".join(errors)
    for part in ('sort: "size"', 'state: "Sleeping"', 'page: "x"', "per_page: 7", 'kind: "nojobs"'):
        assert part in joined
    assert "valid: created, name" in joined
    query, errors = joblist.parse_query({"kind": "pytorchjobs", "order": "asc"}, KINDS)
    assert not errors and query.kind == "pytorchjobs.kubetrain.io" and not query.descending


def rows(n: int) -> list[joblist.JobRow]:
    out = []
    for i in range(n):
        state = ("Running", "Succeeded", "Failed")[i % 3]
        kind = TF if i % 2 else PT
        out.append(joblist.job_row(kind, a_job(f"j{i:03d}", cond(state), ns=f"ns{i % 4}", created=T0 + i)))
    return out


def test_page_filters_counts_sorts_and_paginates() -> None:
    all_rows = rows(120)
    page = joblist.build_page(all_rows, joblist.ListQuery(per_page=50, page=3))
    assert page.total == 120 and page.pages == 3 and len(page.rows) == 20
    assert page.rows[0].name == "j019"  # newest first: page 3 holds the 20 oldest
    q = joblist.ListQuery(namespace="ns1", state="Failed", kind=TF.resource, sort="name", descending=False)
    page = joblist.build_page(all_rows, q)
    assert all(r.namespace == "ns1" and r.state == "Failed" and r.kind == TF for r in page.rows)
    assert [r.name for r in page.rows] == sorted(r.name for r in page.rows)
    # counts: states under the namespace+kind filters, kinds under namespace+state
    assert page.state_counts["Failed"] == page.total
    assert sum(page.state_counts.values()) == sum(
        1 for r in all_rows if r.namespace == "ns1" and r.kind == TF
    )
    assert page.kind_counts[TF.resource] == page.total
    assert page.namespaces == ["ns0", "ns1", "ns2", "ns3"]
    beyond = joblist.build_page(all_rows, joblist.ListQuery(page=99))
    assert beyond.page == beyond.pages == 3


def test_params_leave_defaults_out() -> None:
    q = joblist.ListQuery(namespace="a", page=2)
    assert q.params() == {"namespace": "a", "page": "2"}
    assert q.params(page=1, sort="name") == {"namespace": "a", "sort": "name"}


# --- pod lives --------------------------------------------------------------------------------------


def pod(
    name: str,
    uid: str,
    phase: str,
    *,
    created: float,
    started: float | None = None,
    finished: float | None = None,
    exit_code: int | None = None,
    reason: str = "",
    last: dict[str, Any] | None = None,
    restarts: int = 0,
    attempt: int | None = None,
    owner: str = "job-uid",
) -> dict[str, Any]:
    rtype, _, index = name.rpartition("-")
    labels = {"kubetrain.io/replica-type": rtype.split("-")[-1], "kubetrain.io/replica-index": index}
    if attempt is not None:
        labels["kubetrain.io/attempt"] = str(attempt)
    state: dict[str, Any] = {}
    if phase == "Running" and started is not None:
        state = {"running": {"startedAt": iso_time(started)}}
    if finished is not None:
        state = {
            "terminated": {
                "startedAt": iso_time(started or created),
                "finishedAt": iso_time(finished),
                "exitCode": exit_code,
                "reason": reason,
            }
        }
    cs: dict[str, Any] = {"name": "main", "state": state, "restartCount": restarts}
    if last:
        cs["lastState"] = {"terminated": last}
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "labels": labels,
            "creationTimestamp": iso_time(created),
            "ownerReferences": [{"controller": True, "uid": owner}],
        },
        "status": {
            "phase": phase,
            "containerStatuses": [cs],
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": iso_time(created + 1)}
            ],
        },
    }


# j-worker-0's first run: started at T0 + 2, exit code 1 at T0 + 10
FIRST_RUN = {"startedAt": iso_time(T0 + 2), "finishedAt": iso_time(T0 + 10), "exitCode": 1, "reason": "Error"}


def oom_killed_on_restart() -> dict[str, Any]:
    """j-worker-0 (uid u1) after FIRST_RUN: restarted in place at T0 + 11, OOMKilled at T0 + 20."""
    return pod(
        "j-worker-0",
        "u1",
        "Failed",
        created=T0,
        started=T0 + 11,
        finished=T0 + 20,
        exit_code=137,
        reason="OOMKilled",
        last=FIRST_RUN,
        restarts=1,
    )


def test_history_keeps_a_deleted_pod_and_its_in_place_restarts() -> None:
    h = podhistory.PodHistory()
    h.observe(pod("j-worker-0", "u1", "Pending", created=T0), T0)
    h.observe(pod("j-worker-0", "u1", "Running", created=T0, started=T0 + 2), T0 + 2)
    h.observe(
        pod("j-worker-0", "u1", "Running", created=T0, started=T0 + 11, last=FIRST_RUN, restarts=1), T0 + 11
    )
    h.observe(oom_killed_on_restart(), T0 + 20)
    h.deleted(
        pod("j-worker-0", "u1", "Failed", created=T0, started=T0 + 11, finished=T0 + 20, exit_code=137),
        T0 + 21,
    )
    h.observe(pod("j-worker-0", "u2", "Running", created=T0 + 22, started=T0 + 23), T0 + 23)
    lives = h.lives("job-uid")
    assert [life.uid for life in lives] == ["u1", "u2"]
    first = lives[0]
    assert (first.phase, first.exit_code, first.reason, first.deleted) == (
        "Failed",
        137,
        "OOMKilled",
        T0 + 21,
    )
    assert first.runs == (podhistory.ContainerRun("main", T0 + 2, T0 + 10, 1, "Error"),)
    assert first.slot == "worker-0" and first.scheduled == T0 + 1


def test_history_is_bounded_per_job_and_in_jobs() -> None:
    h = podhistory.PodHistory(max_pods_per_job=3, max_jobs=2)
    for i in range(5):
        h.observe(
            pod(
                f"j-worker-{i}",
                f"u{i}",
                "Failed",
                created=T0 + i,
                started=T0 + i,
                finished=T0 + i + 1,
                exit_code=1,
            ),
            T0 + i,
        )
    assert [life.uid for life in h.lives("job-uid")] == ["u2", "u3", "u4"]
    h.observe(pod("k-worker-0", "k", "Running", created=T0, started=T0, owner="job-2"), T0)
    h.observe(pod("m-worker-0", "m", "Running", created=T0, started=T0, owner="job-3"), T0)
    assert h.lives("job-uid") == [] and h.pod_count() == 2


# --- gantt ------------------------------------------------------------------------------------------


def test_each_restart_is_its_own_bar_with_exit_code_and_the_operators_reason() -> None:
    lives = [
        podhistory.life_from_pod(
            oom_killed_on_restart(),
            None,
            T0 + 20,
        ),
        podhistory.life_from_pod(
            pod("j-worker-0", "u2", "Running", created=T0 + 22, started=T0 + 25), None, T0 + 30
        ),
        podhistory.life_from_pod(
            pod("j-master-0", "u3", "Running", created=T0, started=T0 + 1), None, T0 + 30
        ),
    ]
    events = [
        {
            "type": "Warning",
            "reason": "Restarting",
            "lastTimestamp": iso_time(T0 + 21),
            "message": "pod j-worker-0 failed with exit code 137 (OOMKilled); recreating it (restart 1)",
        }
    ]
    chart = timeline.gantt(lives, timeline.causes_from_events(events), T0 + 30)
    assert [r.label for r in chart.rows] == ["master-0", "worker-0"]  # the master leads
    worker = chart.rows[1].bars
    assert [b.state for b in worker] == ["pending", "failed", "failed", "pending", "running"]
    in_place, recreated_after = worker[1], worker[2]
    assert "restarted in place after exit code 1 (Error)" in in_place.title
    assert recreated_after.label == "exit 137" and "OOMKilled" in recreated_after.title
    assert "Restarting: pod j-worker-0 failed with exit code 137" in recreated_after.title
    assert worker[-1].open and worker[-1].end == T0 + 30
    # placed on one axis: later starts are further right, nothing before the labels
    xs = [b.x for b in worker]
    assert xs == sorted(xs) and min(xs) >= chart.label_width
    assert chart.start == T0 and chart.end == T0 + 30


def test_a_gang_restart_names_the_rule_on_every_pod_it_deleted() -> None:
    running = podhistory.life_from_pod(
        pod("j-worker-1", "u1", "Running", created=T0, started=T0 + 1), None, T0 + 5
    )
    deleted = podhistory.PodLife(**{**running.__dict__, "deleted": T0 + 9})
    events = [
        {
            "type": "Warning",
            "reason": "RestartJob",
            "lastTimestamp": iso_time(T0 + 8),
            "message": "PyTorchJob a/j is restarting all its pods as attempt 1: pod j-worker-0 exit code 3 "
            "matched rule 0 (RestartJob)",
        }
    ]
    bars = timeline.pod_bars(deleted, timeline.causes_from_events(events), T0 + 12)
    assert bars[-1].state == "running" and not bars[-1].open and bars[-1].end == T0 + 9
    assert "deleted while running" in bars[-1].title and "matched rule 0 (RestartJob)" in bars[-1].title


def test_a_pod_that_never_ran_is_one_bar() -> None:
    evicted = pod("j-worker-0", "u", "Failed", created=T0)
    evicted["status"]["reason"] = "Evicted"
    evicted["status"]["containerStatuses"] = []
    bars = timeline.pod_bars(podhistory.life_from_pod(evicted, None, T0 + 4), [], T0 + 5)
    assert [b.state for b in bars] == ["failed"] and "Evicted" in bars[0].title


def test_condition_timeline_is_in_order() -> None:
    job = a_job("j", cond("Running", at=T0 + 5), cond("Created", at=T0), cond("Succeeded", at=T0 + 9))
    assert [e.type for e in timeline.condition_timeline(job)] == ["Created", "Running", "Succeeded"]


# --- progress ---------------------------------------------------------------------------------------


def reported(at: float, pct: float, loss: str) -> dict[str, Any]:
    ts = {
        "progressPercentage": pct,
        "estimatedRemainingSeconds": 200,
        "lastUpdatedTime": iso_time(at),
        "metrics": [{"name": "loss", "value": loss}, {"name": "bad", "value": "n/a"}],
    }
    return {"metadata": {"uid": "u"}, "status": {"trainerStatus": ts}}


def test_progress_history_and_plots() -> None:
    h = progress.ProgressHistory(max_samples=3)
    for i, (pct, loss) in enumerate([(10, "2.0"), (20, "1.5"), (20, "1.5"), (40, "1.0"), (60, "0.5")]):
        h.observe(reported(T0 + (i if i != 2 else 1), pct, loss), T0 + i)
    samples = h.samples("u")
    assert [s.progress for s in samples] == [20, 40, 60]  # bounded; a repeated report is one sample
    plots = progress.plots(samples)
    assert [p.title for p in plots] == ["progress", "loss"]
    assert plots[0].last == "60%" and plots[0].y_min == "0%" and plots[0].y_max == "100%"
    assert plots[1].path.startswith("M") and len(plots[1].points) == 3
    ys = [y for _, y in plots[1].points]
    assert ys == sorted(ys)  # loss falls: the line goes down the plot (SVG y grows downwards)
    assert progress.remaining_text(samples) == "about 3m20s left"
    assert progress.plots([]) == []


# --- submit -----------------------------------------------------------------------------------------


def test_manifest_must_be_one_served_job() -> None:
    assert parse_manifest("a: [", KINDS)[2][0].message.startswith("not valid YAML")
    assert (
        "not a served job kind"
        in parse_manifest("apiVersion: v1\nkind: Pod\nmetadata: {name: p}", KINDS)[2][0].message
    )
    assert (
        parse_manifest("apiVersion: kubetrain.io/v1\nkind: TFJob\nmetadata: {}", KINDS)[2][0].field
        == "metadata.name"
    )
    doc, kind, errors = parse_manifest("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t}", KINDS)
    assert not errors and kind == TF_KF and doc is not None


def test_field_errors_of_an_invalid_list() -> None:
    message = (
        'admission webhook "validate.jobs.kubetrain.io" denied the request: '
        'PyTorchJob "typo" is invalid: '
        "[spec.runPolicy.backoffLimit: Invalid: must be greater than or equal to 0, got -1, "
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: "
        "must be 1 (a PyTorchJob has exactly one Master)]"
    )
    errors = field_errors({}, message)
    assert [(e.field, e.message) for e in errors] == [
        (
            "",
            'admission webhook "validate.jobs.kubetrain.io" denied the request: PyTorchJob "typo" is invalid',
        ),
        ("spec.runPolicy.backoffLimit", "Invalid: must be greater than or equal to 0, got -1"),
        (
            "spec.pytorchReplicaSpecs[Master].replicas",
            "Forbidden: must be 1 (a PyTorchJob has exactly one Master)",
        ),
    ]


def test_field_errors_from_causes_or_from_the_denial_message() -> None:
    body = {"details": {"causes": [{"field": "spec.x", "message": "Invalid value: 1"}]}}
    assert [(e.field, e.message) for e in field_errors(body, "")] == [("spec.x", "Invalid value: 1")]
    message = (
        'admission webhook "validate.kubetrain.io" denied the request: '
        "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be >= 0; "
        'metadata.name: Invalid value: "A": must be lower case'
    )
    errors = field_errors({}, message)
    assert [e.field for e in errors] == ["", "spec.tfReplicaSpecs[Worker].replicas", "metadata.name"]
    assert errors[1].message == "Invalid value: -1: must be >= 0"


# --- auth -------------------------------------------------------------------------------------------


def test_credentials_by_mode_and_no_token_in_repr() -> None:
    creds = credentials(TOKEN, {"Authorization": "Bearer abc.def"})
    assert creds == Credentials(token="abc.def") and "abc.def" not in repr(creds)
    assert creds.headers() == [("Authorization", "Bearer abc.def")]
    assert credentials(TOKEN, {"Authorization": "Basic xyz"}) is None
    assert credentials(TOKEN, {}, session_token="s") == Credentials(token="s")
    proxied = credentials(
        PROXY, {"X-Forwarded-User": "bob", "X-Forwarded-Groups": "ml, dev", "Authorization": "Bearer x"}
    )
    assert proxied == Credentials(user="bob", groups=("ml", "dev"))
    assert proxied.headers() == [
        ("Impersonate-User", "bob"),
        ("Impersonate-Group", "ml"),
        ("Impersonate-Group", "dev"),
    ]
    assert credentials(PROXY, {"Authorization": "Bearer x"}) is None
    assert credentials(LOCAL, {}) is not None and credentials(LOCAL, {}).headers() == []  # type: ignore[union-attr]


def test_sessions_seal_the_token_and_csrf_is_per_user() -> None:
    sessions = Sessions()
    sealed = sessions.seal("secret-token")
    assert "secret-token" not in sealed and sessions.open(sealed) == "secret-token"
    assert Sessions().open(sealed) == ""  # another process's key
    alice, bob = Credentials(token="a"), Credentials(token="b")
    assert sessions.csrf_ok(alice, sessions.csrf_token(alice))
    assert not sessions.csrf_ok(bob, sessions.csrf_token(alice)) and not sessions.csrf_ok(alice, "")
    assert sessions.login_csrf_ok("n", sessions.login_csrf_token("n")) and not sessions.login_csrf_ok("", "")


def test_tensorboard_from_status_only_http() -> None:
    from kubetrain.dashboard.views.jobpage import TensorBoard, tensorboard

    assert tensorboard({"status": {}}) is None
    via_ingress = {
        "url": "http://tb.example.com/j",
        "address": "http://j-tensorboard.ns.svc:6006/",
        "phase": "Running",
    }
    assert tensorboard({"status": {"tensorBoard": via_ingress}}) == TensorBoard(
        "http://tb.example.com/j", "http://j-tensorboard.ns.svc:6006/", "Running"
    )
    hostile = {"url": "javascript:alert(1)", "address": "http://j-tensorboard.ns.svc:6006/"}
    assert tensorboard({"status": {"tensorBoard": hostile}}) == TensorBoard(
        "", "http://j-tensorboard.ns.svc:6006/", ""
    )


def test_the_spec_summary_reads_a_map_per_key_and_cuts_a_long_value() -> None:
    from kubetrain.dashboard.views.jobpage import CUT, FIELD_TEXT_MAX, summary

    script = "import torch\n" + "x = 1\n" * 100
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"creationTimestamp": "2026-01-02T03:04:05Z"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 2, "command": ["python", script]}},
    }
    fields = dict(summary(job).fields)
    assert fields["created"] == "2026-01-02 03:04:05Z"  # as every other time on the page
    assert fields["runtimeRef.name"] == "torch" and fields["trainer.numNodes"] == "2"
    command = fields["trainer.command"]
    assert command.endswith(CUT) and len(command) <= FIELD_TEXT_MAX + len(CUT)
    assert command.startswith("[python, 'import torch")
    assert "trainer" not in fields  # no flow-style dump of the whole map
