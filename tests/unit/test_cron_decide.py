"""The decisions of a cron pass (batch/v1 CronJob's syncCronJob) with an injected time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from crons import kubedl_cron, template_of, training_cron

from kubetrain.cron.decide import CronPlan, decide
from kubetrain.cron.shape import read_cron

Obj = dict[str, Any]
CREATED = "2024-01-01T00:00:00Z"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def cron(*, status: Obj | None = None, kubedl: bool = False, **spec: Any) -> Obj:
    schedule = spec.pop("schedule", "*/5 * * * *")
    obj = (kubedl_cron if kubedl else training_cron)("nightly", schedule, **spec)
    obj["metadata"].update(uid="cron-uid", creationTimestamp=CREATED)
    if status is not None:
        obj["status"] = status
    return obj


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name: str, uid: str, *, finished: str | None = None, start: datetime | None = None) -> Obj:
    status: Obj = {"conditions": [{"type": "Created", "status": "True"}]}
    if finished:
        status["conditions"].append(
            {"type": finished, "status": "True", "lastTransitionTime": iso(minutes(99))}
        )
        if finished == "Succeeded":
            status["completionTime"] = iso(start + timedelta(minutes=1) if start else minutes(99))
    if start is not None:
        status["startTime"] = iso(start)
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "creationTimestamp": iso(start or T0)},
        "status": status,
    }


def ref(j: Obj) -> Obj:
    m = j["metadata"]
    return {
        "apiVersion": j["apiVersion"],
        "kind": j["kind"],
        "name": m["name"],
        "namespace": "ns",
        "uid": m["uid"],
    }


def plan(obj: Obj, jobs: list[Obj], now: datetime, **kw: Any) -> CronPlan:
    return decide(read_cron(obj), jobs, now, **kw)


def reasons(p: CronPlan) -> list[str]:
    return [e.reason for e in p.events]


def test_creates_the_job_of_the_scheduled_minute_with_owner_labels_and_timestamp() -> None:
    p = plan(cron(), [], minutes(5.5))
    assert p.create is not None and p.scheduled_time == minutes(5)
    meta = p.create["metadata"]
    assert meta["name"] == f"nightly-{int(minutes(5).timestamp()) // 60}"
    assert meta["namespace"] == "ns"
    assert meta["labels"]["kubetrain.io/cron-name"] == "nightly"
    assert meta["annotations"]["kubetrain.io/cron-scheduled-timestamp"] == "2024-01-01T00:05:00+00:00"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TrainingCron",
            "name": "nightly",
            "uid": "cron-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert p.create["kind"] == "PyTorchJob" and p.create["spec"] == template_of()["spec"]
    assert p.requeue_at == minutes(10) + timedelta(milliseconds=100)


def test_nothing_before_the_first_time_and_nothing_twice() -> None:
    p = plan(cron(), [], minutes(4))
    assert p.create is None and p.requeue_at == minutes(5) + timedelta(milliseconds=100)
    done = cron(status={"lastScheduleTime": iso(minutes(5))})
    assert plan(done, [], minutes(9)).create is None


def test_forbid_skips_while_a_job_runs_and_starts_late_when_it_ends() -> None:
    running = job("nightly-1", "u1", start=minutes(5))
    status = {"active": [ref(running)], "lastScheduleTime": iso(minutes(5))}
    obj = cron(concurrencyPolicy="Forbid", status=status)
    p = plan(obj, [running], minutes(10.5))
    assert p.create is None and "JobAlreadyActive" in reasons(p)
    assert p.status["active"] == [ref(running)]
    # the run ends at 10:40: the 10:00 time, still unmet, starts then
    ended = job("nightly-1", "u1", finished="Succeeded", start=minutes(5))
    p = plan(obj, [ended], minutes(10.7))
    assert "SawCompletedJob" in reasons(p)
    assert "active" not in p.status
    assert p.create is not None and p.scheduled_time == minutes(10)


def test_allow_runs_concurrently() -> None:
    running = job("nightly-1", "u1", start=minutes(5))
    status = {"active": [ref(running)], "lastScheduleTime": iso(minutes(5))}
    p = plan(cron(status=status), [running], minutes(10.5))
    assert p.create is not None and p.delete == [] and p.status["active"] == [ref(running)]


def test_replace_deletes_the_running_job_and_creates_the_new_one() -> None:
    running = job("nightly-1", "u1", start=minutes(5))
    status = {"active": [ref(running)], "lastScheduleTime": iso(minutes(5))}
    p = plan(cron(concurrencyPolicy="Replace", status=status), [running], minutes(10.5))
    assert [d.name for d in p.delete] == ["nightly-1"]
    assert "SuccessfulDelete" in reasons(p)
    assert "active" not in p.status
    assert p.create is not None and p.scheduled_time == minutes(10)


def test_a_missed_start_past_the_starting_deadline_is_skipped() -> None:
    # the operator was away from 00:04 to 00:12; the 00:10 start would be 2.5 minutes late
    status = {"lastScheduleTime": iso(minutes(5))}
    p = plan(cron(startingDeadlineSeconds=60, status=status), [], minutes(12.5))
    assert p.create is None
    assert "MissSchedule" in reasons(p)
    assert [e.message for e in p.events if e.reason == "MissSchedule"] == [
        "Missed scheduled time to start a job: Mon, 01 Jan 2024 00:10:00 +0000"
    ]
    assert p.requeue_at == minutes(15) + timedelta(milliseconds=100)
    # within the deadline it still starts, late
    p = plan(cron(startingDeadlineSeconds=300, status=status), [], minutes(12.5))
    assert p.create is not None and p.scheduled_time == minutes(10)
    assert "MissSchedule" not in reasons(p)


def test_too_many_missed_times_warns_and_starts_the_latest() -> None:
    p = plan(cron(schedule="* * * * *"), [], minutes(60 * 24))
    assert "TooManyMissedTimes" in reasons(p)
    assert p.scheduled_time == minutes(60 * 24)


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    jobs = [job(f"ok-{i}", f"s{i}", finished="Succeeded", start=minutes(i)) for i in range(5)]
    jobs += [job(f"bad-{i}", f"f{i}", finished="Failed", start=minutes(i)) for i in range(3)]
    obj = cron(suspend=True, successfulJobsHistoryLimit=2, failedJobsHistoryLimit=0)
    p = plan(obj, jobs, minutes(30))
    assert sorted(d.name for d in p.delete) == ["bad-0", "bad-1", "bad-2", "ok-0", "ok-1", "ok-2"]
    # defaults: 3 succeeded, 1 failed
    p = plan(cron(suspend=True), jobs, minutes(30))
    assert sorted(d.name for d in p.delete) == ["bad-0", "bad-1", "ok-0", "ok-1"]


def test_last_successful_time_is_the_latest_completion() -> None:
    jobs = [
        job("a", "a", finished="Succeeded", start=minutes(1)),
        job("b", "b", finished="Succeeded", start=minutes(7)),
    ]
    p = plan(cron(suspend=True), jobs, minutes(30))
    assert p.status["lastSuccessfulTime"] == iso(minutes(8))
    # KubeDL's Cron status has no such field: its CRD prunes it, with a warning per write
    p = plan(cron(suspend=True, kubedl=True), jobs, minutes(30))
    assert "lastSuccessfulTime" not in p.status and p.status["history"]


def test_suspend_starts_nothing() -> None:
    p = plan(cron(suspend=True), [], minutes(12))
    assert p.create is None and p.requeue_at is None


def test_unexpected_job_is_adopted_and_a_gone_one_dropped() -> None:
    stray = job("nightly-7", "u7", start=minutes(5))
    lost = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "name": "old",
        "namespace": "ns",
        "uid": "gone",
    }
    unseen = {**lost, "name": "new", "uid": "new"}
    status = {"active": [lost, unseen], "lastScheduleTime": iso(minutes(5))}
    p = plan(cron(status=status), [stray], minutes(6), gone={"gone"})
    assert "UnexpectedJob" in reasons(p) and "MissingJob" in reasons(p)
    assert [a["uid"] for a in p.status["active"]] == ["new", "u7"]
    assert p.unseen == [unseen]


def test_a_job_created_before_a_crash_is_not_created_again() -> None:
    scheduled = minutes(5)
    name = f"nightly-{int(scheduled.timestamp()) // 60}"
    done = job(name, "u1", finished="Succeeded", start=scheduled)
    p = plan(cron(), [done], minutes(6))
    assert p.create is None and p.status["lastScheduleTime"] == iso(scheduled)


def test_time_zone_schedules_on_the_zones_wall_clock() -> None:
    p = plan(cron(schedule="0 10 * * *", timeZone="Asia/Tokyo"), [], minutes(60.5))  # 10:00:30 in Tokyo
    assert p.scheduled_time == minutes(60)
    assert p.create is not None
    stamp = p.create["metadata"]["annotations"]["kubetrain.io/cron-scheduled-timestamp"]
    assert stamp == "2024-01-01T10:00:00+09:00"


def test_an_invalid_stored_cron_gets_a_condition_and_an_event() -> None:
    p = plan(cron(schedule="61 * * * *"), [], minutes(6))
    assert p.create is None and reasons(p) == ["UnparseableSchedule"]
    assert p.status["conditions"][0]["status"] == "False"
    assert p.status["conditions"][0]["reason"] == "UnparseableSchedule"
    p = plan(cron(), [], minutes(6), served_groups=("kubeflow.org",))
    assert p.create is None and reasons(p) == ["InvalidTemplate"]
    p = plan(cron(timeZone="Nowhere/Land"), [], minutes(6))
    assert reasons(p) == ["UnknownTimeZone"]


def test_valid_condition_keeps_its_transition_time() -> None:
    first = plan(cron(), [], minutes(1)).status["conditions"]
    later = plan(cron(status={"conditions": first}), [], minutes(2)).status["conditions"]
    assert later == first and first[0]["status"] == "True"


def test_kubedl_layout_deadline_and_history() -> None:
    obj = cron(kubedl=True, deadline=iso(minutes(7)), historyLimit=1)
    p = plan(obj, [], minutes(5.5))
    assert p.create is not None
    assert p.create["metadata"]["ownerReferences"][0]["apiVersion"] == "apps.kubedl.io/v1alpha1"
    assert p.create["metadata"]["ownerReferences"][0]["kind"] == "Cron"
    p = plan(obj, [], minutes(10.5))
    assert p.create is None and "Deadline" in reasons(p)
    jobs = [job(f"ok-{i}", f"s{i}", finished="Succeeded", start=minutes(i)) for i in range(3)]
    jobs.append(job("bad", "f", finished="Failed", start=minutes(4)))
    p = plan(obj, jobs, minutes(10.5))
    # KubeDL's historyLimit bounds status.history (refreshCronHistory); it never deletes a job.
    assert p.delete == [] and not any(e.reason == "SuccessfulDelete" for e in p.events)
    assert [h["object"]["name"] for h in p.status["history"]] == ["bad"]
    assert p.status["history"][0]["status"] == "Failed"


def test_a_kubedl_crons_job_carries_kubedls_cron_name_label_too() -> None:
    # KubeDL labels a cron's workloads kubedl.io/cron-name (cron_controller.go
    # newWorkloadFromTemplate): `kubectl get tfjobs -l kubedl.io/cron-name=nightly` keeps working.
    p = plan(cron(kubedl=True), [], minutes(5.5))
    assert p.create is not None
    labels = p.create["metadata"]["labels"]
    assert labels["kubedl.io/cron-name"] == "nightly" and labels["kubetrain.io/cron-name"] == "nightly"
    p = plan(cron(), [], minutes(5.5))
    assert p.create is not None and "kubedl.io/cron-name" not in p.create["metadata"]["labels"]


def test_a_kubedl_crons_schedule_runs_in_the_zone_it_names() -> None:
    # 02:00 in Shanghai (UTC+8) is 18:00 UTC the day before; T0 is 2024-01-01T00:00Z.
    obj = cron(kubedl=True, schedule="CRON_TZ=Asia/Shanghai 0 2 * * *")
    assert plan(obj, [], T0 + timedelta(hours=17)).create is None
    p = plan(obj, [], T0 + timedelta(hours=18, seconds=1))
    assert p.create is not None and p.scheduled_time == T0 + timedelta(hours=18)
    stamp = p.create["metadata"]["annotations"]["kubetrain.io/cron-scheduled-timestamp"]
    assert stamp == "2024-01-02T02:00:00+08:00"


def test_kubedl_history_limit_keeps_every_job_and_the_latest_records() -> None:
    obj = cron(kubedl=True, historyLimit=2)
    jobs = [job(f"ok-{i}", f"s{i}", finished="Succeeded", start=minutes(i)) for i in range(4)]
    jobs.append(job("bad", "f", finished="Failed", start=minutes(4)))
    p = plan(obj, jobs, minutes(5.5))
    assert p.create is not None and p.delete == []
    assert [h["object"]["name"] for h in p.status["history"]] == ["ok-3", "bad"]
    # Without historyLimit every record is kept, as every job is.
    p = plan(cron(kubedl=True), jobs, minutes(5.5))
    assert p.delete == [] and len(p.status["history"]) == 5


def test_a_kubedl_history_record_names_the_jobs_group_not_its_api_version() -> None:
    # KubeDL's refreshCronHistory passes the template's apiVersion as the record's
    # `object.apiGroup`; kubetrain writes the group, as a TypedLocalObjectReference means it
    # (docs/behaviour.md, KubeDL's Cron).
    obj = cron(kubedl=True)
    api_version = obj["spec"]["template"]["apiVersion"]
    p = plan(obj, [job("ok-0", "s0", finished="Succeeded", start=minutes(0))], minutes(5.5))
    [record] = p.status["history"]
    assert record["object"] == {"apiGroup": api_version.split("/")[0], "kind": "PyTorchJob", "name": "ok-0"}
    assert "/" not in record["object"]["apiGroup"]
