"""The planner's shared vocabulary: the Plan it returns, what it observed, its configuration, and
the `ReconcileDraft` — the state of one reconcile that the planner's parts (`plan.py` for the
frame, `active.py` for a job that is not finished) write into. Pure."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.gangschedulers import NONE
from kubetrain.api.servicemode import HEADLESS
from kubetrain.frameworks.jobreasons import read_status, reason_names, written_status
from kubetrain.jobs.jobsetplacement import PriorityClasses
from kubetrain.jobs.projection import StatusProjection
from kubetrain.jobs.shape import SUCCEEDED
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS
from kubetrain.operator import podstart, runpolicy
from kubetrain.operator.pods import controlled_by, pod_name, terminating
from kubetrain.operator.prepare import PreparedJob
from kubetrain.operator.progressenv import ProgressInjection
from kubetrain.operator.status import get_condition
from kubetrain.operator.statusprojection import KUBEFLOW

MAX_EVENT_MESSAGE = 1024


@dataclass(frozen=True, slots=True)
class EventSpec:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class CreateFailure:
    """Why the last wave of pod creates of a job stopped (what the API server answered)."""

    reason: str  # FailedCreatePod | PodNameConflict
    message: str


def _no_service(name: str) -> dict[str, Any] | None:
    return None


def _no_node(name: str) -> dict[str, Any] | None:
    return None


def _no_priority_classes() -> PriorityClasses | None:
    return None


@dataclass
class Observed:
    pods: list[dict[str, Any]]
    service: dict[str, Any] | None = None
    pod_group: dict[str, Any] | None = None
    pod_group_crd_installed: bool = True
    hpa: dict[str, Any] | None = None  # the HorizontalPodAutoscaler of the job's name
    # The job's observed extra children (`ExtraChild(observed=True)` kinds labelled with its name).
    extra: list[dict[str, Any]] = field(default_factory=list)
    # The controller's own records, not the cluster's: the last pod-create wave's failure (None
    # when it succeeded), and whether this operator process wrote the job's terminal condition.
    create_failure: CreateFailure | None = None
    terminal_recorded: bool = False
    # What the job's PodsNotStarting condition lists, as this process's last applied plan said
    # (`Plan.not_starting`); None when it has not judged the job yet (operator/podstart.py).
    not_starting: podstart.Listed | None = None
    # Per-pod service mode: the Services labelled with the job's name, and a cache lookup of
    # any Service in the job's namespace by name (one of a pod's name may belong to another).
    job_services: list[dict[str, Any]] = field(default_factory=list)
    service_named: Callable[[str], dict[str, Any] | None] = _no_service
    # The TensorBoard Ingresses of the namespace by name (the controller watches those labelled
    # kubetrain.io/tensorboard-of); None: not observed, the Ingress is written only on a change.
    tensorboard_ingress: Callable[[str], dict[str, Any] | None] | None = None
    # A Node by name from the controller's Node cache (its labels: JobSet's exclusive placement).
    node: Callable[[str], dict[str, Any] | None] = _no_node
    # The cluster's PriorityClasses from the controller's cache (a pod's priority label under
    # JobSet's exclusive placement); None when they are not read (not serving TrainJobs, or no RBAC).
    priority_classes: Callable[[], PriorityClasses | None] = _no_priority_classes


# Pods one reconcile creates at most, as kube's Job controller (MaxPodCreateDeletePerSync) and
# ReplicaSet controller (burstReplicas): the planner builds no pod beyond them, so its cost does
# not grow with the job's size; the next reconcile creates the next ones.
MAX_POD_CREATES_PER_RECONCILE = 500


@dataclass
class PlannerConfig:
    gang_scheduler: str = NONE  # a --gang-scheduler value (kubetrain.api.gangschedulers)
    scheduler_name: str | None = None
    max_replicas: int = DEFAULT_MAX_REPLICAS  # a job over this total is refused like an invalid spec
    max_pod_creates: int = MAX_POD_CREATES_PER_RECONCILE
    service_mode: str = HEADLESS  # the default of jobs without the annotation (api/servicemode)
    cluster_domain: ClusterDomain = UNSET  # --cluster-domain (api/clusterdomain)
    # The training-progress endpoint pods report to (None: nothing injected; progressenv.py).
    progress: ProgressInjection | None = None


@dataclass
class Plan:
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    # More pods are missing than this pass creates (one reconcile's limit): the job's next pass
    # continues this creation burst, and may start pipelined if this wave went through (writes.py).
    creates_continue: bool = False
    delete_pods: list[str] = field(default_factory=list)
    create_service: dict[str, Any] | None = None
    delete_service: bool = False
    create_pod_services: list[dict[str, Any]] = field(default_factory=list)  # per-pod mode
    delete_pod_services: list[str] = field(default_factory=list)
    create_pod_group: dict[str, Any] | None = None
    update_pod_group: dict[str, Any] | None = None  # the whole PodGroup, with the observed resourceVersion
    delete_pod_group: bool = False
    create_hpa: dict[str, Any] | None = None
    update_hpa: dict[str, Any] | None = None  # the whole HPA, with the observed resourceVersion
    delete_hpa: bool = False
    # Extra children (Framework.extra_children) to create, in order, before any pod; and whole
    # objects to PUT (their `data` replaced, with the observed resourceVersion).
    create_children: list[dict[str, Any]] = field(default_factory=list)
    update_children: list[dict[str, Any]] = field(default_factory=list)
    # The job's TensorBoard (operator/tensorboard.py): its Service/Ingress to create, Ingresses
    # to write anew (delete, then create), (kind, name) to delete. Its pod is in create_pods.
    tensorboard_creates: list[dict[str, Any]] = field(default_factory=list)
    tensorboard_replaces: list[dict[str, Any]] = field(default_factory=list)
    tensorboard_deletes: list[tuple[str, str]] = field(default_factory=list)
    status: dict[str, Any] | None = None  # the new status when it changed, else None
    # The job is finished by this status (as the shape's status projection reads it: Kubeflow's
    # Succeeded/Failed, Trainer's Complete/Failed), which the applier then knows it wrote;
    # `outcome` is SUCCEEDED or FAILED when this status newly reaches it (counted in the
    # metrics once written), and `recorded_restarts` the restarts it records beyond the old one's.
    finishes: bool = False
    outcome: str | None = None
    recorded_restarts: int = 0
    events: list[EventSpec] = field(default_factory=list)
    requeue_at: datetime | None = None
    delete_job: bool = False
    # Whole-job restarts this plan decides that the status does not record (a TrainJob's
    # JobSet restarts live in its snapshot): counted in kubetrain_jobs_restarted_total once the
    # plan's children are created and updated (the record written). Restarts the status
    # records are counted from the status.
    restarts: int = 0
    # The run's record to keep where the shape keeps it outside its status
    # (`JobShape.recording`: a TrainJob's snapshot ConfigMap), when this reconcile changed it.
    record: dict[str, Any] | None = None
    # What the PodsNotStarting condition lists once this plan is applied, for the controller to
    # hand back (`Observed.not_starting`); None when this reconcile did not judge it.
    not_starting: podstart.Listed | None = None

    @property
    def empty(self) -> bool:
        return self == Plan()


class Draft:
    """What one reconcile of a job has decided so far, and the facts it decides from: the job,
    the observed children (`pods`: those the job controls), the time and the configuration; the
    plan and the new status being built (`ReconcileDraft`: a job prepared into a shape; a
    TrainJob's edge uses a bare one for what it decides before it has a shape)."""

    def __init__(
        self,
        job: Mapping[str, Any],
        observed: Observed,
        now: datetime,
        config: PlannerConfig,
        *,
        skip_pod: str | None = None,
    ) -> None:
        self.job, self.observed, self.now, self.config = job, observed, now, config
        raw_status = job.get("status")
        self.old: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
        self.status: dict[str, Any] = copy.deepcopy(self.old)
        self.plan = Plan()
        self.pods = [p for p in observed.pods if controlled_by(p, job) and pod_name(p) != skip_pod]
        self.deleting: set[str] = set()

    def event(self, etype: str, reason: str, message: str) -> None:
        self.plan.events.append(EventSpec(etype, reason, message[:MAX_EVENT_MESSAGE]))

    def live_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.pods if not terminating(p) and pod_name(p) not in self.deleting]

    def delete(self, names: list[str]) -> None:
        for name in names:
            if name not in self.deleting:
                self.deleting.add(name)
                self.plan.delete_pods.append(name)

    def delete_active(self) -> None:
        """Delete every live pod that is still running or pending."""
        self.delete([pod_name(p) for p in self.live_pods() if runpolicy.is_active_pod(p)])


