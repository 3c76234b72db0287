"""The per-group failure model (`kubetrain.jobs.failuremodel`, a JobSet's batch Jobs) applied
to a job's observed pods — pure.

A Failed pod of a group is deleted (to be recreated) and counted against the group's backoff
limit in the job's record; the group has failed (`BackoffLimitExceeded`) once its count is over
the limit or — restartPolicy OnFailure, where the kubelet restarts containers in place — its
live pods' container restarts reach it (any restart with a limit of 0), as the Job controller
decides. What failed groups do to the whole job is the shape's gang policy's
(`JobShape.failure.gang`), applied by the planner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.jobs.shape import JobShape
from kubetrain.operator.pods import pod_name, pod_phase, terminating

Slots = Mapping[tuple[str, int], Mapping[str, Any]]


@dataclass
class GroupFailures:
    """What this reconcile saw of the groups' failures."""

    failures: dict[str, int]  # the record after it: Failed pods counted per group
    delete: list[str] = field(default_factory=list)  # Failed pods to delete (and recreate)
    failed: list[str] = field(default_factory=list)  # groups past their limit, in shape order


def restart_count(pod: Mapping[str, Any]) -> int:
    """Container restarts of every container and init container of the pod."""
    status = pod.get("status") or {}
    return sum(
        int(cs.get("restartCount") or 0)
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in status.get(key) or []
        if isinstance(cs, Mapping)
    )


def group_failed(limit: int, restart_policy: str, pods: list[Mapping[str, Any]], failures: int) -> bool:
    """The Job controller's backoffLimit rule for one group."""
    if failures > limit:
        return True
    if restart_policy != "OnFailure":
        return False
    restarts = sum(restart_count(p) for p in pods if pod_phase(p) in ("Pending", "Running"))
    return restarts > 0 if limit == 0 else restarts >= limit


def judge(
    shape: JobShape, slots: Slots, deleting: set[str] | frozenset[str], recorded: Mapping[str, int]
) -> GroupFailures:
    """The groups' failures given the pods in their slots (pods in `deleting` do not count) and
    the failures recorded so far."""
    out = GroupFailures(dict(recorded))
    model = shape.failure
    for name, group in shape.groups.items():
        in_slots = (slots.get((name, i)) for i in range(group.replicas))
        pods = [p for p in in_slots if p is not None and pod_name(p) not in deleting]
        newly = [pod_name(p) for p in pods if pod_phase(p) == "Failed" and not terminating(p)]
        if newly:
            out.failures[name] = out.failures.get(name, 0) + len(newly)
            out.delete += newly
        if group_failed(model.backoff_limit(name), group.restart_policy, pods, out.failures.get(name, 0)):
            out.failed.append(name)
    return out
