"""What a per-group shape's reconcile (`groupactive.py`) settles before its pods — pure like the
rest of the planner: the deadline (from creation or the last resume), what pods need first
(`ChildMaker.prerequisites`: MPI's SSH Secret and hostfile ConfigMap), the progress endpoint's CA
ConfigMap, and the gang (`gang.decide` for the scheduler the shape's policy asks for).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.jobs.shape import ChildMaker, JobShape
from kubetrain.operator import runpolicy
from kubetrain.operator.desired import DesiredChildren
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.gang import EVENT_CRD_MISSING
from kubetrain.operator.gang import decide as decide_gang
from kubetrain.operator.pods import owned_by_name
from kubetrain.operator.progressenv import config_map


class GroupSetup:
    """The children and decisions a per-group shape's pods wait on."""

    def __init__(self, r: ReconcileDraft, shape: JobShape, desired: DesiredChildren) -> None:
        if shape.children is None:
            raise ValueError(f"{shape.kind} {shape.name}: a per-group shape makes its own children")
        self.r, self.shape, self.desired = r, shape, desired
        self.children: ChildMaker = shape.children

    def deadline_passed(self) -> bool:
        """The shared deadline rule, counted from when the run began (the status projection's)."""
        r, shape = self.r, self.shape
        deadline = runpolicy.deadline(shape.run_policy, shape.status.run_began(r.status, r.job, r.now))
        if deadline is None:
            return False
        if r.now >= deadline:
            return True
        r.plan.requeue_at = deadline
        return False

    def prerequisites(self) -> None:
        """What pods need first (MPI: SSH Secret, hostfile ConfigMap): created before any pod while
        a ConfigMap is missing (the Secret create-only: 409 is done); a ConfigMap's data kept."""
        r = self.r
        wanted = self.children.prerequisites()
        if not wanted:
            return
        owned = self.owned_extra
        config_maps = [w for w in wanted if w["kind"] == "ConfigMap"]
        if any(cm["metadata"]["name"] not in owned for cm in config_maps):
            r.plan.create_children += wanted
            return
        for cm in config_maps:
            self.keep_data(owned[cm["metadata"]["name"]], cm)

    def progress_ca(self) -> None:
        """The progress endpoint's CA ConfigMap (`progressenv.config_map`: under Trainer's name
        for a TrainJob), created before the first pod, its data replaced when the CA changes."""
        r, progress = self.r, self.desired.progress
        if progress is None:
            return
        wanted = config_map(self.shape.layout, progress)
        current = self.owned_extra.get(wanted["metadata"]["name"])
        if current is None:
            r.plan.create_children.append(self.children.own(wanted))
        else:
            self.keep_data(current, wanted)

    @cached_property
    def owned_extra(self) -> dict[str, Mapping[str, Any]]:
        """The job's own extra children (ConfigMaps, Secrets) by name, looked up once."""
        return owned_by_name(self.r.observed.extra, self.r.job)

    def keep_data(self, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> None:
        """An observed ConfigMap's data replaced by the wanted data when they differ."""
        if current.get("data") != wanted.get("data"):
            self.r.plan.update_children.append({**current, "data": wanted["data"]})

    def gang(self) -> GangScheduler | bool | None:
        """The gang scheduler new pods are made for (None: no gang), or False: pods must wait (the
        PodGroup being created, or not yet admitted) — `gang.decide` for the scheduler the shape's
        policy asks for, told in events only (its status projection has no condition for it)."""
        r, wanted = self.r, self.shape.gang
        if wanted is None:
            return None
        if wanted.mismatch:
            if not r.pods:
                r.event("Warning", "PodGroupPolicyNotServed", wanted.mismatch)
            return None
        scheduler = wanted.scheduler
        if scheduler is None:
            return None
        observed = r.observed
        decision = decide_gang(
            DesiredChildren(self.shape, gang_scheduler=scheduler.name),
            observed.pod_group,
            observed.pod_group_crd_installed,
        )
        if not observed.pod_group_crd_installed and not r.pods:
            r.event(
                "Warning", EVENT_CRD_MISSING, f"the PodGroup API {scheduler.api_version} is not installed"
            )
        r.plan.create_pod_group = decision.create_pod_group
        return scheduler if decision.may_create_pods else False
