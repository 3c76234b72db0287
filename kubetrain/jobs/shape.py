"""The job shape: what the planner needs to know about a job, whatever kind of job it is.

A `JobShape` is a job's replica groups — each a pod template run `replicas` times under a
restart policy, possibly waiting for other groups (`depends_on`) — its run policy (suspend,
deadlines, TTL, clean-up, back-off, failure rules, the gang's scheduling policy), its success
and failure rules (`failure`: per pod, or per group with a whole-gang policy), the env plug-in
that gives each pod its cluster environment and the status projection that writes the
planner's decisions in the job's API (`kubetrain.jobs.projection`). The planner,
gang scheduling, restarts, TTL and status code read only this; none of them asks which kind of
job it has or where in the job's spec a field came from.

Producers turn one stored job into a shape (docs/architecture.md, "Adding a job shape"):
`kubetrain.jobs.v1shape` for the seven `<kind>ReplicaSpecs` kinds (and MPIJob v2beta1, which has
the same layout), `kubetrain.jobs.trainjob.shape` for Trainer's TrainJob (its replicated jobs,
from the runtime snapshot). A producer runs once per spec generation (a TrainJob: per snapshot),
on a defaulted, validated job; a shape never changes after it is built.

What differs between producers is data, not a kind check: a group's dependencies say whether a
Succeeded pod counts as Ready (`DependsOn.succeeded_is_ready`), and a shape may name its pods
its own way (`JobShape.naming`; the default is `<job>-<lower(group)>-<index>`).

Pure: no I/O, and nothing here depends on the wire form of any kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.api.labels import LABEL_ATTEMPT
from kubetrain.frameworks.base import Autoscaling, ExtraChild
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, ReplicaLayout
from kubetrain.jobs.failuremodel import FailureModel
from kubetrain.jobs.projection import StatusProjection

# The state every pod of a group must reach before the pods of a group that depends on it are
# created: `Ready` (Running with condition Ready True), `Complete` (Succeeded) or `Started`
# (phase Running, Succeeded or Failed: KubeDL's DAG condition `OnPhase: Running`).
READY = "Ready"
COMPLETE = "Complete"
STARTED = "Started"
DEPENDENCY_STATES = (READY, COMPLETE, STARTED)

# How a job finished, in the planner's words (a status projection writes them in the job's API).
SUCCEEDED = "Succeeded"
FAILED = "Failed"

# runPolicy.cleanPodPolicy values: which pods a finished job deletes.
CLEAN_POD_POLICIES = ("All", "Running", "None")


@dataclass(frozen=True, slots=True)
class DependsOn:
    """One group another group waits for, and the state all of its pods must be in."""

    group: str
    state: str = READY  # READY | COMPLETE | STARTED
    # READY met by a pod that already Succeeded too (JobSet's dependsOn Ready counts succeeded
    # jobs); otherwise READY needs every pod Running and Ready (MPI's WaitForWorkersReady).
    succeeded_is_ready: bool = False


@dataclass(frozen=True, slots=True)
class ReplicaGroup:
    """One group of identical pods: `replicas` pods from `template`, in slots 0..replicas-1."""

    name: str  # canonical name ("Worker"); pods are named `<job>-<lower(name)>-<index>`
    replicas: int
    template: Mapping[str, Any]  # the PodTemplateSpec dict (never mutated)
    restart_policy: str  # Always | OnFailure | Never | ExitCode
    container_index: int  # which container of the template is the framework container
    depends_on: tuple[DependsOn, ...] = ()
    # Where the group is written in the job, for messages: `spec.tfReplicaSpecs[Worker]`.
    path: str = ""
    # Pods per job of the group (a JobSet's replicated job: `replicas / job_size` batch Jobs of
    # `job_size` indexed pods each, slot `k` the pod `k % job_size` of job `k // job_size`);
    # the per-group status counts jobs (1: every pod is its own).
    job_size: int = 1

    @classmethod
    def of(cls, replica: ReplicaLayout, depends_on: tuple[DependsOn, ...], path: str) -> ReplicaGroup:
        """The group of a job layout's replica type (name, count, template, restart policy and
        framework container as laid out), ordered after `depends_on`, written at `path`."""
        return cls(
            name=replica.type,
            replicas=replica.replicas,
            template=replica.template,
            restart_policy=replica.restart_policy,
            container_index=replica.container_index,
            depends_on=depends_on,
            path=path,
        )

    @property
    def container_name(self) -> str:
        """The name of the framework container ("" when the template names none)."""
        containers = (self.template.get("spec") or {}).get("containers") or []
        if self.container_index >= len(containers):
            return ""
        container = containers[self.container_index]
        return str(container.get("name", "")) if isinstance(container, Mapping) else ""


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """What a gang scheduler is told about the job (Kubeflow's `runPolicy.schedulingPolicy`)."""

    min_available: int | None = None  # None: every pod of the job
    queue: str | None = None
    priority_class: str | None = None
    min_resources: Mapping[str, str] | None = None  # None: summed from the first minAvailable pods
    schedule_timeout_seconds: int | None = None
    # Volcano's PodGroup `networkTopology` (a TrainJob runtime's podGroupPolicy.volcano).
    network_topology: Mapping[str, Any] | None = None

    def by_field_name(self) -> dict[str, Any]:
        """The fields that are set, under `schedulingPolicy`'s field names — the vocabulary of
        the gang scheduler descriptors (`kubetrain.api.gangschedulers`), which map them onto
        PodGroup fields."""
        named = {
            "minAvailable": self.min_available,
            "queue": self.queue,
            "priorityClass": self.priority_class,
            "scheduleTimeoutSeconds": self.schedule_timeout_seconds,
        }
        return {k: v for k, v in named.items() if v is not None}


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """How the job runs and ends (docs/behaviour.md §6 to §8), typed and defaulted."""

    clean_pod_policy: str = "None"
    suspend: bool = False
    backoff_limit: int | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    managed_by: str | None = None
    # batch/v1-style pod failure rules, matched in order to a Failed pod (operator/restarts.py).
    failure_rules: tuple[Mapping[str, Any], ...] = ()
    # How long a Running job may go without reporting progress (operator/stall.py).
    progress_deadline_seconds: int | None = None
    # How long a scheduled pod may wait to start for a reason that does not pass (operator/podstart.py).
    start_deadline_seconds: int | None = None
    scheduling: SchedulingPolicy = field(default_factory=SchedulingPolicy)
    # JobSet's run policies (a TrainJob's runtime): groups started in order, each once every pod
    # of those before it has started (`startupPolicy: InOrder`); after a whole-job restart no
    # pod of the new attempt while one of an earlier attempt is left (`BlockingRecreate`).
    in_order_startup: bool = False
    blocking_recreate: bool = False
    # What a finished job's TTL and clean-up take: the job itself and its Service (Kubeflow's),
    # or only its pods — the job and its Service stay (a JobSet's TTL deletes the JobSet, whose
    # pods go with it; Trainer's TrainJob stays). A finished job's PodGroup goes either way.
    ttl_deletes_job: bool = True
    finished_keeps_children: bool = False


class PodNaming(Protocol):
    """How a shape names the pod of a slot, when not `<job>-<lower(group)>-<index>`."""

    def pod_name(self, group: str, index: int) -> str: ...


class ChildMaker(Protocol):
    """How a shape's own children are made, when not by the planner's shared builders
    (`operator/children.py`): its pods (named, labelled and annotated in its own controller's
    words — JobSet's and the Job controller's for a TrainJob), its headless Service and the
    objects its pods need first (an ML policy's). The planner decides which are made and when."""

    def pod(self, group: str, index: int, attempt: int, job_attempt: int = 0) -> dict[str, Any]:
        """The pod of slot (group, index) for whole-job attempt `attempt` and attempt
        `job_attempt` of its batch Job (the planner adds the env plug-in's part)."""
        ...

    def service(self) -> dict[str, Any] | None:
        """The headless Service (None: the job has none)."""
        ...

    def prerequisites(self) -> list[dict[str, Any]]:
        """Objects created before any pod (ConfigMaps among them are kept up to date)."""
        ...

    def own(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """`obj` in the job's namespace, labelled and owned by the job."""
        ...

    def unread_prerequisites(self) -> list[dict[str, Any]]:
        """Objects the operator creates and does not watch (no list or watch: a TrainJob's
        PersistentVolumeClaims), complete — namespace, labels, an ownerReference or none. The
        planner creates them, before the pods, in a reconcile that creates pods while the job
        has no pod (its first pods; again after every pod was deleted, e.g. a whole-gang
        restart or a resume), so a running job costs no API call for them. A create answered
        409 AlreadyExists counts as done (the existing object is used as is — a PVC only once a
        read shows it is neither being deleted nor another object's,
        `writes.READ_ON_CONFLICT`); one that fails stops that reconcile's pod creates (a Warning
        event, the job requeued with back-off), so no pod is created before them."""
        ...

    def decorate(self, pod: dict[str, Any], scheduler: GangScheduler, group: str) -> None:
        """A new pod made for the gang `scheduler` (its name, annotations, labels)."""
        ...


@dataclass(frozen=True, slots=True)
class GangChoice:
    """The gang scheduler a shape's own policy asks for (a TrainJob runtime's podGroupPolicy),
    as the operator serves it: `scheduler` None is no PodGroup — `mismatch` says why, when the
    policy asks for one the operator's --gang-scheduler is not."""

    scheduler: GangScheduler | None
    mismatch: str = ""


@dataclass(frozen=True, slots=True)
class RunRecording:
    """Where a job keeps the record of its run that its status has no place for: whole-job
    restarts (the current attempt), those counting towards a limit, failures per batch Job of a
    group, the indexes that succeeded, when the attempt began. `in_status` (the v1 kinds:
    `status.jobRestarts`, `completedIndexes`, `replicaStatuses`) or outside it (a TrainJob: its
    runtime snapshot ConfigMap, written by its edge from `Plan.record`). `attempt_label`: the
    pod label naming the attempt a pod belongs to; `job_attempt_label`: the one naming the
    attempt of its batch Job, restarted alone (`operator/jobrestarts.py`; "" for a shape
    without single-Job restarts)."""

    in_status: bool = True
    attempt_label: str = LABEL_ATTEMPT
    job_attempt_label: str = ""


class JobRules(Protocol):
    """A job's success and failure rules over the observed pod counts per group."""

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool: ...

    def failed(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> str | None: ...


class EnvPlugin(Protocol):
    """What the job's framework adds to the pods and children the engine builds (a
    `kubetrain.frameworks.base.Framework` is one)."""

    @property
    def master_types(self) -> tuple[str, ...]: ...
    @property
    def cluster_env_framework_container_only(self) -> bool: ...
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, Any]]: ...
    def customize_pod(self, job: JobLayout, replica_type: str, index: int, spec: dict[str, Any]) -> None: ...
    def extra_children(self, job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> list[ExtraChild]: ...
    def autoscaling(self, job: JobLayout) -> Autoscaling | None: ...


@dataclass(frozen=True)
class JobShape:
    """One job as the planner sees it. `groups` are in priority order (the order pods are
    created in and statuses listed in); `layout` is the env plug-in's view of the same groups
    (pod names, addresses and ports)."""

    kind: str
    api_version: str
    name: str
    namespace: str
    uid: str
    groups: Mapping[str, ReplicaGroup]
    run_policy: RunPolicy
    rules: JobRules
    plugin: EnvPlugin
    layout: JobLayout
    status: StatusProjection  # how its status shows the planner's decisions
    naming: PodNaming | None = None  # None: the layout's `<job>-<lower(group)>-<index>`
    # How failed pods end or restart the job (jobs/failuremodel.py); default: per pod.
    failure: FailureModel = field(default_factory=FailureModel)
    # The groups the gang (PodGroup) counts, when the shape decides them itself (a TrainJob:
    # `jobs/trainjob/gang.py`, `gang_steps`); None: `gang_slots` leaves out each group that
    # waits for another.
    gang_groups: frozenset[str] | None = None
    # Its own children (None: the shared builders make them from the templates and the plug-in).
    children: ChildMaker | None = None
    # Its own gang policy (None: the operator's --gang-scheduler for every job).
    gang: GangChoice | None = None
    recording: RunRecording = field(default_factory=RunRecording)
    # KubeDL's TensorBoard (`kubedl.io/tensorboard-config`, operator/tensorboard.py) is served
    # for the job: its status has a place for `tensorBoard` (Trainer's TrainJob has none).
    tensorboard: bool = True

    def pod_name(self, group: str, index: int) -> str:
        """The name of the pod of slot (group, index)."""
        return (
            self.naming.pod_name(group, index)
            if self.naming is not None
            else self.layout.pod_name(group, index)
        )

    @property
    def total_replicas(self) -> int:
        return sum(g.replicas for g in self.groups.values())

    def count(self, group: str) -> int:
        g = self.groups.get(group)
        return g.replicas if g is not None else 0

    def slots(self) -> list[tuple[str, int]]:
        """Every (group, index) in priority order."""
        return [(name, i) for name, g in self.groups.items() for i in range(g.replicas)]

    def gang_slots(self) -> list[tuple[str, int]]:
        """The slots a gang (PodGroup) counts, in priority order: every slot but those of a group
        that depends on a group with pods. Such a pod is created only once the others are Ready
        (or Complete), which they cannot be while a gang that counts it waits for it
        (mpi-operator issue #608: the WaitForWorkersReady Launcher) — or, when the shape names
        them (`gang_groups`), the slots of those groups."""
        if self.gang_groups is not None:
            return [(name, i) for name, i in self.slots() if name in self.gang_groups]
        left_out = {
            name for name, g in self.groups.items() if sum(self.count(d.group) for d in g.depends_on) > 0
        }
        return [(name, i) for name, i in self.slots() if name not in left_out]

    def succeeded(self, counts: Mapping[str, ReplicaCounts]) -> bool:
        return self.rules.succeeded(self.layout, counts)

    def failed(self, counts: Mapping[str, ReplicaCounts]) -> str | None:
        return self.rules.failed(self.layout, counts)


@dataclass(frozen=True)
class Produced:
    """What a producer returns for one job: its shape, or why it has none (`errors`, one
    "path: Kind: message" per problem), and its run policy either way — an invalid job's
    clean-up and TTL still apply."""

    shape: JobShape | None
    run_policy: RunPolicy
    errors: list[str] = field(default_factory=list)
