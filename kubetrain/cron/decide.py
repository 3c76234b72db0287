"""What a cron does now: batch/v1 CronJob's `syncCronJob` as a pure decision.

    plan = decide(shape, jobs, now, gone=set(), served_groups=("kubetrain.io",))

`jobs` are the jobs the cron controls (controller ownerReference with its uid), as the cache holds
them; `gone` the uids of `status.active` entries the API server confirmed missing (the
controller GETs an active job its cache does not show before calling this, as the CronJob
controller does). The plan says which job to create (at most one per pass, named
`<cron>-<scheduled minute>`), which to delete (Replace; history limits), the status without the
job being created (the controller adds its reference and `lastScheduleTime` once the create
succeeded), events, and when to look again. In order, as the CronJob controller:

1. jobs that finished leave `status.active` (`SawCompletedJob`); an unfinished job of the cron
   missing from it is added (`UnexpectedJob`: created before a crash could record it); an active
   job confirmed gone leaves it (`MissingJob`); `lastSuccessfulTime` is the latest completion;
2. a cron being deleted, suspended, past KubeDL's `deadline` or invalid (schedule, time zone, a
   template of a group not served: `Valid` False and a Warning event) starts nothing;
3. the most recent unmet scheduled time (kubetrain.cron.times); none: wait for the next;
   more than 100 missed: `TooManyMissedTimes`; older than `startingDeadlineSeconds`: `MissSchedule`;
   already started (its job exists or is `lastScheduleTime`): nothing;
4. Forbid with an active job: `JobAlreadyActive`, nothing (the time stays unmet: it starts late
   when the active job ends, within the starting deadline); Replace: the active jobs are deleted;
5. the job is created; finished jobs beyond the history limits are deleted, oldest first (a
   KubeDL Cron's `historyLimit` bounds only its `status.history` records, as in KubeDL).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from email.utils import format_datetime
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.groups import group_of
from kubetrain.api.labels import ANNOTATION_CRON_SCHEDULED_TIMESTAMP, KUBEDL_LABEL_CRON_NAME, LABEL_CRON_NAME
from kubetrain.api.metatime import parse_time
from kubetrain.cron.records import (
    JobRef,
    completion,
    finished_condition,
    job_ref,
    kubedl_history,
    rfc3339,
    set_field,
    set_valid,
    start_key,
)
from kubetrain.cron.schedule import Schedule, ScheduleError, parse_schedule, zone
from kubetrain.cron.shape import CronShape, job_from_template, job_name
from kubetrain.cron.times import earliest_time, most_recent, next_wakeup

Obj = dict[str, Any]
NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True)
class CronEvent:
    type: str
    reason: str
    message: str


@dataclass
class CronPlan:
    status: Obj  # the cron's status after this pass, without the job being created
    create: Obj | None = None
    scheduled_time: datetime | None = None  # of `create`: becomes lastScheduleTime
    skipped: datetime | None = None  # a scheduled time not started: Forbid with an active job
    delete: list[JobRef] = field(default_factory=list)
    events: list[CronEvent] = field(default_factory=list)
    requeue_at: datetime | None = None
    unseen: list[Obj] = field(default_factory=list)  # active refs the cache lacks (not in `gone`)


def decide(
    shape: CronShape,
    jobs: list[Obj],
    now: datetime,
    *,
    gone: set[str] | frozenset[str] = frozenset(),
    served_groups: tuple[str, ...] = ("kubetrain.io",),
) -> CronPlan:
    status = dict(shape.status)
    active: list[Obj] = [dict(a) for a in status.get("active") or () if isinstance(a, dict)]
    plan = CronPlan(status=status)
    by_uid = {str((j.get("metadata") or {}).get("uid") or ""): j for j in jobs}
    active_uids = {str(a.get("uid") or "") for a in active}
    last_success = parse_time(status.get("lastSuccessfulTime"))
    for uid, job in by_uid.items():
        finished = finished_condition(job)
        ref = job_ref(job)
        if (
            uid not in active_uids
            and finished is None
            and not (job.get("metadata") or {}).get("deletionTimestamp")
        ):
            active.append(ref.reference())
            plan.events.append(
                CronEvent(
                    WARNING,
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {ref.name}",
                )
            )
        elif uid in active_uids and finished is not None:
            active = [a for a in active if a.get("uid") != uid]
            plan.events.append(
                CronEvent(NORMAL, "SawCompletedJob", f"Saw completed job: {ref.name}, condition: {finished}")
            )
        if finished == "Succeeded":
            done = completion(job)
            if done is not None and (last_success is None or done > last_success):
                last_success = done
    for entry in list(active):
        uid = str(entry.get("uid") or "")
        if uid in by_uid:
            continue
        if uid in gone:
            active.remove(entry)
            plan.events.append(
                CronEvent(NORMAL, "MissingJob", f"Active job went missing: {entry.get('name')}")
            )
        else:
            plan.unseen.append(entry)
    set_field(status, "active", active or None)
    if shape.kubedl:  # KubeDL's CronStatus has no lastSuccessfulTime (its CRD would prune it)
        kubedl_history(status, shape, jobs, now)
    else:
        set_field(status, "lastSuccessfulTime", rfc3339(last_success) if last_success else None)
    _schedule(shape, by_uid, active, now, served_groups, plan)
    _prune(shape, jobs, plan)
    return plan


def _schedule(
    shape: CronShape,
    by_uid: dict[str, Obj],
    active: list[Obj],
    now: datetime,
    served_groups: tuple[str, ...],
    plan: CronPlan,
) -> None:
    if shape.deleting:
        return
    problem = _problem(shape, served_groups)
    set_valid(plan.status, problem, now)
    if problem is not None:
        reason, message = problem
        plan.events.append(CronEvent(WARNING, reason, message))
        return
    schedule, tz = parse_schedule(shape.schedule), zone(shape.time_zone)
    if shape.suspend:
        return
    if shape.deadline is not None and now > shape.deadline:
        deadline = rfc3339(shape.deadline)
        plan.events.append(
            CronEvent(NORMAL, "Deadline", f"cron reached its deadline {deadline}: no more jobs")
        )
        return
    plan.requeue_at = next_wakeup(schedule, tz, now)
    last = parse_time(plan.status.get("lastScheduleTime"))
    earliest = earliest_time(last, shape.created, now, shape.starting_deadline_seconds)
    recent = most_recent(schedule, tz, earliest, now)
    if recent.too_many_missed:
        plan.events.append(
            CronEvent(
                WARNING,
                "TooManyMissedTimes",
                "too many missed start times. "
                "Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            )
        )
    scheduled = recent.time
    deadline_s = shape.starting_deadline_seconds
    if deadline_s is not None:
        # A time older than the deadline is not counted; say so when the latest one was missed.
        missed = scheduled
        if missed is None:
            missed = most_recent(schedule, tz, earliest_time(last, shape.created, now, None), now).time
        if missed is not None and (now - missed).total_seconds() > deadline_s:
            when = format_datetime(missed.astimezone(UTC))
            plan.events.append(
                CronEvent(WARNING, "MissSchedule", f"Missed scheduled time to start a job: {when}")
            )
            return
    if scheduled is None:
        return
    name = job_name(shape.name, scheduled)
    if last == scheduled or any(a.get("name") == name for a in active):
        return
    if any((j.get("metadata") or {}).get("name") == name for j in by_uid.values()):
        plan.status["lastScheduleTime"] = rfc3339(scheduled)  # created before a crash recorded it
        return
    if shape.concurrency_policy == "Forbid" and active:
        plan.skipped = scheduled
        plan.events.append(
            CronEvent(
                NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
        )
        return
    if shape.concurrency_policy == "Replace":
        for entry in active:
            ref = JobRef(
                *(str(entry.get(k) or "") for k in ("apiVersion", "kind", "name", "namespace", "uid"))
            )
            plan.delete.append(ref)
            plan.events.append(CronEvent(NORMAL, "SuccessfulDelete", f"Deleted job {ref.name}"))
        active.clear()
        set_field(plan.status, "active", None)
    plan.create = new_job(shape, scheduled, tz)
    plan.scheduled_time = scheduled


def _problem(shape: CronShape, served_groups: tuple[str, ...]) -> tuple[str, str] | None:
    """Why the operator cannot schedule this cron (reason, message), or None."""
    try:
        parse_schedule(shape.schedule)
    except ScheduleError as exc:
        return "UnparseableSchedule", f"unparseable schedule {QUOTE.encode(shape.schedule)}: {exc}"
    try:
        zone(shape.time_zone)
    except ScheduleError as exc:
        return "UnknownTimeZone", str(exc)
    group = group_of(shape.template.get("apiVersion"))
    if group not in served_groups:
        return (
            "InvalidTemplate",
            f"spec.template.apiVersion {QUOTE.encode(shape.template.get('apiVersion'))}: this operator "
            "serves jobs of "
            f"{', '.join(served_groups)} (--api-groups)",
        )
    return None


def new_job(shape: CronShape, scheduled: datetime, tz: tzinfo) -> Obj:
    """The job the cron creates for `scheduled`: the template's, named `<cron>-<minute>`,
    labelled with the cron's name, annotated with the scheduled time, controlled by the cron."""
    job = job_from_template(shape, str(int(scheduled.timestamp()) // 60))
    meta = job["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_CRON_NAME: shape.name}
    if shape.kubedl:  # KubeDL's label too (cron_controller.go newWorkloadFromTemplate)
        meta["labels"][KUBEDL_LABEL_CRON_NAME] = shape.name
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        ANNOTATION_CRON_SCHEDULED_TIMESTAMP: scheduled.astimezone(tz).isoformat(),
    }
    owner = {
        "apiVersion": shape.api_version,
        "kind": shape.kind,
        "name": shape.name,
        "uid": shape.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner]
    return job


def _prune(shape: CronShape, jobs: list[Obj], plan: CronPlan) -> None:
    """Delete the oldest finished jobs beyond the history limits (by start time, then name)."""
    deleting = {ref.uid for ref in plan.delete}
    for outcome, limit in (
        ("Succeeded", shape.successful_jobs_history_limit),
        ("Failed", shape.failed_jobs_history_limit),
    ):
        if limit is None:
            continue
        done = [
            j
            for j in jobs
            if finished_condition(j) == outcome
            and not (j.get("metadata") or {}).get("deletionTimestamp")
            and job_ref(j).uid not in deleting
        ]
        if len(done) <= limit:
            continue
        done.sort(key=start_key)
        for job in done[: len(done) - limit]:
            ref = job_ref(job)
            plan.delete.append(ref)
            plan.events.append(CronEvent(NORMAL, "SuccessfulDelete", f"Deleted job {ref.name}"))


def schedule_of(shape: CronShape) -> tuple[Schedule, tzinfo]:
    """The parsed schedule and zone of a valid cron (ScheduleError otherwise)."""
    return parse_schedule(shape.schedule), zone(shape.time_zone)


def next_job(shape: CronShape, now: datetime) -> tuple[datetime, Obj] | None:
    """The job the cron creates at its next scheduled time after `now` (`kubetrain render`), or
    None for a schedule with no next time; ScheduleError for an invalid schedule or zone."""
    schedule, tz = schedule_of(shape)
    when = schedule.next_after(now, tz)
    return None if when is None else (when, new_job(shape, when, tz))
