"""The part of a reconcile for a valid job that is not finished yet (see `plan.py`), for every
shape: `active_part` picks it by the shape's failure model (`JobShape.failure`) — per pod
(`ActiveJob`, here) or per group with a whole-gang policy (`groupactive.GroupActiveJob`).

`ActiveJob`: the observed pods in their slots (`slots.py`), restarts and failures, suspend, the
gates pods wait behind (`gates.py`: Service, extra children, gang), creating missing pods and the
per-replica-type status. Pure like the rest of the planner. A controlled pod named for an
index the spec no longer has (scaled down) is deleted. The indexes whose pod Succeeded in the
current run are kept in `status.completedIndexes` (`completedindexes.py`, as a Job's): such an
index whose pod is gone is never made again and counts as Succeeded; the record starts over
with the run (a whole-job restart, a suspend, which deletes every pod).
"""

from __future__ import annotations

from typing import Any, Protocol

from kubetrain.api.labels import LABEL_REPLICA_TYPE
from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.jobs.codesync import code_sync_of
from kubetrain.jobs.projection import GroupTally
from kubetrain.jobs.shape import JobShape
from kubetrain.operator import codesyncfailure, codesyncstatus, creates, gates, podstart, runpolicy, stall
from kubetrain.operator import restarts as rs
from kubetrain.operator import status as st
from kubetrain.operator.children import replica_selector
from kubetrain.operator.completedindexes import COMPLETED_INDEXES, CompletedIndexes
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.groupactive import GroupActiveJob
from kubetrain.operator.pods import controlled_by, pod_name, pod_phase, terminating
from kubetrain.operator.slots import phase_counts, slot_pods

# A Failed pod to act on: its replica type, the pod, the verdict on it.
Retry = tuple[str, dict[str, Any], rs.Verdict]


class ActivePart(Protocol):
    """The active part of one reconcile, as the frame (`plan.py`) drives it."""

    @property
    def desired(self) -> DesiredChildren: ...

    def run(self) -> None: ...

    def finish(self) -> None:
        """The job finished in this reconcile: the last per-group status it gets."""
        ...


def active_part(r: ReconcileDraft, shape: JobShape, desired: DesiredChildren) -> ActivePart:
    """The active part for `shape`'s failure model: failures judged per group under a whole-gang
    policy (the shape makes its own children), else per pod."""
    if shape.failure.gang is not None:
        return GroupActiveJob(r, shape, desired)
    return ActiveJob(r, shape, desired)


