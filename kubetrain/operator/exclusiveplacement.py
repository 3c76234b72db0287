"""JobSet's exclusive placement in the planner (`jobs/jobsetplacement.py` holds the rules):
what needs the observed cluster — a follower's domain is its leader's node's label. Pure like
the rest of the planner; the node labels come from the controller's Node cache
(`Observed.node`).

- A follower (completion index ≠ 0) of a job placed by the affinity strategy is created only
  once its job's leader is scheduled, with `nodeSelector[<topology key>]` = the label value of
  the leader's node — as JobSet's pod webhook admits a follower only then (`ValidateCreate`,
  `setNodeSelector`). **Decision:** it is not created before (rather than created with a
  scheduling gate and given the nodeSelector later): no pod exists that a quota, the PodGroup
  or a scheduler could count while it cannot be placed, and the pods a user sees are the pods
  JobSet would have made.
- A leader on a node without the topology label holds its followers back: the condition
  `ExclusivePlacementBlocked` (reason `NodeMissingTopologyLabel`) names the node and the key,
  with a Warning event when it starts or changes; removed once every follower can be placed.
- The priority label (and the leader's anti-affinity to other jobs of that priority) is the one
  the API server's Priority admission gives the pod: from its PriorityClass, or without one the
  globalDefault class, from the controller's PriorityClass cache (`Observed.priority_classes`);
  without that cache (no RBAC) a pod naming a class gets no label, one without gets 0.
- A leader scheduled in another domain than its live followers select (it was deleted and
  made again elsewhere): all the job's live followers are deleted, to be made again in the
  leader's domain — JobSet's pod controller (`validatePodPlacements`, `deleteFollowerPods`),
  with a Warning event `ExclusivePlacementViolation`. A finished follower is kept (`repair`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.jobs import jobsetplacement as exclusive
from kubetrain.jobs.shape import JobShape
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.pods import pod_name, pod_phase, terminating

Obj = dict[str, Any]
Slot = tuple[str, int]

CONDITION = "ExclusivePlacementBlocked"
REASON_MISSING_LABEL = "NodeMissingTopologyLabel"
REASON_PLACEABLE = "Placeable"
REASON_VIOLATION = "ExclusivePlacementViolation"


class Placement:
    """One reconcile's exclusive placement over the current attempt's pods by slot."""

    def __init__(self, r: ReconcileDraft, shape: JobShape, slots: Mapping[Slot, Obj]) -> None:
        self.r, self.shape, self.slots = r, shape, slots
        self.missing: dict[str, str] = {}  # node → the topology key it lacks
        self._classes: exclusive.PriorityClasses | None = None
        self._classes_read = False

    def classes(self) -> exclusive.PriorityClasses | None:
        """The cluster's PriorityClasses, read once per reconcile (None: not read)."""
        if not self._classes_read:
            self._classes, self._classes_read = self.r.observed.priority_classes(), True
        return self._classes

    def leader_slot(self, group: str, index: int) -> Slot:
        per_job = max(self.shape.groups[group].job_size, 1)
        return group, index - index % per_job

    def leader(self, group: str, index: int) -> Mapping[str, Any] | None:
        """The job's live leader: not terminating, not finished (`leaderPodForFollower`)."""
        pod = self.slots.get(self.leader_slot(group, index))
        if pod is None or terminating(pod) or pod_name(pod) in self.r.deleting:
            return None
        return None if pod_phase(pod) in ("Succeeded", "Failed") else pod

    def domain(self, group: str, index: int, key: str) -> exclusive.Domain:
        leader = self.leader(group, index)
        node = str(((leader or {}).get("spec") or {}).get("nodeName") or "")
        found = self.r.observed.node(node) if node else None
        labels = None if found is None else (found.get("metadata") or {}).get("labels") or {}
        return exclusive.leader_domain(leader, key, labels)

    def place(self, group: str, index: int, pod: Obj) -> bool:
        """Whether the new pod of slot (group, index) may be created now, given its leader's
        domain when it is a follower (in place); its priority label from its PriorityClass."""
        key = exclusive.topology_key(pod)
        if key is not None:
            exclusive.resolve_priority(pod, self.classes())
        if key is None or exclusive.is_leader(pod):
            return True
        domain = self.domain(group, index, key)
        if domain.value is None:
            if domain.missing_label is not None:
                self.missing[domain.missing_label] = key
            return False
        exclusive.follow(pod, domain)
        return True

    def repair(self) -> None:
        """Followers of a job outside its leader's domain: every live follower of that job
        deleted. Only pods carrying the annotation count (pod_controller.go `IndexPodJob`): a
        job's pods made before its placement was applied are left as they run. A finished
        follower is left too: it holds no place in a domain, and its work is done — JobSet's pod
        controller deletes it as well, but the Job controller has counted its completion index
        and makes no pod for it again, where kubetrain would make (and run) it again."""
        by_job: dict[Slot, list[Mapping[str, Any]]] = {}
        for (group, index), pod in self.slots.items():
            if exclusive.is_leader(pod) or terminating(pod) or pod_name(pod) in self.r.deleting:
                continue
            if pod_phase(pod) in ("Succeeded", "Failed"):  # a Failed one: groupfailure's
                continue
            if exclusive.topology_key(pod) is None:
                continue
            by_job.setdefault(self.leader_slot(group, index), []).append(pod)
        for (group, index), followers in by_job.items():
            leader = self.leader(group, index)
            key = exclusive.topology_key(leader) if leader is not None else None
            if key is None:
                continue
            domain = self.domain(group, index, key)
            if domain.value is None or all(exclusive.follows(p, domain) for p in followers):
                continue
            self.r.delete([pod_name(p) for p in followers])
            self.r.event(
                "Warning",
                REASON_VIOLATION,
                f"{self.r.title}: the leader {pod_name(leader or {})} is in {domain.key}={domain.value}, "
                f"which not every follower of its job selects: its {len(followers)} follower(s) are "
                "deleted and made again there",
            )

    def tell(self) -> None:
        """The condition naming each leader's node without the topology label (removed once
        none is left), with a Warning event when what it says changes."""
        r = self.r
        old = next((x for x in r.old.get("conditions") or [] if x.get("type") == CONDITION), None)
        if not self.missing:
            cleared = (REASON_PLACEABLE, f"{r.title}: every follower pod can be placed")
            r.projection.set_transient(r.status, CONDITION, None, cleared, r.now)
            return
        shown = "; ".join(f"node {node} has no label {key}" for node, key in sorted(self.missing.items()))
        message = (
            f"{r.title}: follower pods wait for their leader's topology domain (JobSet's exclusive "
            f"placement), but {shown}: label the node, or delete the leader pod to place it again"
        )
        r.projection.set_transient(r.status, CONDITION, (REASON_MISSING_LABEL, message), ("", ""), r.now)
        if old is None or old.get("status") != "True" or old.get("message") != message:
            r.event("Warning", REASON_MISSING_LABEL, message)
