"""The per-group failure model (`kubetrain.jobs.failuremodel`, a JobSet's batch Jobs) applied
to a job's observed pods — pure.

A group (a JobSet's replicated job) is `jobs_of(group)` batch Jobs of `ReplicaGroup.job_size`
pods: slot `k` is pod `k % job_size` of Job `k // job_size`, and each Job has the group's
backoff limit to itself, as JobSet makes one Job per replica from the replicated job's template.
A Failed pod is deleted (to be recreated) and counted against its own Job in the job's record;
a Job has failed (`BackoffLimitExceeded`) once its count is over the limit or — restartPolicy
OnFailure, where the kubelet restarts containers in place — its live pods' container restarts
reach it (any restart with a limit of 0), as the Job controller decides. A group has failed when
any of its Jobs has. What failed groups do to the whole job is the shape's gang policy's
(`JobShape.failure.gang`), applied by the planner.

A group with pod failure rules (`FailureModel.rules`: its Jobs' batch/v1 `podFailurePolicy`) has
each Failed pod matched against them first, with the Job controller's matcher
(`restarts.first_match`, pod_failure_policy.go's `matchPodFailurePolicy`: the first rule that
matches decides; FailIndex without backoffLimitPerIndex and unknown actions are skipped):
`Ignore` — the pod is deleted (and recreated) without counting; `Count` — counted, as without a
rule; `FailJob` — counted, and its Job has failed at once with reason `PodFailurePolicy` and the
Job controller's message (`Container <c> for pod <ns>/<pod> failed with exit code <n> matching
FailJob rule at index <i>`, or `Pod <ns>/<pod> has condition <type> matching FailJob rule at
index <i>`); that pod is kept, as the Job controller keeps a failed Job's pods (what the gang
policy does next deletes it, or the job has failed). Several FailJob pods of one Job: the first
in slot order names the failure.

The record (`failures`, a mapping of key to count) is keyed by the group's name for a group of
one Job (the common case: Trainer's runtimes have `replicas: 1`) and by `<group>/<job index>`
(`job_key`) for each Job of a group of several; group names are DNS labels, so the two forms
never collide. A plain group key read for a group of several Jobs (a record written before the
count was kept per Job) counts against its Job 0 — the group fails on those failures exactly
when it did before — and is written back as that Job's key. A key that names no Job of the
shape is kept as it is and counts against nothing; a count that is not a non-negative integer
is dropped.

A group whose Jobs have `backoffLimitPerIndex` (`FailureModel.index_limits`) has each counted
failure counted against its index too, and a `FailIndex` rule acted on (`indexfailure.py`: the
record's `<job key>#<index>` keys): a failed index's pod is kept and never made again
(`GroupFailures.failed_slots`), the Job's other indexes go on, and the Job fails through its
indexes (`MaxFailedIndexesExceeded`, `FailedIndexes`) after a FailJob rule and its backoff limit
(batch/v1's default with `backoffLimitPerIndex`: 2147483647) have had their say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubetrain.jobs.failuremodel import REASON_POD_FAILURE_POLICY
from kubetrain.jobs.shape import JobShape, ReplicaGroup
from kubetrain.operator import indexfailure
from kubetrain.operator.failuretime import last_restart_at, latest, pod_failed_at
from kubetrain.operator.indexfailure import IndexKey, JobIndexes
from kubetrain.operator.pods import pod_name, pod_phase, terminating
from kubetrain.operator.restarts import RuleMatch, first_match

Slots = Mapping[tuple[str, int], Mapping[str, Any]]
JOB_KEY_SEPARATOR = "/"  # never in a group name (a DNS label)


@dataclass
class GroupFailures:
    """What this reconcile saw of the groups' failures."""

    failures: dict[str, int]  # the record after it: Failed pods counted per Job
    delete: list[str] = field(default_factory=list)  # Failed pods to delete (and recreate)
    # per group with a failed Job, in shape order, the indexes of its failed Jobs, ascending
    failed_jobs: dict[str, list[int]] = field(default_factory=dict)
    # per failed Job (group, index), when it failed as its pods tell (`failuretime`; None: unknown)
    failed_at: dict[tuple[str, int], datetime | None] = field(default_factory=dict)
    # per Job a FailJob rule failed (group, index): its failure's reason and message (a Job
    # not listed failed with `BackoffLimitExceeded`)
    reasons: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    # the slots (group, index) of failed indexes (`backoffLimitPerIndex`): never made again
    failed_slots: set[tuple[str, int]] = field(default_factory=set)

    @property
    def failed(self) -> list[str]:
        """The groups with a failed Job, in shape order."""
        return list(self.failed_jobs)


