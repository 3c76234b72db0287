"""Gang scheduling (docs/behaviour.md §8): when a PodGroup is needed and whether pods may be created.

- `none`: no PodGroup, pods are created at once.
- A scheduler that waits for admission (Volcano): the PodGroup is created first; pods only once
  the scheduler admitted it (its phase is neither empty nor Pending). Meanwhile the job says
  `Running=False, reason GangScheduling`.
- One that does not (scheduler-plugins): the PodGroup and the pods are created in the same
  reconcile (the coscheduling plugin holds the pods at Permit until minMember can run).
- PodGroup API not installed: no PodGroup and no pods; the job says why (condition message and
  a Warning event) instead of the operator failing.

What differs between gang schedulers is in their descriptors (`kubetrain.api.gangschedulers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.gangschedulers import gang_scheduler as gang_scheduler_of
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.status import REASON_GANG

EVENT_CRD_MISSING = "PodGroupAPIMissing"


@dataclass(frozen=True, slots=True)
class GangDecision:
    create_pod_group: dict[str, Any] | None = None
    may_create_pods: bool = True
    # Why pods are held back: (condition reason, message, Warning event reason or None).
    waiting: tuple[str, str, str | None] | None = None


def decide(
    desired: DesiredChildren,
    pod_group: Mapping[str, Any] | None,
    crd_installed: bool,
) -> GangDecision:
    """`pod_group`: the observed PodGroup of the job's name; `crd_installed`: whether the gang
    scheduler's PodGroup API is served."""
    gang = gang_scheduler_of(desired.gang_scheduler)
    job = desired.layout
    if gang is None:
        return GangDecision()
    if not crd_installed:
        message = (
            f"gang scheduler {QUOTE.encode(gang.name)} is configured but the PodGroup API {gang.api_version} "
            "is not "
            f"installed in the cluster: install {gang.name} (or run the operator with "
            "--gang-scheduler none); no pods are created until then"
        )
        return GangDecision(may_create_pods=False, waiting=(REASON_GANG, message, EVENT_CRD_MISSING))
    # Same message before and after the PodGroup exists: the wait is one state for the user,
    # and a message change would cost a status write (creation, then phase "" → Pending).
    admission = (REASON_GANG, f"waiting for {gang.title} to admit PodGroup {job.name}", None)
    if pod_group is None:
        group = desired.pod_group
        if gang.waits_for_admission:
            return GangDecision(create_pod_group=group, may_create_pods=False, waiting=admission)
        return GangDecision(create_pod_group=group)
    if gang.waits_for_admission:
        phase = (pod_group.get("status") or {}).get("phase") or ""
        if phase in ("", "Pending"):
            return GangDecision(may_create_pods=False, waiting=admission)
    return GangDecision()
