"""Which missing pods of a job are created now — one decision for every job shape, pure.

A slot is missing when no pod holds it: a pod of an earlier attempt, or one still terminating,
holds its slot until it is gone. In the shape's priority order, at most `room` of them:

- a group's pods only once its dependencies are met (`slots.dependencies_met`, on the pods of
  the current attempt);
- `run_policy.in_order_startup` (JobSet's `startupPolicy: InOrder`): none past a group that has
  not started — every pod of it present, not terminating, and Ready, Succeeded or Failed, or its
  slot `done` (JobSet's `allReplicasStarted`); a group still waiting for its dependencies holds
  back none;
- `run_policy.blocking_recreate`: none at all while a pod of an earlier attempt is left;
- none for a slot in `skip` (a failed index of a Job with `backoffLimitPerIndex`: not retried).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kubetrain.jobs.shape import JobShape
from kubetrain.operator.pods import pod_phase, pod_ready, terminating
from kubetrain.operator.slots import dependencies_met

Slot = tuple[str, int]
Slots = Mapping[Slot, Mapping[str, Any]]


def missing_slots(
    shape: JobShape,
    current: dict[Slot, dict[str, Any]],
    held: Slots,
    room: int,
    *,
    earlier_attempt_left: bool = False,
    skip: Collection[Slot] = (),
    done: Collection[Slot] = (),
) -> list[Slot]:
    """The slots to create pods for now. `current`: the pods of the current attempt by slot;
    `held`: every pod holding a slot (any attempt, terminating or not); `skip`: slots never made
    again; `done`: slots of Jobs that succeeded by policy (Succeeded for `dependsOn`, never made
    again)."""
    policy = shape.run_policy
    if policy.blocking_recreate and earlier_attempt_left:
        return []
    out: list[Slot] = []
    for name, group in shape.groups.items():
        if not dependencies_met(shape, name, current, done):
            continue  # waiting for its dependencies: it holds back no group after it
        for index in range(group.replicas):
            if (name, index) in held or (name, index) in skip or (name, index) in done:
                continue
            if len(out) >= room:
                return out
            out.append((name, index))
        if policy.in_order_startup and not started(held, name, group.replicas, done):
            return out
    return out


def started(held: Slots, group: str, replicas: int, done: Collection[Slot] = ()) -> bool:
    """Every pod of `group` present, not terminating, and Ready, Succeeded or Failed — or its
    slot in `done` (its Job or index succeeded: JobSet counts the Job started)."""
    for index in range(replicas):
        if (group, index) in done:
            continue
        pod = held.get((group, index))
        if pod is None or terminating(pod):
            return False
        if not pod_ready(pod) and pod_phase(pod) not in ("Succeeded", "Failed"):
            return False
    return True