def jobs_of(group: ReplicaGroup) -> int:
    """How many Jobs the group is (a last, partial Job counts: no slot goes unjudged)."""
    size = max(group.job_size, 1)
    return -(-group.replicas // size)


def job_of(group: ReplicaGroup, index: int) -> int:
    """The Job slot `index` of the group belongs to."""
    return index // max(group.job_size, 1)


def job_slots(group: ReplicaGroup, job: int) -> range:
    """The slot indexes of Job `job` of the group."""
    size = max(group.job_size, 1)
    return range(job * size, min((job + 1) * size, group.replicas))


def job_key(shape: JobShape, group: str, job: int) -> str:
    """The record's key for Job `job` of `group`: the group's name when it is one Job."""
    g = shape.groups[group]
    return group if jobs_of(g) == 1 else f"{group}{JOB_KEY_SEPARATOR}{job}"


def _count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    return _number(value) if isinstance(value, str) else None


def _number(text: str) -> int | None:
    """`text` as a non-negative integer written in ASCII digits, else None."""
    return int(text) if text.isascii() and text.isdigit() else None


def _job_of(shape: JobShape, key: str) -> tuple[str, int] | None:
    """The Job a record key counts against; None: none of the shape's."""
    if key in shape.groups:
        return key, 0  # one Job's key, or a record from before per-Job counts: its Job 0
    group, sep, index = key.rpartition(JOB_KEY_SEPARATOR)
    job = _number(index)
    if not sep or group not in shape.groups or job is None:
        return None
    return (group, job) if job < jobs_of(shape.groups[group]) else None


def read_record(shape: JobShape, recorded: object) -> tuple[dict[tuple[str, int], int], dict[str, int]]:
    """The recorded failures per Job (group, index), and the entries that name no Job of the
    shape (kept as they are)."""
    counts: dict[tuple[str, int], int] = {}
    other: dict[str, int] = {}
    if not isinstance(recorded, Mapping):
        return counts, other
    for key, value in recorded.items():
        n = _count(value)
        if n is None:
            continue
        job = _job_of(shape, str(key))
        if job is None:
            other[str(key)] = n
        else:
            counts[job] = counts.get(job, 0) + n
    return counts, other


def read_index_record(
    shape: JobShape, other: Mapping[str, int]
) -> tuple[dict[IndexKey, int], dict[str, int]]:
    """Of the entries `read_record` found for no Job, the failures per index of a Job
    (`indexfailure`'s keys), and the rest (kept as they are)."""
    counts: dict[IndexKey, int] = {}
    rest: dict[str, int] = {}
    for key, n in other.items():
        split = indexfailure.split_key(key)
        job = _job_of(shape, split[0]) if split is not None else None
        if split is None or job is None or split[1] >= len(job_slots(shape.groups[job[0]], job[1])):
            rest[key] = n
        else:
            index = (job[0], job[1], split[1])
            counts[index] = counts.get(index, 0) + n
    return counts, rest


def write_record(
    shape: JobShape,
    counts: Mapping[tuple[str, int], int],
    other: Mapping[str, int],
    indexes: Mapping[IndexKey, int] | None = None,
) -> dict[str, int]:
    """The record of `counts` (Jobs without failures left out), `other` and the failures per
    index (`indexes`), in shape order."""
    out: dict[str, int] = dict(other)
    order = {name: i for i, name in enumerate(shape.groups)}
    for (group, job), n in sorted(counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        if n > 0:
            out[job_key(shape, group, job)] = n
    by_index = sorted((indexes or {}).items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2]))
    for (group, job, index), n in by_index:
        if n > 0:
            out[indexfailure.index_key(job_key(shape, group, job), index)] = n
    return out


def forget_job(shape: JobShape, failures: dict[str, int], group: str, job: int) -> None:
    """`failures` (a record) without Job `job` of `group`'s counts, its own and its indexes'
    (the Job restarted alone: its failures start over)."""
    key = job_key(shape, group, job)
    for name in list(failures):
        split = indexfailure.split_key(name)
        if name == key or (split is not None and split[0] == key):
            del failures[name]


def restart_count(pod: Mapping[str, Any]) -> int:
    """Container restarts of every container and init container of the pod."""
    status = pod.get("status") or {}
    return sum(
        int(cs.get("restartCount") or 0)
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in status.get(key) or []
        if isinstance(cs, Mapping)
    )


def job_failed(limit: int, restart_policy: str, restarts: int, failures: int) -> bool:
    """The Job controller's backoffLimit rule for one Job: its `failures` counted so far and the
    container `restarts` of its live (Pending or Running) pods."""
    if failures > limit:
        return True
    if restart_policy != "OnFailure":
        return False
    return restarts > 0 if limit == 0 else restarts >= limit


