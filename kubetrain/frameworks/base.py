"""The Framework base class: everything kubetrain needs to know that differs between frameworks.

Adding a framework = one model module (`kubetrain/api/<kind>.py`), one module here subclassing
`Framework`, and one line in `registry.py` (docs/architecture.md, "Adding a framework").

The identity attributes, `validate_spec`, `cluster_env` and `succeeded` are what every framework
defines. The rest are optional hooks with no-op defaults, in the manner of Kueue's jobframework
optional interfaces: shared code calls them on every framework and never asks which kind a job
is. A framework overrides only what it needs:

- `default_spec`            defaulting beyond replicas, restart policy and ports (§2)
- `scalable_replica_type`, `replica_bounds`, `scale_hint`
                            the replica type `kubectl scale` / an HPA resize (the CRD's scale
                            subresource) and the bounds it may be resized within
- `validate_update`         update rules beyond the shared ones (§3)
- `adjust`                  what the controller changes to run a stored job (clamps the
                            scalable type into its bounds by default)
- `autoscaling`             the HorizontalPodAutoscaler the job asks for
- `failed`                  a failure rule beyond restart policies (§6)
- `default_replicas`, `default_restart_policies`
                            per-replica-type defaults differing from 1 and `default_restart_policy`
- `customize_pod`           what the framework adds to a pod beyond its cluster env (volumes,
                            mounts, a default command, the hostname)
- `extra_children`          objects besides the Service/PodGroup/HPA/pods the job needs
                            (ConfigMaps, Secrets), each `ExtraChild` observed or create-only
- `spec_gates`              replica types whose pods are created only once the pods of other
                            types are all Ready
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError
from kubetrain.frameworks.env import JobLayout, ReplicaCounts

# (minimum, maximum) of the scalable replica type; either is None when not set to an integer.
ReplicaBounds = tuple[int | None, int | None]
# Replica type → the replica types whose pods must all be Ready first (`Framework.spec_gates`).
Gates = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class Autoscaling:
    """What the job's HorizontalPodAutoscaler scales on (`autoscaling/v2` spec fields)."""

    min_replicas: int | None
    max_replicas: int | None
    metrics: list[Any]


@dataclass(frozen=True)
class Adjustment:
    """A replica count the controller runs instead of the stored one (`Framework.adjust`)."""

    replica_type: str
    replicas: int
    message: str  # what was changed and why, for the job's events


@dataclass(frozen=True)
class ExtraChild:
    """An object besides the Service, PodGroup, HPA and pods a job owns: apiVersion, kind,
    `metadata.name` and its content; the engine adds the namespace, the job's labels and the
    controller ownerReference.

    `observed=True`: the controller watches this kind (only objects labelled with the job name)
    and the planner creates it when missing and replaces its `data` when it differs.
    `observed=False`: the operator never reads it (no get/list/watch, e.g. a Secret): the planner
    creates it, before every observed extra child, while any observed extra child is missing; a
    create answered 409 AlreadyExists counts as done. A Secret of type `kubernetes.io/ssh-auth`
    without `data` gets a fresh key pair when it is created (never earlier, so `kubetrain render`
    and the pure planner hold no key).

    A shape that makes its own children (a TrainJob) names its create-only objects — complete,
    with their own labels and an ownerReference or none (a PVC of retention policy Retain) — in
    `ChildMaker.unread_prerequisites` (kubetrain/jobs/shape.py): planned with the job's first
    pods, before them."""

    obj: dict[str, Any]
    observed: bool


