"""Gang scheduling (docs/behaviour.md §8): when a PodGroup is needed and whether pods may be created.

- `none`: no PodGroup, pods are created at once.
- `volcano`: the PodGroup is created first; pods only once Volcano admitted it (its phase is
  neither empty nor Pending). Meanwhile the job says `Running=False, reason GangScheduling`.
- `scheduler-plugins`: the PodGroup and the pods are created in the same reconcile (the
  coscheduling plugin holds the pods at Permit until minMember can run).
- PodGroup API not installed: no PodGroup and no pods; the job says why (condition message and
  a Warning event) instead of the operator failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.frameworks.env import JobLayout
from kubetrain.operator.children import (
    GANG_SCHEDULER_PLUGINS,
    GANG_VOLCANO,
    SCHEDULER_PLUGINS_API_VERSION,
    VOLCANO_API_VERSION,
    build_pod_group,
)

EVENT_CRD_MISSING = "PodGroupAPIMissing"


@dataclass(frozen=True, slots=True)
class GangDecision:
    create_pod_group: dict[str, Any] | None = None
    may_create_pods: bool = True
    # Why pods are held back: (condition reason, message, Warning event reason or None).
    waiting: tuple[str, str, str | None] | None = None


def pod_group_api(gang_scheduler: str) -> str:
    return VOLCANO_API_VERSION if gang_scheduler == GANG_VOLCANO else SCHEDULER_PLUGINS_API_VERSION


def decide(
    job: JobLayout,
    gang_scheduler: str,
    pod_group: Mapping[str, Any] | None,
    crd_installed: bool,
) -> GangDecision:
    if gang_scheduler not in (GANG_VOLCANO, GANG_SCHEDULER_PLUGINS):
        return GangDecision()
    if not crd_installed:
        api = pod_group_api(gang_scheduler)
        message = (
            f"gang scheduler {gang_scheduler!r} is configured but the PodGroup API {api} is not "
            f"installed in the cluster: install {gang_scheduler} (or run the operator with "
            "--gang-scheduler none); no pods are created until then"
        )
        return GangDecision(may_create_pods=False, waiting=("GangScheduling", message, EVENT_CRD_MISSING))
    if pod_group is None:
        group = build_pod_group(job, gang_scheduler)
        if gang_scheduler == GANG_VOLCANO:
            return GangDecision(
                create_pod_group=group,
                may_create_pods=False,
                waiting=("GangScheduling", f"waiting for Volcano to admit PodGroup {job.name}", None),
            )
        return GangDecision(create_pod_group=group)
    if gang_scheduler == GANG_VOLCANO:
        phase = (pod_group.get("status") or {}).get("phase") or ""
        if phase in ("", "Pending"):
            # Same message as before the PodGroup existed: the wait is one state for the user,
            # and a message change would cost a status write (creation, then phase "" → Pending).
            return GangDecision(
                may_create_pods=False,
                waiting=("GangScheduling", f"waiting for Volcano to admit PodGroup {job.name}", None),
            )
    return GangDecision()