def fail_job_message(matched: RuleMatch, pod: Mapping[str, Any], namespace: str) -> str:
    """The Job controller's failure message for a FailJob rule (pod_failure_policy.go)."""
    meta = pod.get("metadata") or {}
    where = f"{meta.get('namespace') or namespace}/{meta.get('name', '')}"
    if matched.condition:
        return f"Pod {where} has condition {matched.condition} matching FailJob rule at index {matched.index}"
    return (
        f"Container {matched.container} for pod {where} failed with exit code {matched.exit_code} "
        f"matching FailJob rule at index {matched.index}"
    )


def judge(
    shape: JobShape, slots: Slots, deleting: set[str] | frozenset[str], recorded: object
) -> GroupFailures:
    """The Jobs' failures given the pods in their slots (pods in `deleting` do not count) and the
    failures recorded so far (the record's `failures`)."""
    counts, other = read_record(shape, recorded)
    indexes, other = read_index_record(shape, other)
    out = GroupFailures({})
    model = shape.failure
    for name, group in shape.groups.items():
        on_failure = group.restart_policy == "OnFailure"
        rules, actions, per_index = model.rules(name), model.rule_actions(name), model.index_limit(name)
        restarts = [0] * jobs_of(group)  # per Job: its live pods' container restarts
        times: list[list[datetime | None]] = [[] for _ in restarts]  # per Job: its failures' times
        succeeded: list[set[int]] = [set() for _ in restarts]  # per Job: its Succeeded indexes
        for index in range(group.replicas):
            pod = slots.get((name, index))
            if pod is None or pod_name(pod) in deleting:
                continue
            phase, job = pod_phase(pod), job_of(group, index)
            at = (name, job, index - job * max(group.job_size, 1))  # the pod's index in its Job
            if phase == "Succeeded":
                succeeded[job].add(at[2])
            if phase == "Failed" and not terminating(pod):
                if per_index is not None and indexfailure.failed(indexes.get(at, 0), per_index):
                    continue  # a failed index's pod, kept: counted when it failed
                matched = first_match(rules, pod, actions=actions) if rules else None
                if matched is not None and matched.action == "Ignore":
                    out.delete.append(pod_name(pod))  # replaced, not counted
                    continue
                counts[(name, job)] = counts.get((name, job), 0) + 1
                times[job].append(pod_failed_at(pod))
                if per_index is not None:
                    indexes[at] = indexes.get(at, 0) + 1
                    if matched is not None and matched.action == "FailIndex":
                        indexes[at] = indexfailure.fail_index_count(indexes[at], per_index)
                if matched is not None and matched.action == "FailJob":
                    if (name, job) not in out.reasons:
                        message = fail_job_message(matched, pod, shape.namespace)
                        out.reasons[(name, job)] = (REASON_POD_FAILURE_POLICY, message)
                elif per_index is None or not indexfailure.failed(indexes[at], per_index):
                    out.delete.append(pod_name(pod))  # made again, as the Job's next try
            elif on_failure and phase in ("Pending", "Running"):
                restarts[job] += restart_count(pod)
                times[job].append(last_restart_at(pod))
        limit = model.backoff_limit(name)
        for job, restarted in enumerate(restarts):
            failed = (name, job) in out.reasons
            if not failed and job_failed(limit, group.restart_policy, restarted, counts.get((name, job), 0)):
                failed = True
            elif not failed and per_index is not None:
                failed = _failed_by_indexes(shape, name, job, indexes, succeeded[job], out)
            if failed:
                out.failed_jobs.setdefault(name, []).append(job)
                out.failed_at[(name, job)] = latest(times[job])
    out.failures = write_record(shape, counts, other, indexes)
    return out


def _failed_by_indexes(
    shape: JobShape,
    group: str,
    job: int,
    indexes: Mapping[IndexKey, int],
    succeeded: set[int],
    out: GroupFailures,
) -> bool:
    """The Job's failed indexes (their slots put in `out.failed_slots`), and whether they failed
    it (its reason put in `out.reasons`)."""
    g = shape.groups[group]
    limit = shape.failure.index_limit(group)
    if limit is None:
        return False
    slots = job_slots(g, job)
    failed = indexfailure.failed_indexes(indexes, group, job, limit)
    out.failed_slots.update((group, slots[0] + i) for i in failed)
    verdict = indexfailure.job_verdict(
        JobIndexes(len(slots), failed, frozenset(succeeded)), shape.failure.max_failed_indexes.get(group)
    )
    if verdict is None:
        return False
    out.reasons[(group, job)] = verdict
    return True
