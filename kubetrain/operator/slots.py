"""Which observed pod fills which slot of a job, and the pod phases per replica type — pure.

A pod fills slot (type, index) only when the job controls it (controller ownerReference with the
job's uid) AND its name is the slot's name (`JobShape.pod_name`: `<job>-<type>-<index>`, or the
shape's own naming) — a pod's name never changes,
its labels and annotations can be edited by anyone allowed to edit pods, so they decide nothing.
A controlled pod named for an index the spec no longer has (scaled down) is reported apart; a pod
with any other name is ignored: it counts for neither success, failure nor restarts.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.jobs.shape import COMPLETE, STARTED, JobShape
from kubetrain.operator.pods import pod_name, pod_phase, pod_ready, terminating


def slot_pods(
    shape: JobShape, pods: list[dict[str, Any]]
) -> tuple[dict[tuple[str, int], dict[str, Any]], list[dict[str, Any]]]:
    """The job's controlled `pods` by the slot their name is for, and those named for an index
    the spec no longer has. Pods with any other name are in neither (see the module docstring)."""
    slots: dict[tuple[str, int], dict[str, Any]] = {}
    former: list[dict[str, Any]] = []
    if shape.naming is not None:  # names of the shape's own: each slot's name looked up
        named = {shape.pod_name(group, i): (group, i) for group, i in shape.slots()}
        for pod in pods:
            slot = named.get(pod_name(pod))
            if slot is not None:
                slots[slot] = pod
        return slots, former
    prefixes = [(shape.layout.pod_name(t, 0)[:-1], t) for t in shape.groups]  # "<job>-<type>-"
    for pod in pods:
        slot = slot_of(pod_name(pod), prefixes)
        if slot is None:
            continue
        if slot[1] >= shape.count(slot[0]):
            former.append(pod)
        else:
            slots[slot] = pod
    return slots, former


def phase_counts(
    shape: JobShape,
    slots: dict[tuple[str, int], dict[str, Any]],
    deleting: set[str] | frozenset[str] = frozenset(),
    *,
    keep_finished: bool = False,
) -> dict[str, ReplicaCounts]:
    """Pod phases per type over the slot pods that are not terminating; pods in `deleting` do
    not count — except, with `keep_finished`, Succeeded/Failed ones."""
    out: dict[str, ReplicaCounts] = {}
    for rtype in shape.groups:
        active = pending = succeeded = failed = 0
        done: set[int] = set()
        for (t, i), pod in slots.items():
            if t != rtype or terminating(pod):
                continue
            phase = pod_phase(pod)
            if pod_name(pod) in deleting and not (keep_finished and phase in ("Succeeded", "Failed")):
                continue
            if phase == "Running":
                active += 1
            elif phase == "Succeeded":
                succeeded += 1
                done.add(i)
            elif phase == "Failed":
                failed += 1
            else:
                pending += 1
        out[rtype] = ReplicaCounts(active, pending, succeeded, failed, frozenset(done))
    return out


def slot_of(name: str, prefixes: list[tuple[str, str]]) -> tuple[str, int] | None:
    """The (type, index) whose pod name is `name` (`<job>-<lower type>-<index>`, the index
    written as a plain decimal), or None. `prefixes` pairs each type's `<job>-<type>-` with it."""
    for prefix, rtype in prefixes:
        if name.startswith(prefix):
            digits = name[len(prefix) :]
            if digits.isdigit() and digits.isascii() and str(int(digits)) == digits:
                return rtype, int(digits)
    return None


def dependencies_met(
    shape: JobShape,
    group: str,
    slots: dict[tuple[str, int], dict[str, Any]],
    succeeded: Collection[tuple[str, int]] = (),
) -> bool:
    """Whether `group`'s missing pods may be created: every pod of each group it depends on
    (`ReplicaGroup.depends_on`) fills its slot, is not terminating, and is Running and Ready
    (`Ready`; or Succeeded, when the dependency says so), Succeeded (`Complete`) or Running,
    Succeeded or Failed (`Started`: KubeDL's `phaseComparator` against `Running`). A slot in
    `succeeded` (its batch Job succeeded by its success policy: JobSet counts the Job Complete;
    its index succeeded in this run, `completedindexes.py`) counts as Succeeded whatever its pod."""
    for dependency in shape.groups[group].depends_on:
        for i in range(shape.count(dependency.group)):
            if (dependency.group, i) in succeeded:  # past Running: started too
                if dependency.state in (COMPLETE, STARTED) or dependency.succeeded_is_ready:
                    continue
                return False
            pod = slots.get((dependency.group, i))
            if pod is None or terminating(pod):
                return False
            phase = pod_phase(pod)
            if dependency.state == COMPLETE:
                if phase != "Succeeded":
                    return False
            elif dependency.state == STARTED:
                if phase not in ("Running", "Succeeded", "Failed"):
                    return False
            elif not (phase == "Succeeded" and dependency.succeeded_is_ready) and (
                phase != "Running" or not pod_ready(pod)
            ):
                return False
    return True