class Framework:
    # --- identity and CRD naming -------------------------------------------------------------
    kind: str  # "TFJob"
    plural: str  # "tfjobs"
    singular: str  # "tfjob"
    short_names: tuple[str, ...]  # ("tfj",)
    job_model: type[JobBase]
    # --- replicas ------------------------------------------------------------------------------
    replica_field: str  # wire name of the replica map: "tfReplicaSpecs"
    replica_types: tuple[str, ...]  # canonical spellings, in priority order
    # Replica types whose pod 0 carries `kubetrain.io/job-role: master` (Chief/Master/Scheduler).
    master_types: tuple[str, ...]

    @property
    def display_name(self) -> str:
        """How docs and the CRD description name the framework ("tensorflow", "MPI")."""
        return self.container_name

    # --- the framework container -----------------------------------------------------------------
    container_name: str  # "tensorflow"; "" = container 0, whatever its name (no warning)
    port_name: str  # "tfjob-port"; "" = no port is added to the framework container
    default_port: int  # 2222
    default_restart_policy: str  # "Never"
    # Environment variable names the operator sets (a user setting one gets a warning).
    operator_env_names: frozenset[str]
    # True: the cluster env goes only into the framework container (TF_CONFIG: a TensorFlow
    # sidecar must not start a server for a task that is not its own); False: every container.
    cluster_env_framework_container_only: bool = False
    # True: every replica type must have a container named `container_name` (Kubeflow's webhook
    # refuses XGBoostJobs and JAXJobs without one); False: container 0 stands in, with a warning.
    framework_container_required: bool = False
    # KubeDL (training.kubedl.io/v1alpha1) has this kind, in its spec layout
    # (kubetrain.jobs.kubedllayout), and names the framework container this when it differs.
    kubedl_kind: bool = False
    kubedl_container_name: str = ""
    # KubeDL spec fields of the kind's older layouts, with their JSON type in KubeDL's CRD: kept by
    # the CRD and refused by the webhook saying `kubedl_refused_why` (kubetrain.jobs.kubedllayout).
    kubedl_refused_fields: tuple[tuple[str, str], ...] = ()
    kubedl_refused_why: str = ""
    # A KubeDL spec field read as one of kubetrain's: (KubeDL's name, kubetrain's, KubeDL's values
    # mapped to kubetrain's).
    kubedl_renamed_field: tuple[str, str, tuple[tuple[str, str], ...]] | None = None
    # KubeDL annotations of the kind that kubetrain does not act on, each with what happens
    # instead: a warning when one is "true" (kubetrain.jobs.kubedl).
    kubedl_unread_annotations: tuple[tuple[str, str], ...] = ()
    # KubeDL's DAG scheduling of the kind (its `setDefault<Kind>DAGCondition(s)`): (downstream,
    # upstream) replica types, the downstream's pods created once every upstream pod has started
    # (kubetrain.jobs.kubedldag).
    kubedl_dag: tuple[tuple[str, str], ...] = ()
    # Kubeflow's operator for this kind records training-operator's per-pod Events on the job
    # (`SuccessfulCreatePod`, …, kubetrain.operator.podevents); KubeDL's records them for every kind.
    kubeflow_pod_events: bool = True
    # The address of a pod in `per-pod` service mode (kubetrain.api.servicemode), as Kubeflow's
    # operator writes it for this framework: "{pod}" (the bare Service name) or a longer form.
    per_pod_host_format: str = "{pod}"

    # --- required rules ------------------------------------------------------------------------
    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """Framework-specific rules of docs/behaviour.md §3 on a parsed (defaulted) job."""
        raise NotImplementedError

    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, Any]]:
        """The cluster variables for pod `index` of `replica_type` as Kubernetes EnvVars
        (`{"name", "value"}`, or `{"name", "valueFrom"}` for a value the kubelet fills in, e.g. the
        pod's IP), in a stable order (a `$(VAR)` reference after the variable it names); empty (or
        only process-local settings) for a standalone job."""
        raise NotImplementedError

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        """The framework's success rule over the observed per-type pod counts."""
        raise NotImplementedError

    # --- optional hooks: defaulting and validation -----------------------------------------------
    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        """Framework defaults on the wire spec (after replica defaults, before runPolicy); returns
        warnings. `counts`: pods per replica type, defaulted (None where not an integer). `spec`
        and its replica map are the caller's copies; copy any other nested dict before changing
        it (defaulting is copy-on-write)."""
        return []

    def validate_update(self, spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
        """Update rules of the framework's own fields (the shared ones are checked for every kind)."""
        return []

    # --- optional hooks: scaling ---------------------------------------------------------------------
    # The replica type the scale subresource resizes (None: the CRD has no scale subresource).
    scalable_replica_type: str | None = None
    # Appended to the "replicas can only change while suspended" error of a scalable job.
    scale_hint: str = ""

    def replica_bounds(self, spec: Mapping[str, Any]) -> ReplicaBounds | None:
        """The bounds the scalable replica type may be resized within, when this job is scalable
        (None: its replicas are fixed like every other type's)."""
        return None

    def most_replicas(self, spec: Mapping[str, Any], replica_type: str, replicas: int) -> int:
        """The most pods `replica_type` can have: a scalable type up to its maximum."""
        bounds = self.replica_bounds(spec) if replica_type == self.scalable_replica_type else None
        high = bounds[1] if bounds is not None else None
        return max(replicas, high) if high is not None else replicas

    def fewest_replicas(self, spec: Mapping[str, Any], replica_type: str, replicas: int) -> int:
        """The fewest pods `replica_type` runs with: a scalable type down to its minimum (≥ 1)."""
        bounds = self.replica_bounds(spec) if replica_type == self.scalable_replica_type else None
        low = bounds[0] if bounds is not None else None
        return min(low, replicas) if low is not None and low >= 1 else replicas

    def adjust(self, spec: Mapping[str, Any], counts: Mapping[Any, int | None]) -> list[Adjustment]:
        """What the controller changes to run a stored (defaulted) job (`counts`: pods per
        replica type as read, None where not an integer).

        By default: a scalable replica type outside its bounds runs at the nearest bound. The
        scale subresource (`kubectl scale`, an HPA) changes `replicas` without the validating
        webhook seeing the job, so an out-of-range count must not fail a running job."""
        rtype = self.scalable_replica_type
        if rtype is None or rtype not in counts:
            return []
        bounds = self.replica_bounds(spec)
        n = counts[rtype]
        if bounds is None:
            return []
        lo, hi = bounds
        if lo is None or hi is None or n is None or not 1 <= lo <= hi:
            return []  # validation reports the bounds themselves
        if lo <= n <= hi:
            return []
        clamped = min(max(n, lo), hi)
        return [
            Adjustment(
                rtype,
                clamped,
                f"spec.{self.replica_field}[{rtype}].replicas {n} is outside {self.bounds_name} "
                f"({lo}..{hi}): running {clamped} {rtype}s",
            )
        ]

    # How messages name the bounds of `replica_bounds`: "elasticPolicy minReplicas..maxReplicas".
    bounds_name: str = "the replica bounds"

    def autoscaling(self, job: JobLayout) -> Autoscaling | None:
        """The HorizontalPodAutoscaler the job asks for (scaling the job's scale subresource)."""
        return None

    # --- optional hooks: the engine ------------------------------------------------------------------
    def failed(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> str | None:
        """Why the job failed by a framework rule beyond restart policies (None: it did not)."""
        return None

    # Per replica type: the `replicas` default (else 1) and the `restartPolicy` default (else
    # `default_restart_policy`).
    default_replicas: Mapping[str, int] = {}
    default_restart_policies: Mapping[str, str] = {}

    def replicas_default(self, replica_type: str) -> int:
        return self.default_replicas.get(replica_type, 1)

    def restart_policy_default(self, replica_type: str) -> str:
        return self.default_restart_policies.get(replica_type, self.default_restart_policy)

    def customize_pod(self, job: JobLayout, replica_type: str, index: int, spec: dict[str, Any]) -> None:
        """Change pod `index` of `replica_type`'s spec (the caller's copy, after the cluster env,
        hostname, subdomain and restart policy are set) beyond the cluster env."""
        return None

    def extra_children(self, job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> list[ExtraChild]:
        """The job's extra children given its observed pods (slim: metadata and status), in
        creation order (see `ExtraChild`)."""
        return []

    # Serving kubeflow.org: the version the kind is stored, admitted and reconciled at, and the
    # further versions served through the CRD conversion webhook (`/convert`) — MPIJob: v2beta1
    # (mpi-operator's), and training-operator's v1. kubetrain.io serves every kind at v1 only.
    kubeflow_version: str = "v1"
    kubeflow_converted_versions: tuple[str, ...] = ()
    # runPolicy.managedBy values, beyond api/groups.RECONCILED_MANAGERS, that name this kind's own
    # Kubeflow operator, which kubetrain is when it serves kubeflow.org (MPIJob: mpi-operator's).
    kubeflow_managers: tuple[str, ...] = ()
    # training-operator's `GetFrameworkName()` of the kind: the `framework` label of its
    # training_operator_jobs_* metrics (kubetrain.operator.upstreammetrics).
    kubeflow_framework_name: str = ""
    # KubeDL's `controllerName` of the kind (its controllers/<framework>/): the `controller` label
    # of controller-runtime's series for the training.kubedl.io kind (operator.controllernames).
    kubedl_controller_name: str = ""

    def converted_model(self, version: str) -> type[JobBase] | None:
        """The model of a version served through conversion (its CRD schema)."""
        return None

    def conversion_warning(self, version: str) -> str | None:
        """The admission warning for a job its client wrote at a converted version."""
        return None

    def kubeflow_pod_labels(self, job: JobLayout, replica_type: str, index: int) -> dict[str, str] | None:
        """The `training.kubeflow.org/*` labels of a kubeflow.org job's pod when this kind's
        Kubeflow operators label its pods otherwise than training-operator's generic rule (MPIJob:
        mpi-operator's or training-operator v1's MPIJob controller's, by the version the job was
        created at); None: the generic rule (`kubetrain.operator.children`)."""
        return None

    def spec_gates(self, spec: Mapping[str, Any]) -> Gates:
        """Replica type → the replica types whose pods must all exist and be Ready (condition
        Ready True) before a missing pod of it is created, read from the defaulted spec — once,
        by defaulting (`kubetrain.jobs.defaulting.Defaulted.gates`), whose value the gang size
        and the lay-out (`depends_on`) take."""
        return {}

    def gang_excluded_types(self, gates: Gates, counts: Mapping[Any, int]) -> frozenset[str]:
        """The replica types a PodGroup leaves out (docs/behaviour.md §8): those behind a gate
        (`gates`: the job's `spec_gates`) whose gating types have pods (`counts`: replicas per
        type). Such a pod is created only once the others are Ready, which they cannot be while
        a gang that counts it waits for it (mpi-operator issue #608: the WaitForWorkersReady
        launcher), so the `minAvailable` default, the PodGroup's `minMember` cap and its
        `minResources` count only the other types."""
        return frozenset(
            gated for gated, gating in gates.items() if sum(counts.get(t, 0) for t in gating) > 0
        )

    def gang_size(
        self, spec: Mapping[str, Any], counts: Mapping[Any, int | None], gates: Gates
    ) -> int | None:
        """The `minAvailable` default: every pod (`counts`: pods per replica type), a scalable
        replica type (elastic Workers) counted at its minimum — the smallest size the job runs
        at, so it can be scaled within its bounds without leaving a gang larger than the job —
        and the types behind a gate (`gates`: the spec's `spec_gates`) left out
        (`gang_excluded_types`); None when a replica count is not an integer."""
        if None in counts.values():
            return None
        known = {t: n for t, n in counts.items() if n is not None}
        excluded = self.gang_excluded_types(gates, known)
        bounds = self.replica_bounds(spec) if self.scalable_replica_type is not None else None
        low = bounds[0] if bounds is not None else None
        return sum(
            min(low, n) if t == self.scalable_replica_type and low is not None and low >= 1 else n
            for t, n in known.items()
            if t not in excluded
        )
