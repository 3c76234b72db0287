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

from kubetrain.api.groups import group_of
from kubetrain.api.labels import ANNOTATION_CRON_SCHEDULED_TIMESTAMP, KUBEDL_LABEL_CRON_NAME, LABEL_CRON_NAME
from kubetrain.api.metatime import parse_time
from kubetrain.cron.schedule import Schedule, ScheduleError, parse_schedule, zone
from kubetrain.cron.shape import CronShape, job_from_template, job_name
from kubetrain.cron.times import earliest_time, most_recent, next_wakeup

Obj = dict[str, Any]
NORMAL, WARNING = "Normal", "Warning"
VALID = "Valid"


@dataclass(frozen=True)
class CronEvent:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class JobRef:
    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str

    def reference(self) -> Obj:
        """The corev1.ObjectReference `status.active` holds."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
        }


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


def job_ref(job: Obj) -> JobRef:
    meta = job.get("metadata") or {}
    return JobRef(
        str(job.get("apiVersion") or ""),
        str(job.get("kind") or ""),
        str(meta.get("name") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("uid") or ""),
    )


def finished_condition(job: Obj) -> str | None:
    """ "Succeeded" or "Failed" when the job has that condition True, else None."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _completion(job: Obj) -> datetime | None:
    status = job.get("status") or {}
    done = parse_time(status.get("completionTime"))
    if done is None:
        for cond in status.get("conditions") or ():
            if cond.get("type") == "Succeeded" and cond.get("status") == "True":
                done = parse_time(cond.get("lastTransitionTime"))
    return done


def _rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
            done = _completion(job)
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
    _set(status, "active", active or None)
    if shape.kubedl:  # KubeDL's CronStatus has no lastSuccessfulTime (its CRD would prune it)
        _kubedl_history(status, shape, jobs, now)
    else:
        _set(status, "lastSuccessfulTime", _rfc3339(last_success) if last_success else None)
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
    _set_valid(plan.status, problem, now)
    if problem is not None:
        reason, message = problem
        plan.events.append(CronEvent(WARNING, reason, message))
        return
    schedule, tz = parse_schedule(shape.schedule), zone(shape.time_zone)
    if shape.suspend:
        return
    if shape.deadline is not None and now > shape.deadline:
        deadline = _rfc3339(shape.deadline)
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
        plan.status["lastScheduleTime"] = _rfc3339(scheduled)  # created before a crash recorded it
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
        _set(plan.status, "active", None)
    plan.create = new_job(shape, scheduled, tz)
    plan.scheduled_time = scheduled


def _problem(shape: CronShape, served_groups: tuple[str, ...]) -> tuple[str, str] | None:
    """Why the operator cannot schedule this cron (reason, message), or None."""
    try:
        parse_schedule(shape.schedule)
    except ScheduleError as exc:
        return "UnparseableSchedule", f"unparseable schedule {shape.schedule!r}: {exc}"
    try:
        zone(shape.time_zone)
    except ScheduleError as exc:
        return "UnknownTimeZone", str(exc)
    group = group_of(shape.template.get("apiVersion"))
    if group not in served_groups:
        return (
            "InvalidTemplate",
            f"spec.template.apiVersion {shape.template.get('apiVersion')!r}: this operator serves jobs of "
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
        done.sort(key=_start_key)
        for job in done[: len(done) - limit]:
            ref = job_ref(job)
            plan.delete.append(ref)
            plan.events.append(CronEvent(NORMAL, "SuccessfulDelete", f"Deleted job {ref.name}"))


def _start_key(job: Obj) -> tuple[datetime, str]:
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    start = parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))
    return (start or datetime.min.replace(tzinfo=UTC), str(meta.get("name") or ""))


def _kubedl_history(status: Obj, shape: CronShape, jobs: list[Obj], now: datetime) -> None:
    """KubeDL's `status.history`: one record per job (its last condition, created, finished),
    oldest first, at most `historyLimit` of them."""
    records = {
        str((h.get("object") or {}).get("name")): dict(h)
        for h in status.get("history") or ()
        if isinstance(h, dict)
    }
    group = group_of(shape.template.get("apiVersion"))
    for job in jobs:
        ref, meta = job_ref(job), job.get("metadata") or {}
        conditions = (job.get("status") or {}).get("conditions") or []
        record = records.get(ref.name) or {
            "object": {"apiGroup": group, "kind": ref.kind, "name": ref.name},
            "created": meta.get("creationTimestamp"),
        }
        record["status"] = str(conditions[-1].get("type")) if conditions else ""
        if finished_condition(job) is not None and not record.get("finished"):
            record["finished"] = _rfc3339(now)
        records[ref.name] = record
    history = sorted(
        records.values(), key=lambda h: (str(h.get("created") or ""), str(h["object"].get("name")))
    )
    limit = shape.history_limit
    if limit is not None and len(history) > limit:
        history = history[len(history) - limit :]
    _set(status, "history", history or None)


def _set_valid(status: Obj, problem: tuple[str, str] | None, now: datetime) -> None:
    reason, message = (
        problem if problem is not None else ("Valid", "schedule, time zone and template are valid")
    )
    value = "False" if problem is not None else "True"
    conditions = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == VALID), None)
    if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
        value,
        reason,
        message,
    ):
        return
    since = (
        current.get("lastTransitionTime") if current is not None and current.get("status") == value else None
    )
    cond = {"type": VALID, "status": value, "reason": reason, "message": message}
    cond["lastTransitionTime"] = since or _rfc3339(now)
    status["conditions"] = [*(c for c in conditions if c.get("type") != VALID), cond]


def _set(status: Obj, key: str, value: Any) -> None:
    if value is None:
        status.pop(key, None)
    else:
        status[key] = value


def schedule_of(shape: CronShape) -> tuple[Schedule, tzinfo]:
    """The parsed schedule and zone of a valid cron (ScheduleError otherwise)."""
    return parse_schedule(shape.schedule), zone(shape.time_zone)


def next_job(shape: CronShape, now: datetime) -> tuple[datetime, Obj] | None:
    """The job the cron creates at its next scheduled time after `now` (`kubetrain render`), or
    None for a schedule with no next time; ScheduleError for an invalid schedule or zone."""
    schedule, tz = schedule_of(shape)
    when = schedule.next_after(now, tz)
    return None if when is None else (when, new_job(shape, when, tz))
