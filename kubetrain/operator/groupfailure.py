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

A group with pod failure rules (`FailureModel.rules`: its Jobs' batch/v1 `podFailurePolicy`)
has each Failed pod matched against them first, with the Job controller's matcher
(`restarts.first_match`, pod_failure_policy.go's `matchPodFailurePolicy`: the first rule that
matches decides; FailIndex and unknown actions are skipped): `Ignore` — the pod is deleted (and
recreated) without counting; `Count` — counted, as without a rule; `FailJob` — counted, and its
Job has failed at once with reason `PodFailurePolicy` and the Job controller's message (`Container
<c> for pod <ns>/<pod> failed with exit code <n> matching FailJob rule at index <i>`, or `Pod
<ns>/<pod> has condition <type> matching FailJob rule at index <i>`); that pod is kept, as the
Job controller keeps a failed Job's pods (what the gang policy does next deletes it, or the job
has failed). Several FailJob pods of one Job: the first in slot order names the failure.

The record (`failures`, a mapping of key to count) is keyed by the group's name for a group of
one Job (the common case: Trainer's runtimes have `replicas: 1`) and by `<group>/<job index>`
(`job_key`) for each Job of a group of several; group names are DNS labels, so the two forms
never collide. A plain group key read for a group of several Jobs (a record written before the
count was kept per Job) counts against its Job 0 — the group fails on those failures exactly
when it did before — and is written back as that Job's key. A key that names no Job of the
shape is kept as it is and counts against nothing; a count that is not a non-negative integer
is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubetrain.jobs.failuremodel import JOB_RULE_ACTIONS, REASON_POD_FAILURE_POLICY
from kubetrain.jobs.shape import JobShape, ReplicaGroup
from kubetrain.operator.failuretime import last_restart_at, latest, pod_failed_at
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


def write_record(
    shape: JobShape, counts: Mapping[tuple[str, int], int], other: Mapping[str, int]
) -> dict[str, int]:
    """The record of `counts` (Jobs without failures left out) and `other`, in shape order."""
    out: dict[str, int] = dict(other)
    order = {name: i for i, name in enumerate(shape.groups)}
    for (group, job), n in sorted(counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        if n > 0:
            out[job_key(shape, group, job)] = n
    return out


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
    out = GroupFailures({})
    model = shape.failure
    for name, group in shape.groups.items():
        on_failure = group.restart_policy == "OnFailure"
        rules = model.rules(name)
        restarts = [0] * jobs_of(group)  # per Job: its live pods' container restarts
        times: list[list[datetime | None]] = [[] for _ in restarts]  # per Job: its failures' times
        for index in range(group.replicas):
            pod = slots.get((name, index))
            if pod is None or pod_name(pod) in deleting:
                continue
            phase, job = pod_phase(pod), job_of(group, index)
            if phase == "Failed" and not terminating(pod):
                matched = first_match(rules, pod, actions=JOB_RULE_ACTIONS) if rules else None
                if matched is not None and matched.action == "Ignore":
                    out.delete.append(pod_name(pod))  # replaced, not counted
                    continue
                counts[(name, job)] = counts.get((name, job), 0) + 1
                times[job].append(pod_failed_at(pod))
                if matched is None or matched.action != "FailJob":
                    out.delete.append(pod_name(pod))
                elif (name, job) not in out.reasons:
                    message = fail_job_message(matched, pod, shape.namespace)
                    out.reasons[(name, job)] = (REASON_POD_FAILURE_POLICY, message)
            elif on_failure and phase in ("Pending", "Running"):
                restarts[job] += restart_count(pod)
                times[job].append(last_restart_at(pod))
        limit = model.backoff_limit(name)
        for job, restarted in enumerate(restarts):
            failed = (name, job) in out.reasons
            if failed or job_failed(limit, group.restart_policy, restarted, counts.get((name, job), 0)):
                out.failed_jobs.setdefault(name, []).append(job)
                out.failed_at[(name, job)] = latest(times[job])
    out.failures = write_record(shape, counts, other)
    return out