class ReconcileDraft(Draft):
    """A reconcile of a job prepared into a shape: also its prepared (defaulted, validated)
    form — its shape and run policy. `plan.py` and `active.py` work on it; neither reaches into
    the other. Its pods leave out the job's TensorBoard pod (operator/tensorboard.py)."""

    def __init__(
        self,
        job: Mapping[str, Any],
        prepared: PreparedJob,
        observed: Observed,
        now: datetime,
        config: PlannerConfig,
        *,
        projection: StatusProjection | None = None,
        record: Mapping[str, Any] | None = None,
    ) -> None:
        meta = job.get("metadata") or {}
        super().__init__(job, observed, now, config, skip_pod=f"{meta.get('name')}-tensorboard-0")
        # The planner reads and writes kubetrain's reasons; the job's API group may name them
        # otherwise (frameworks/jobreasons.py): the status as stored, as read, and how it is written.
        self.stored = self.old
        self.old = read_status(self.stored)
        if self.old is not self.stored:
            self.status = copy.deepcopy(self.old)
        self.names = reason_names(job)
        self.prepared = prepared
        self.run_policy = prepared.run_policy
        self.ref = f"{meta.get('namespace')}/{meta.get('name')}"
        shape = prepared.shape
        # How its status shows the planner's decisions (the shape's; given, or Kubeflow's
        # JobStatus, for a job without one).
        self.projection: StatusProjection = (
            shape.status if shape is not None else projection if projection is not None else KUBEFLOW
        )
        self.title = self.projection.job_title(
            str(job.get("kind")), str(meta.get("namespace")), str(meta.get("name"))
        )
        # The run's record kept outside the status (`JobShape.recording`), as read by the edge.
        self.record: dict[str, Any] = dict(record or {})

    def in_api(self, plan: Plan) -> Plan:
        """`plan` with its status's and events' reasons as the job's API group names them, and
        the Normal events its group tells a condition turning True with (`ReasonNames.announced`)."""
        plan.events = [EventSpec(e.type, self.names.written(e.reason), e.message) for e in plan.events]
        if plan.status is not None:
            plan.status = written_status(plan.status, self.old, self.stored, self.names)
            for ctype in self.names.announced:
                cond, before = get_condition(plan.status, ctype), get_condition(self.old, ctype)
                if (
                    cond is not None
                    and cond.get("status") == "True"
                    and (before or {}).get("status") != "True"
                ):
                    told = str(cond.get("message"))[:MAX_EVENT_MESSAGE]
                    plan.events.append(EventSpec("Normal", str(cond.get("reason")), told))
        return plan

    def worded(self, reason: str, message: str) -> str:
        """The message the job's API group writes for `reason` (frameworks/jobreasons.py), else `message`."""
        return self.names.messages.get(reason, message)

    def terminal(self, ctype: str, reason: str, message: str, *, delete_active: bool) -> None:
        """The job finished (`SUCCEEDED` / `FAILED`), written by its status projection."""
        self.projection.set_finished(self.status, ctype, reason, message, self.now, ref=self.ref)
        self.event("Normal" if ctype == SUCCEEDED else "Warning", reason, message)
        if delete_active:
            self.delete_active()

    def pods_not_starting(self, pods: list[dict[str, Any]], deadline: int | None) -> podstart.Verdict:
        """Containers of these (the current attempt's live) pods that cannot start (podstart.py):
        the PodsNotStarting condition, as the status projection writes it, and a Warning event
        per newly seen one; the verdict for the start deadline `deadline`."""
        old = get_condition(self.old, podstart.CONDITION)
        verdict = podstart.judge(pods, old, deadline, self.now, self.title, listed=self.observed.not_starting)
        self.plan.not_starting = verdict.listed
        if verdict.condition is not None or not verdict.waiting:
            started = (podstart.REASON_STARTED, podstart.STARTED_MESSAGE)
            self.projection.set_transient(
                self.status, podstart.CONDITION, verdict.condition, started, self.now
            )
        for waiting in verdict.events:
            self.event("Warning", podstart.EVENT, f"{self.title}: {waiting.told()}")
        return verdict

    def tell_create_failure(self) -> None:
        """While pods are to be created again after the last wave was refused (a quota, an
        admission denial, a name someone else's pod holds), a Warning event saying why — one per
        retry, which the event recorder aggregates into one Event's count, as the Job
        controller's `FailedCreate` events are. For a status without a condition that can carry
        it (a TrainJob's): the event is all a user sees, there being no Job to look at."""
        failure = self.observed.create_failure
        if failure is not None and self.plan.create_pods:
            self.event("Warning", failure.reason, f"{self.title}: {failure.message}")

    def restart_all(self, reason: str, message: str) -> None:
        """The whole job restarts as a new attempt: every live pod deleted (each made again once
        all are gone), one Warning event. A restart the status does not record (the shape keeps
        its run's record outside it, `JobShape.recording`) is counted in the plan."""
        self.delete([pod_name(p) for p in self.live_pods()])
        self.event("Warning", reason, message)
        shape = self.prepared.shape
        if shape is not None and not shape.recording.in_status:
            self.plan.restarts += 1
