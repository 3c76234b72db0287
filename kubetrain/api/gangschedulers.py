"""The gang schedulers kubetrain can work with, one descriptor each (docs/behaviour.md §8).

A `GangScheduler` says everything that differs between them: the PodGroup API it reads
(`group`/`version`, always the `podgroups` resource of kind PodGroup), the `schedulerName` pods
get, how a pod is tied to its PodGroup (annotations or labels), which `schedulingPolicy` fields
become which PodGroup spec fields, whether pods wait until the scheduler admitted the PodGroup,
and whether the webhooks default `schedulingPolicy.minAvailable`. Adding a gang scheduler is one
entry in `GANG_SCHEDULERS` (plus its PodGroup CRD in `kubetrain/devcluster/gang_crds.py` for the
simulator and its RBAC lines in the chart).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

NONE = "none"  # the --gang-scheduler value for no gang scheduling

PodDecoration = Callable[[str, str], dict[str, str]]  # (job name, lower-case replica type) -> entries


def _no_decoration(_job: str, _replica_type: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class GangScheduler:
    name: str  # the --gang-scheduler value: "volcano"
    title: str  # how messages name it: "Volcano"
    group: str  # the PodGroup API group: "scheduling.volcano.sh"
    version: str  # "v1beta1"
    scheduler_name: str  # the schedulerName pods get unless configured otherwise
    # Pods wait until the scheduler admitted the PodGroup (its status.phase is neither empty
    # nor Pending); otherwise PodGroup and pods are created in one reconcile.
    waits_for_admission: bool
    pod_annotations: PodDecoration = _no_decoration
    pod_labels: PodDecoration = _no_decoration
    # schedulingPolicy field -> PodGroup spec field, copied when set (not null, not "").
    policy_fields: tuple[tuple[str, str], ...] = ()
    # The webhooks default schedulingPolicy.minAvailable (total replicas) under this scheduler.
    defaults_min_available: bool = True
    # The job annotation naming the PodGroup's queue when `schedulingPolicy.queue` is unset or ""
    # (Volcano's `scheduling.volcano.sh/queue-name`, as mpi-operator's VolcanoCtrl.newPodGroup
    # and Trainer's volcano plugin read it); None: the scheduler has no queue.
    queue_annotation: str | None = None
    plural: str = field(default="podgroups", init=False)
    kind: str = field(default="PodGroup", init=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def pod_group_spec(
        self,
        min_member: int,
        min_resources: Mapping[str, str],
        policy: Mapping[str, Any],
        annotations: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The PodGroup spec; `annotations`: the job's, read for `queue_annotation`."""
        if self.queue_annotation and not policy.get("queue"):
            named = (annotations or {}).get(self.queue_annotation)
            if isinstance(named, str) and named:
                policy = {**policy, "queue": named}
        spec: dict[str, Any] = {"minMember": min_member}
        if min_resources:
            spec["minResources"] = dict(min_resources)
        for source, target in self.policy_fields:
            value = policy.get(source)
            if value is not None and value != "":
                spec[target] = value
        return spec


VOLCANO = GangScheduler(
    name="volcano",
    title="Volcano",
    group="scheduling.volcano.sh",
    version="v1beta1",
    scheduler_name="volcano",
    waits_for_admission=True,
    pod_annotations=lambda job, rtype: {"scheduling.k8s.io/group-name": job, "volcano.sh/task-spec": rtype},
    policy_fields=(("queue", "queue"), ("priorityClass", "priorityClassName")),
    queue_annotation="scheduling.volcano.sh/queue-name",  # volcanov1beta1.QueueNameAnnotationKey
)
SCHEDULER_PLUGINS = GangScheduler(
    name="scheduler-plugins",
    title="scheduler-plugins",
    group="scheduling.x-k8s.io",
    version="v1alpha1",
    scheduler_name="scheduler-plugins-scheduler",
    waits_for_admission=False,
    pod_labels=lambda job, _rtype: {"scheduling.x-k8s.io/pod-group": job},
    policy_fields=(("scheduleTimeoutSeconds", "scheduleTimeoutSeconds"),),
)

GANG_SCHEDULERS: dict[str, GangScheduler] = {g.name: g for g in (VOLCANO, SCHEDULER_PLUGINS)}
# Every value --gang-scheduler accepts.
CHOICES: tuple[str, ...] = (NONE, *GANG_SCHEDULERS)


def gang_scheduler(name: str | None) -> GangScheduler | None:
    """The descriptor of a --gang-scheduler value; None for `none` (the flags accept only
    `CHOICES`, so any other name is treated as no gang scheduling too)."""
    return GANG_SCHEDULERS.get(name) if name else None


def defaults_min_available(name: str | None) -> bool:
    """Whether the webhooks default schedulingPolicy.minAvailable under this gang scheduler."""
    scheduler = gang_scheduler(name)
    return scheduler is not None and scheduler.defaults_min_available