class ActiveJob:
    """The part of a reconcile for a valid job that is not finished yet."""

    def __init__(self, r: ReconcileDraft, shape: JobShape, desired: DesiredChildren) -> None:
        self.r, self.shape, self.layout, self.desired = r, shape, shape.layout, desired
        self.slots: dict[tuple[str, int], dict[str, Any]] = {}
        self.tallies: dict[str, rs.TypeRestarts] = {}
        self.commit: str | None = None  # the code-sync commit new pods fetch
        self.slots, former = slot_pods(shape, r.pods)
        self.held = dict(self.slots)  # every slot a pod holds, of any attempt
        r.delete([pod_name(p) for p in former if not terminating(p)])  # indices the spec no longer has
        # Slots still held by a pod of an earlier attempt (a RestartJob rule, a stall): it is
        # deleted and counts for nothing of the new attempt, and no pod of the new attempt is
        # made while one is left (create_missing), so the attempts never run side by side.
        self.stale: set[tuple[str, int]] = set()
        self.attempt = rs.job_attempt(r.old)
        for slot, pod in list(self.slots.items()):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if rs.pod_attempt(labels.get(shape.recording.attempt_label)) != self.attempt:
                if not terminating(pod):
                    r.delete([pod_name(pod)])
                self.stale.add(slot)
                del self.slots[slot]
        # The current run's succeeded indexes (status.completedIndexes), these pods' added.
        self.completed = CompletedIndexes.read_types(shape, r.old.get(COMPLETED_INDEXES))
        self.completed.observe(self.slots)
        self.record_completed()

    def finish(self) -> None:
        # Recount: pods that cleanPodPolicy deletes now are no longer active, so the last
        # status a finished job gets does not show pods that are gone.
        self.write_replica_statuses(self.tallies, finished=True)

    def restart_policy(self, rtype: str) -> str:
        return self.shape.groups[rtype].restart_policy

    def container(self, rtype: str) -> str:
        return self.shape.groups[rtype].container_name

    def run(self) -> None:
        r, policy = self.r, self.r.run_policy
        tallies = self.tallies = self.tally_restarts()
        if policy.suspend:
            self.suspend()
            self.write_replica_statuses(tallies)
            return
        resumed = self.shape.status.set_resumed(r.status, r.title, r.now)
        if resumed is not None:
            r.event("Normal", *resumed)
        may_create = gates.service_ok(r, self.desired) & gates.gang_ok(r, self.desired)
        may_create &= gates.extra_children_ok(r, self.desired)
        self.code_sync()
        counts = self.counts(exclude_deleting=False)
        failures, retries, restart_job = self.failed_pods()
        # A fetch the kubelet keeps restarting (restartPolicy other than Never) that failed for good.
        failures += codesyncfailure.fetch_failures(self.slots.values(), code_sync_of(self.layout.annotations))
        deadline = runpolicy.deadline(policy, self.shape.status.run_began(r.status, r.job, r.now))
        limit = rs.backoff_limit(policy.backoff_limit, r.job)
        base = sum(t.base for t in tallies.values())
        added = self.new_restarts(retries, restart_job)
        succeeded = self.shape.succeeded(counts)
        framework_failure = None if succeeded else self.shape.failed(counts)
        stall.resumed(r.status, r.now)
        stalled = stall.check(r.status, policy.progress_deadline_seconds, r.now, r.title)
        start = self.pods_not_starting()
        if succeeded:
            reason, message = self.shape.status.succeeded_as(r.title)
            r.terminal(st.SUCCEEDED, reason, r.worded(reason, message), delete_active=False)
        elif framework_failure is not None:
            message = f"{r.title} has failed: {framework_failure}"
            r.terminal(st.FAILED, st.REASON_FAILED, message, delete_active=True)
        elif deadline is not None and r.now >= deadline:
            reason, message = self.shape.status.deadline_exceeded_as(r.status, r.title)
            r.terminal(st.FAILED, reason, message, delete_active=True)
        elif start.failed is not None:
            r.terminal(st.FAILED, podstart.REASON_DEADLINE, start.failed, delete_active=True)
        elif failures:
            reason, detail = failures[0]
            r.terminal(st.FAILED, reason, f"{r.title} has failed: {detail}", delete_active=False)
        elif limit is not None and base + added > limit:
            why = "" if not added else f", {restart_job[2].detail}" if restart_job else ", another pod failed"
            message = (
                f"{r.title} has failed because it reached its backoffLimit of {limit} "
                f"({base} restarts so far{why})."
            )
            # cleanPodPolicy decides which pods go (`Reconcile.finished`): `None` keeps the
            # crashing pods and their logs (training-operator's ReconcileJobs since Kubeflow
            # Trainer #3419; it deleted them first).
            r.terminal(st.FAILED, st.REASON_BACKOFF_LIMIT, message, delete_active=False)
        elif restart_job is not None:
            self.restart_job(restart_job, tallies, limit)
        elif stalled.stalled:
            self.on_stall(stalled.message, tallies, limit, base + added)
        else:
            self.restart(retries, tallies, limit)
            if may_create:
                self.create_missing()
            self.update_running(tallies)
            # startTime may have been set just now: the deadline counts from it.
            deadline = runpolicy.deadline(policy, self.shape.status.run_began(r.status, r.job, r.now))
            r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, deadline)
            r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, stalled.due)
            r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, start.due)
        self.write_replica_statuses(tallies)

    # --- observations --------------------------------------------------------------------------
    def counts(self, *, exclude_deleting: bool, keep_finished: bool = False) -> dict[str, ReplicaCounts]:
        """Pod phases per type. `exclude_deleting`: pods this plan deletes do not count — except,
        with `keep_finished`, Succeeded/Failed ones (clean-up of a finished job keeps its tally)."""
        deleting = self.r.deleting if exclude_deleting else set()
        counts = phase_counts(self.shape, self.slots, deleting, keep_finished=keep_finished)
        return self.completed.counts(counts)  # an index that succeeded counts, its pod gone or not

    def tally_restarts(self) -> dict[str, rs.TypeRestarts]:
        old = self.r.old.get("replicaStatuses")
        old = old if isinstance(old, dict) else {}
        present = dict.fromkeys(self.shape.groups, 0)
        for (rtype, _), pod in self.slots.items():
            present[rtype] += rs.restart_count(pod, self.container(rtype))
        return {rtype: rs.TypeRestarts.recorded(old.get(rtype), n) for rtype, n in present.items()}

    def failed_pods(
        self,
    ) -> tuple[list[tuple[str, str]], list[Retry], Retry | None]:
        """The Failed pods' verdicts: job failures, pods to recreate, and the first pod whose
        failure restarts the whole job (a RestartJob rule)."""
        failures: list[tuple[str, str]] = []
        retries: list[Retry] = []
        restart_job: Retry | None = None
        rules = self.r.run_policy.failure_rules
        launcher_job = rs.runs_as_launcher_job(self.r.job)
        for (rtype, _), pod in self.slots.items():
            if terminating(pod) or pod_phase(pod) != "Failed" or pod_name(pod) in self.r.deleting:
                continue
            verdict = rs.classify_failed_pod(
                pod, self.restart_policy(rtype), self.container(rtype), rules, rtype
            )
            if launcher_job:
                verdict = rs.launcher_job_verdict(verdict, rtype)
            if verdict.action == rs.FAIL:
                failures.append((verdict.reason, verdict.detail))
            elif verdict.action == rs.RESTART_JOB:
                restart_job = restart_job or (rtype, pod, verdict)
            else:
                retries.append((rtype, pod, verdict))
        return failures, retries, restart_job

    @staticmethod
    def new_restarts(retries: list[Retry], restart_job: Retry | None) -> int:
        """Restarts this reconcile adds to the backoffLimit count (a whole-job restart is one)."""
        if restart_job is not None:
            return 1
        return sum(1 for _, _, verdict in retries if verdict.counted)

    def pods_not_starting(self) -> podstart.Verdict:
        """The start check (`ReconcileDraft.pods_not_starting`) over the current attempt's pods."""
        r = self.r
        live = [p for p in self.slots.values() if not terminating(p) and pod_name(p) not in r.deleting]
        return r.pods_not_starting(live, r.run_policy.start_deadline_seconds)

    # --- the run's succeeded indexes -----------------------------------------------------------
    def record_completed(self) -> None:
        """`status.completedIndexes` as the record now is (no field when it is empty)."""
        if not self.shape.recording.in_status:
            return
        record = self.completed.by_type()
        if record:
            self.r.status[COMPLETED_INDEXES] = record
        else:
            self.r.status.pop(COMPLETED_INDEXES, None)

    def start_over(self) -> None:
        """The run starts over (every pod deleted): no index has succeeded in it yet."""
        self.completed.slots.clear()
        self.record_completed()

    # --- decisions -----------------------------------------------------------------------------
    def code_sync(self) -> None:
        """Record the commit the job runs, pin new pods to it, recreate live pods that fetched
        another one (operator/codesyncstatus.py)."""
        r = self.r
        sync = codesyncstatus.decide(self.layout.annotations, r.status, self.slots.values(), r.title)
        if sync.record is not None:
            r.status["codeSync"] = sync.record
        self.commit = sync.commit
        r.delete([name for name, _ in sync.recreate])
        for etype, reason, message in sync.events:
            r.event(etype, reason, message)

    def suspend(self) -> None:
        r = self.r
        r.delete([pod_name(p) for p in r.live_pods()])
        self.start_over()  # every pod deleted, the finished ones too: resuming runs them all
        group = r.observed.pod_group
        if group is not None and controlled_by(group, r.job):
            r.plan.delete_pod_group = True
        suspended = self.shape.status.set_suspended(r.status, r.title, r.now)
        if suspended is not None:
            r.event("Normal", *suspended)

    def restart_job(self, trigger: Retry, tallies: dict[str, rs.TypeRestarts], limit: int | None) -> None:
        """Every pod of the job deleted, to be recreated as attempt `jobRestarts + 1` once all are
        gone; one restart against backoffLimit, one Event, a Restarting condition naming the pod."""
        r = self.r
        rtype, _, verdict = trigger
        tallies[rtype].recreations += 1
        attempt = self.attempt + 1
        r.status["jobRestarts"] = attempt
        self.start_over()
        total = sum(t.total for t in tallies.values())
        suffix = f"restart {total} of backoffLimit {limit}" if limit is not None else f"restart {total}"
        message = f"{r.title} is restarting all its pods as attempt {attempt}: {verdict.detail} ({suffix})"
        r.restart_all(st.REASON_RESTART_JOB, message)
        st.set_restarting(r.status, message, r.now, st.REASON_RESTART_JOB)

    def on_stall(
        self, message: str, tallies: dict[str, rs.TypeRestarts], limit: int | None, used: int
    ) -> None:
        """Stalled (stall.py): the whole job restarted as a new attempt (one restart against
        backoffLimit) when its replicas may restart and the limit leaves room, else Failed."""
        r = self.r
        st.set_condition(r.status, stall.STALLED, True, stall.REASON, message, r.now)
        policies = [group.restart_policy for group in self.shape.groups.values()]
        if not stall.may_restart(policies) or (limit is not None and used + 1 > limit):
            r.terminal(st.FAILED, stall.REASON, message, delete_active=True)
            return
        tallies[next(iter(self.shape.groups))].recreations += 1
        r.status["jobRestarts"] = attempt = self.attempt + 1
        self.start_over()
        total = sum(t.total for t in tallies.values())
        suffix = f"restart {total} of backoffLimit {limit}" if limit is not None else f"restart {total}"
        restart = f"{message} Restarting all its pods as attempt {attempt} ({suffix})."
        r.restart_all(stall.REASON, restart)
        st.set_restarting(r.status, restart, r.now, stall.REASON)

    def restart(self, retries: list[Retry], tallies: dict[str, rs.TypeRestarts], limit: int | None) -> None:
        r = self.r
        messages: list[str] = []
        for rtype, pod, verdict in retries:
            r.delete([pod_name(pod)])
            if verdict.counted:
                tallies[rtype].recreations += 1
            messages.append(f"{verdict.detail}; recreating it")
        for rtype, tally in tallies.items():
            if tally.in_place:
                messages.append(f"{tally.in_place} in-place container restart(s) of {rtype} pods")
        if not messages:
            return
        total = sum(t.total for t in tallies.values())
        suffix = f" (restart {total} of backoffLimit {limit})" if limit is not None else f" (restart {total})"
        for m in messages:
            r.event("Warning", st.REASON_RESTARTING, m + suffix)
        st.set_restarting(r.status, f"{r.title} is restarting: " + "; ".join(messages) + suffix, r.now)

    def create_missing(self) -> None:
        """Plan the missing pods, in priority order, at most `max_pod_creates` of them: only
        those are built, so a reconcile of a huge job costs what this pass creates."""
        r = self.r
        room = max(1, r.config.max_pod_creates)
        # One slot beyond the pass tells whether the next pass continues this one. A whole-job
        # restart makes its new attempt only once every pod of the earlier one is gone (as
        # JobSet's BlockingRecreate and Volcano's Restarting job wait): a new pod would meet a
        # peer of the old attempt at the rendezvous, and the gang would count both. An index
        # that succeeded in this run is never made again (and is Succeeded for dependsOn).
        missing = (
            []
            if self.stale
            else creates.missing_slots(self.shape, self.slots, self.held, room + 1, done=self.completed.slots)
        )
        r.plan.creates_continue = len(missing) > room
        missing = missing[:room]
        for rtype, index in missing:
            pod = self.desired.pod(rtype, index, attempt=self.attempt)
            if self.commit:
                codesyncstatus.pin_commit(pod, self.commit)
            r.plan.create_pods.append(pod)
        if (r.plan.create_pods or self.slots) and not r.status.get("startTime"):
            r.status["startTime"] = st.format_time(r.now)
        self.report_create_failure(bool(missing))

    def report_create_failure(self, creating: bool) -> None:
        """Say why pods cannot be created (the last wave's failure: a quota, a denial, a name held
        by a pod the job does not own) with Running=False and a Warning event when it changes;
        once a wave succeeded, or nothing is left to create, say that it cleared."""
        r = self.r
        failure = r.observed.create_failure
        running = st.get_condition(r.status, st.RUNNING)
        if failure is not None and creating:
            if st.set_not_running(r.status, failure.reason, f"{r.title}: {failure.message}", r.now):
                r.event("Warning", failure.reason, f"{r.title}: {failure.message}")
        elif running is not None and running.get("reason") in st.CREATE_FAILURE_REASONS:
            message = f"{r.title} is created; its pods can be created again."
            st.set_condition(r.status, st.RUNNING, False, st.REASON_CREATED, message, r.now)

    def update_running(self, tallies: dict[str, rs.TypeRestarts]) -> None:
        r = self.r
        if any(t.recreations or t.in_place for t in tallies.values()) or r.plan.create_pods:
            return
        counts = self.counts(exclude_deleting=True)
        wanted = self.shape.total_replicas
        active = sum(c.active for c in counts.values())
        settled = sum(c.active + c.succeeded for c in counts.values())
        if active > 0 and settled == wanted:
            running = r.worded(st.REASON_RUNNING, f"{r.title} is running.")
            st.set_running(r.status, st.REASON_RUNNING, running, r.now)

    def write_replica_statuses(self, tallies: dict[str, rs.TypeRestarts], *, finished: bool = False) -> None:
        counts = self.counts(exclude_deleting=True, keep_finished=finished)
        created: dict[str, int] = {}
        for pod in self.r.plan.create_pods:
            rtype = pod["metadata"]["labels"][LABEL_REPLICA_TYPE]
            created[rtype] = created.get(rtype, 0) + 1
        groups = [
            GroupTally(
                rtype,
                self.shape.count(rtype),
                active=c.active,
                pending=c.pending + created.get(rtype.lower(), 0),  # pods being created count as pending
                succeeded=c.succeeded,
                failed=c.failed,
                restarts=tallies[rtype].total,
                prior_restarts=tallies[rtype].prior_after,
                selector=replica_selector(self.layout, rtype),
            )
            for rtype, c in counts.items()
        ]
        self.shape.status.write_groups(self.r.status, groups)
