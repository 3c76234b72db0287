"""The active part of a reconcile (see `active.py`) for a shape whose failures are judged per
group with a whole-gang policy (`JobShape.failure.gang`: a JobSet of batch Jobs, Trainer's
TrainJob). Pure like the rest of the planner.

Its run is recorded outside the job's status (`JobShape.recording`): the attempt (whole-gang
restarts so far), the restarts counted towards `max_restarts`, the failed pods per group, when
the attempt began — `ReconcileDraft.record` in, `Plan.record` out when changed. Pods bear their
attempt (`recording.attempt_label`); an earlier attempt's pod is deleted, holding its slot.

One reconcile, in order: suspend (every pod but the Succeeded ones deleted), resume, the deadline
(from creation or the last resume), the Service, what pods need first (`ChildMaker`) and the gang
(`GangChoice`, `gang.decide`) — the deadline, prerequisites and gang decided in `groupsetup.py` —
then the pods (with the first ones, `ChildMaker.unread_prerequisites`): failed pods recreated and
counted per batch Job and index (`groupfailure.py`: the pod failure rules, `backoffLimitPerIndex`
— a failed index's slot is never made again); a Job failed (backoff limit, a FailJob rule, failed
indexes, its own activeDeadlineSeconds in `jobdeadlines.py`; a Warning event each) goes to the
gang policy — restart its pods alone (`jobrestarts.py`), restart every pod as a new attempt, or
fail the job; Jobs succeeded by their success policy (`jobsuccess.py`), success by the shape's
rules, a stall, and the missing pods `creates.missing_slots` picks (an exclusively placed job's
follower once its leader's domain is known: `exclusiveplacement.py`). The per-group status
(`replicatedJobsStatus`, `jobsStatus`) counts jobs of `ReplicaGroup.job_size` pods: `failed` is
the failed Jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.jobs.failuremodel import GangFailurePolicy, GangVerdict
from kubetrain.jobs.failureorder import FailedJob, FailureOrder
from kubetrain.jobs.shape import FAILED, SUCCEEDED, ChildMaker, JobShape
from kubetrain.operator import (
    creates,
    groupfailure,
    groupstatus,
    groupsuspend,
    jobdeadlines,
    podstart,
    runpolicy,
    stall,
)
from kubetrain.operator.completedindexes import CompletedIndexes
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.exclusiveplacement import Placement
from kubetrain.operator.groupsetup import GroupSetup
from kubetrain.operator.jobdeadlines import JobDeadlines
from kubetrain.operator.jobrestarts import JobRestarts
from kubetrain.operator.jobsuccess import JobSuccess
from kubetrain.operator.pods import pod_name, pod_phase, terminating
from kubetrain.operator.slots import phase_counts, slot_pods
from kubetrain.operator.status import format_time

Obj = dict[str, Any]
RESTARTED_AT = "restartedAt"  # the run's record: when the current attempt began (stall detection)


class GroupActiveJob:
    """The active part of a per-group shape's reconcile."""

    def __init__(self, r: ReconcileDraft, shape: JobShape, desired: DesiredChildren) -> None:
        if shape.children is None:
            raise ValueError(f"{shape.kind} {shape.name}: a per-group shape makes its own children")
        self.r, self.shape, self.desired = r, shape, desired
        self.children: ChildMaker = shape.children
        self.failed_jobs: dict[str, list[int]] = {}  # per group, its failed Jobs
        self.failed_at: dict[tuple[str, int], datetime | None] = {}  # when each failed (None: now)
        # why a Job failed, when not its backoff limit: (reason, message) of a FailJob rule
        self.reasons: dict[tuple[str, int], tuple[str, str]] = {}
        self.failed_slots: set[tuple[str, int]] = set()  # failed indexes' slots: never made again
        self.job_restarts = JobRestarts(shape)  # the Jobs' own restarts (read by `pods`)
        self.deadlines, self.success = JobDeadlines(shape), JobSuccess(shape)  # start times, successes
        self.completed = CompletedIndexes(shape)  # the succeeded indexes (`completedindexes.py`)
        self.earlier: set[str] = set()  # pods of their Job's earlier attempt (read by `pods`)

    def attempt_of(self, pod: Mapping[str, Any]) -> str:
        return str(
            ((pod.get("metadata") or {}).get("labels") or {}).get(self.shape.recording.attempt_label, "0")
        )

    def run(self) -> None:
        r, shape = self.r, self.shape
        if shape.run_policy.suspend:
            self.suspend()
            return
        resumed = shape.status.set_resumed(r.status, r.title, r.now)
        if resumed is not None:
            r.event("Normal", *resumed)
        setup = GroupSetup(r, shape, self.desired)
        if setup.deadline_passed():
            reason, message = shape.status.deadline_exceeded_as(r.status, r.title)
            r.terminal(FAILED, reason, message, delete_active=True)
            self.write_group_statuses()
            return
        service = self.children.service()
        # named after the pods' subdomain (JobSet's GetSubdomain), which need not be the job's name
        if service is not None and r.observed.service_named(service["metadata"]["name"]) is None:
            r.plan.create_service = service
        setup.prerequisites()
        setup.progress_ca()
        gang = setup.gang()
        new_record = self.pods(gang)
        if new_record != r.record:
            r.plan.record = new_record

    def finish(self) -> None:
        """A finished job's last status: written when it finished."""

    # --- before any pod -----------------------------------------------------------------------
    def suspend(self) -> None:
        """Suspended: the Succeeded pods kept, every other pod deleted (`groupsuspend.py`)."""
        groupsuspend.suspend(self.r, self.shape, self.attempt_of)

    # --- the pods -----------------------------------------------------------------------------
    def pods(self, gang: GangScheduler | bool | None) -> Obj:
        """Failures, restarts, success, creates. Returns the run's new record."""
        r, shape = self.r, self.shape
        state = r.record
        restarts = int(state.get("restarts") or 0)
        counted = (
            {"countedRestarts": int(state.get("countedRestarts") or 0)} if "countedRestarts" in state else {}
        )
        if RESTARTED_AT in state:  # when this attempt began (stall detection)
            counted[RESTARTED_AT] = state[RESTARTED_AT]
        attempt = str(restarts)
        jobs = self.job_restarts = JobRestarts.read(shape, state)
        self.deadlines, self.success = JobDeadlines.read(shape, state), JobSuccess.read(shape, state)
        self.completed = CompletedIndexes.read(shape, state)
        r.delete([pod_name(p) for p in r.live_pods() if self.attempt_of(p) != attempt])  # earlier attempts
        every, _ = slot_pods(shape, r.pods)
        # The slots of the current attempt (of the gang and of each Job): success, failures and
        # dependencies count only them; a pod of a Job's earlier attempt is deleted.
        slots = {s: p for s, p in every.items() if self.attempt_of(p) == attempt and jobs.current(s, p)}
        self.earlier = {pod_name(p) for s, p in every.items() if s not in slots}
        r.delete([pod_name(p) for s, p in every.items() if s not in slots and not terminating(p)])
        self.completed.observe(slots)
        r.delete(self.success.drop(slots))  # Jobs that succeeded by policy: done (`jobsuccess.py`)
        judged = groupfailure.judge(shape, slots, r.deleting, state.get("failures"))
        r.delete(judged.delete)
        failures, self.failed_jobs, self.failed_at = judged.failures, judged.failed_jobs, judged.failed_at
        self.reasons, self.failed_slots = judged.reasons, judged.failed_slots
        for reason, message in judged.reasons.values():  # the Job controller's event on the Job
            r.event("Warning", reason, message)
        self.past_deadline(slots)
        gang_policy = shape.failure.gang
        # restarts that count towards maxRestarts (a record without the field: every restart)
        so_far = int(state.get("countedRestarts", restarts) or 0)
        verdict = self.restart_jobs(gang_policy, so_far, failures, slots, every) if self.failed_jobs else None
        if verdict is not None and verdict.restart:
            self.write_group_statuses()
            r.restart_all(verdict.reason, verdict.message)
            new = {
                "restarts": restarts + 1,
                "countedRestarts": so_far + int(verdict.counts),
                "failures": {},
                **jobs.record(),
            }
            return restarted(new, r.now)
        if verdict is not None:
            r.terminal(FAILED, verdict.reason, verdict.message, delete_active=True)
            self.write_group_statuses()  # the pods it deletes no longer active, as on success
            return {**state, "restarts": restarts, "failures": failures, **self.jobs_record()}
        self.success.apply(r, slots, self.failed_jobs)  # Jobs that succeed by policy now
        if shape.succeeded(self.completed.counts(self.success.counts(phase_counts(shape, slots)))):
            reason, message = shape.status.succeeded_as(r.title)
            r.terminal(SUCCEEDED, reason, message, delete_active=True)
            self.write_group_statuses()
            return {"restarts": restarts, **counted, "failures": failures, **self.jobs_record()}
        start = self.pods_not_starting(attempt)
        if start.failed is not None:
            r.terminal(FAILED, podstart.REASON_DEADLINE, start.failed, delete_active=True)
            self.write_group_statuses()
            return {"restarts": restarts, **counted, "failures": failures, **self.jobs_record()}
        r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, start.due)
        stalled = self.stalled(attempt)
        if stalled is not None:
            return stalled
        if gang is not False:  # pods may be created (made for the shape's gang, `desired.pod`)
            earlier_left = any(self.attempt_of(p) != attempt for p in r.pods) or len(slots) < len(every)
            self.create_missing(slots, every, restarts, earlier_left)
            r.tell_create_failure()
        self.write_group_statuses()
        return {"restarts": restarts, **counted, "failures": failures, **self.jobs_record()}

    def restart_jobs(
        self,
        policy: GangFailurePolicy | None,
        whole: int,
        failures: dict[str, int],
        slots: dict[tuple[str, int], Obj],
        every: Mapping[tuple[str, int], Obj],
    ) -> GangVerdict | None:
        """The gang policy over the failed Jobs (`self.failed_jobs`, each with when it failed, or
        now), one by one as JobSet's reconciles take them: while it restarts the Job it picks
        (`failureorder`) alone, that Job's pods are deleted (made again as its next attempt), its
        failures and success forgotten, the restart recorded, told (Warning) and counted; then the
        next. The verdict on the whole gang (restart it, or fail the job); None when every failed
        Job was restarted alone (or no policy). `whole`: the whole-gang restarts that counted."""
        if policy is None:
            return None
        r, jobs = self.r, self.job_restarts
        order = FailureOrder(
            FailedJob(g, j, self.failed_at.get((g, j)) or r.now, *self.reasons.get((g, j), ()))
            for g, indexes in self.failed_jobs.items()
            for j in indexes
        )
        while self.failed_jobs:
            verdict = policy.decide(order, whole + jobs.counted_total())
            if verdict.job is None or not verdict.restart:
                return verdict
            group, job = verdict.job
            order.take(group, job)
            jobs.restart(group, job, verdict.counts)
            self.deadlines.forget(group, job)
            self.success.forget(group, job)
            self.completed.forget(group, job)
            groupfailure.forget_job(self.shape, failures, group, job)
            for slot in jobs.slots(group, job):
                pod = every.get(slot)
                if pod is not None and not terminating(pod):
                    r.delete([pod_name(pod)])
                slots.pop(slot, None)
                self.failed_slots.discard(slot)
            r.event("Warning", verdict.reason, verdict.message)
            if not self.shape.recording.in_status:  # the record keeps it: counted once written
                r.plan.restarts += 1
            left = [j for j in self.failed_jobs[group] if j != job]
            if left:
                self.failed_jobs[group] = left
            else:
                del self.failed_jobs[group]
        return None

    def jobs_record(self) -> Obj:
        """The record's per-Job parts: single-Job restarts, start times, successes by policy and
        the succeeded indexes."""
        jobs, deadlines = self.job_restarts.record(), self.deadlines.record()
        return {**jobs, **deadlines, **self.success.record(), **self.completed.record()}

    def past_deadline(self, slots: Mapping[tuple[str, int], Obj]) -> None:
        """Jobs past their own activeDeadlineSeconds have failed (`jobdeadlines`), each told in a
        Warning event; the next deadline is a requeue."""
        r = self.r
        told, due = self.deadlines.fail_past(slots, r.now, self.failed_jobs, self.failed_at, self.reasons)
        r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, due)
        for message in told:
            r.event("Warning", jobdeadlines.REASON, message)

    def pods_not_starting(self, attempt: str) -> podstart.Verdict:
        """The start check (`ReconcileDraft.pods_not_starting`) over the attempt's pods."""
        r = self.r
        pods = [p for p in r.live_pods() if self.attempt_of(p) == attempt]
        return r.pods_not_starting(pods, self.shape.run_policy.start_deadline_seconds)

    def stalled(self, attempt: str) -> Obj | None:
        """Progress deadline exceeded (`stall.check_attempt`, from the attempt's start): a Warning
        event and a whole-gang restart, counted against the policy's `max_restarts` while it
        leaves room (0 without a policy), else Failed. The record after it; None: not stalled."""
        r, state = self.r, self.r.record
        pods = [p for p in r.live_pods() if self.attempt_of(p) == attempt]
        verdict = stall.check_attempt(
            r.old,
            self.shape.run_policy.progress_deadline_seconds,
            state.get(RESTARTED_AT),
            any(pod_phase(p) == "Running" and not terminating(p) for p in pods),
            r.now,
            r.title,
        )
        if not verdict.stalled:
            r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, verdict.due)
            return None
        gang_policy = self.shape.failure.gang
        max_restarts = gang_policy.max_restarts if gang_policy is not None else 0
        restarts = int(state.get("restarts") or 0)
        whole = int(state.get("countedRestarts", restarts) or 0)
        so_far = whole + self.job_restarts.counted_total()  # with the Jobs' own counted restarts
        if so_far >= max_restarts:  # a stall restart counts, as JobSet's RestartJobSet does
            r.terminal(FAILED, stall.REASON, verdict.message, delete_active=True)
            self.failed_jobs = {}
            self.write_group_statuses()
            return {**state, **self.job_restarts.record()}
        message = (
            f"{verdict.message} Restarting every pod as attempt {restarts + 1} "
            f"(restart {so_far + 1} of maxRestarts {max_restarts})."
        )
        r.restart_all(stall.REASON, message)
        new = {"restarts": restarts + 1, "countedRestarts": whole + 1, "failures": {}}
        return restarted({**new, **self.job_restarts.record()}, r.now)

    def create_missing(
        self,
        slots: dict[tuple[str, int], Obj],
        held: Mapping[tuple[str, int], Obj],
        attempt: int,
        earlier_left: bool,
    ) -> None:
        """The pods of the missing slots `creates.missing_slots` picks, made by the shape."""
        r, shape = self.r, self.shape
        room = max(1, r.config.max_pod_creates)
        # One slot beyond the pass tells whether the next pass continues this one.
        # Jobs that succeeded by policy (`jobsuccess.py`), indexes that succeeded
        done = self.success.slots() | self.completed.slots
        missing = creates.missing_slots(
            shape, slots, held, room + 1, earlier_attempt_left=earlier_left, skip=self.failed_slots, done=done
        )
        r.plan.creates_continue = len(missing) > room
        jobs, placement = self.job_restarts, Placement(r, shape, slots)  # exclusiveplacement.py
        placement.repair()
        for group, index in missing[:room]:
            # the shape's pod, the env plug-in's part, the progress endpoint's, the gang's (desired.py)
            job_attempt = jobs.attempt(group, jobs.job_of(group, index))
            pod = self.desired.pod(group, index, attempt=attempt, job_attempt=job_attempt)
            if placement.place(group, index, pod):  # a follower once its leader's domain is known
                r.plan.create_pods.append(pod)
        placement.tell()
        self.deadlines.started(missing[:room], r.now)
        if r.plan.create_pods and not r.pods:  # the job's first pods: what they need, before them
            r.plan.create_children += self.children.unread_prerequisites()

    # --- the per-group status -----------------------------------------------------------------
    def write_group_statuses(self) -> None:
        """Per group, JobSet's replicatedJobsStatus (`groupstatus`), the failed Jobs counted. A
        pod of an earlier attempt (of the gang or of its Job), still terminating, counts for
        nothing: JobSet leaves such Jobs out (`getChildJobs`, its `previous` Jobs), so Kueue's
        reclaimable pods never count the old attempt's Succeeded pods (Kueue issue 14609)."""
        attempt = str(int(self.r.record.get("restarts") or 0))
        earlier = self.earlier | {pod_name(p) for p in self.r.pods if self.attempt_of(p) != attempt}
        groupstatus.write(
            self.r, self.shape, self.failed_jobs, self.success.done, self.completed.slots, earlier
        )


def restarted(record: Mapping[str, Any], now: datetime) -> Obj:
    """The run's record with the new attempt's start."""
    return {**record, RESTARTED_AT: format_time(now)}
