"""The condition and event reasons a job's API writes for kubetrain's transitions (docs/behaviour.md
§5): the one table that names them. Pure.

The planner decides in kubetrain's words (`kubetrain.operator.status`: `JobRunning`,
`BackoffLimitExceeded`, …); `reason_names` says how the job's API group writes each one, and
`canonical` reads any group's reason back in kubetrain's words — so a status or an event written
under either naming (by an older kubetrain, by Kubeflow's operators before kubetrain took over)
reads the same:

- `kubetrain.io`: kubetrain's reasons, unchanged.
- `training.kubedl.io`: KubeDL's, which are kubetrain's (`JobCreated`, `JobRunning`,
  `JobRestarting`, `JobSucceeded`, `JobFailed`: KubeDL's pkg/util/status.go).
- `kubeflow.org`, the v1 kinds (training-operator v1.9): `<Kind><Reason>`
  (pkg/util/status.go `NewReason(kind, reason)` with `JobCreatedReason` = "Created", …), e.g.
  `PyTorchJobRunning`. A job over its backoff limit or its activeDeadlineSeconds is
  `<Kind>Failed` (pkg/controller.v1/common/job.go `ReconcileJobs`), so is one whose pod exited
  with a permanent code under `restartPolicy: ExitCode` (common/pod.go `ReconcilePods`).
- `kubeflow.org`, an MPIJob written as mpi-operator's (v2beta1): mpi-operator v0.8's `MPIJobCreated`,
  `MPIJobRunning`, `MPIJobSucceeded`, `MPIJobFailed`, `MPIJobSuspended`, `MPIJobResumed`
  (pkg/controller/mpi_job_controller_status.go). `BackoffLimitExceeded`, `DeadlineExceeded` and
  `PodFailurePolicy` are batch/v1 Job's reasons, which mpi-operator copies from its launcher Job
  (`updateMPIJobFailedStatus`): kept. mpi-operator has no Restarting condition nor event: a
  restart keeps `JobRestarting`.

Every other reason (`GangScheduling`, `InvalidSpec`, `PodFailurePolicy` of a v1 kind,
`RestartJob`, `ServiceConflict`, `FailedCreatePod`, `PodNameConflict`, …) names a transition
Kubeflow's operators do not have, and is kubetrain's in every group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kubetrain.api.groups import KUBEFLOW_GROUP, group_of
from kubetrain.frameworks.mpilabels import mpi_operator_convention
from kubetrain.frameworks.registry import FRAMEWORKS

# kubetrain's reasons that some group names otherwise (the planner's, kubetrain.operator.status).
CREATED = "JobCreated"
RUNNING = "JobRunning"
RESTARTING = "JobRestarting"
SUCCEEDED = "JobSucceeded"
FAILED = "JobFailed"
SUSPENDED = "JobSuspended"
RESUMED = "JobResumed"
PERMANENT_EXIT_CODE = "PermanentExitCode"
BACKOFF_LIMIT = "BackoffLimitExceeded"
DEADLINE = "DeadlineExceeded"

# training-operator's reason suffixes (pkg/util/status.go) for kubetrain's reasons.
_TRAINING_OPERATOR = {
    CREATED: "Created",
    RUNNING: "Running",
    RESTARTING: "Restarting",
    SUCCEEDED: "Succeeded",
    FAILED: "Failed",
    SUSPENDED: "Suspended",
    RESUMED: "Resumed",
    PERMANENT_EXIT_CODE: "Failed",
    BACKOFF_LIMIT: "Failed",
    DEADLINE: "Failed",
}
# mpi-operator's (pkg/controller/mpi_job_controller_status.go), behind "MPIJob".
_MPI_OPERATOR = {
    CREATED: "Created",
    RUNNING: "Running",
    SUCCEEDED: "Succeeded",
    FAILED: "Failed",
    SUSPENDED: "Suspended",
    RESUMED: "Resumed",
}
# The kinds whose `<Kind><Reason>` is read back: the v1 kinds (training-operator's; MXJob's up to v1.7).
KUBEFLOW_KINDS = tuple(FRAMEWORKS)
# Each suffix read back as kubetrain's reason (a `<Kind>Failed` as `JobFailed`: the cause is in
# its message; nothing reads more from a Failed condition's reason).
_READ = {
    "Created": CREATED,
    "Running": RUNNING,
    "Restarting": RESTARTING,
    "Succeeded": SUCCEEDED,
    "Failed": FAILED,
    "Suspended": SUSPENDED,
    "Resumed": RESUMED,
}
_CANONICAL = MappingProxyType(
    {kind + suffix: ours for kind in KUBEFLOW_KINDS for suffix, ours in _READ.items()}
)


@dataclass(frozen=True, slots=True)
class ReasonNames:
    """How one job's API writes kubetrain's reasons (those not in `table` unchanged), and the
    condition types it also tells in a Normal event (of the condition's reason and message)
    when they turn True: mpi-operator's `MPIJobCreated` and `MPIJobRunning` (`syncHandler`,
    `updateMPIJobStatus`); kubetrain's other events are the planner's."""

    table: Mapping[str, str] = field(default_factory=dict)
    announced: tuple[str, ...] = ()
    # The messages the group writes for some of kubetrain's reasons (else the planner's own).
    messages: Mapping[str, str] = field(default_factory=dict)

    def written(self, reason: str) -> str:
        return self.table.get(reason, reason)


KUBETRAIN = ReasonNames()


def reason_names(job: Mapping[str, Any]) -> ReasonNames:
    """The reasons of `job` (its apiVersion's group and its kind; an MPIJob of kubeflow.org written
    as mpi-operator's — `mpilabels.mpi_operator_convention` — has mpi-operator's)."""
    kind = job.get("kind")
    if group_of(job.get("apiVersion")) != KUBEFLOW_GROUP or kind not in FRAMEWORKS:
        return KUBETRAIN
    if mpi_operator_convention(job):
        table = MappingProxyType({ours: str(kind) + s for ours, s in _MPI_OPERATOR.items()})
        return ReasonNames(table, announced=("Created", "Running"))
    table = MappingProxyType({ours: str(kind) + s for ours, s in _TRAINING_OPERATOR.items()})
    return ReasonNames(table, messages=_training_operator_messages(job, str(kind)))


def _training_operator_messages(job: Mapping[str, Any], kind: str) -> Mapping[str, str]:
    """training-operator v1.9's Running and Succeeded messages (each kind's `UpdateJobStatus`):
    TFJob and JAXJob name the job `<namespace>/<name>` (`… successfully completed.`); PyTorchJob
    and PaddleJob do so without a Master, and with one say `<name> is successfully completed.`
    as XGBoostJob and MPIJob do. MXJob (gone since v1.8): the planner's own."""
    if kind not in ("TFJob", "JAXJob", "PyTorchJob", "PaddleJob", "XGBoostJob", "MPIJob"):
        return MappingProxyType({})
    meta = job.get("metadata") or {}
    name = str(meta.get("name"))
    replicas = (job.get("spec") or {}).get(FRAMEWORKS[kind].replica_field)
    master = isinstance(replicas, Mapping) and "Master" in replicas
    if kind in ("TFJob", "JAXJob") or (kind in ("PyTorchJob", "PaddleJob") and not master):
        ref = f"{kind} {meta.get('namespace')}/{name}"
        return MappingProxyType({RUNNING: f"{ref} is running.", SUCCEEDED: f"{ref} successfully completed."})
    ref = f"{kind} {name}"
    return MappingProxyType({RUNNING: f"{ref} is running.", SUCCEEDED: f"{ref} is successfully completed."})


def canonical(reason: str) -> str:
    """`reason` in kubetrain's words, whichever group's naming wrote it (`PyTorchJobRunning`,
    `MPIJobRunning` and `JobRunning` all read `JobRunning`)."""
    return _CANONICAL.get(reason, reason)


def read_status(status: dict[str, Any]) -> dict[str, Any]:
    """`status` with its conditions' reasons in kubetrain's words (`canonical`): `status` itself
    when they all are, else a copy (the stored status is never changed)."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return status
    read = [_read_condition(c) for c in conditions]
    if all(r is c for r, c in zip(read, conditions, strict=True)):
        return status
    return {**status, "conditions": read}


def _read_condition(cond: Any) -> Any:
    reason = cond.get("reason") if isinstance(cond, dict) else None
    if not isinstance(reason, str) or canonical(reason) == reason:
        return cond
    return {**cond, "reason": canonical(reason)}


def written_status(
    new: dict[str, Any], read: Mapping[str, Any], stored: Mapping[str, Any], names: ReasonNames
) -> dict[str, Any]:
    """`new` (kubetrain's words) as the job's API writes it: a condition the reconcile left as it
    was read keeps its stored form — a status written under another naming is not rewritten for
    that alone, and once a job is terminal its conditions never change — and one it set gets
    its reason from `names`."""
    conditions = new.get("conditions")
    if not isinstance(conditions, list):
        return new
    before = _by_type(read)
    kept = _by_type(stored)
    out = []
    for cond in conditions:
        if not isinstance(cond, dict):
            out.append(cond)
        elif cond == before.get(cond.get("type")) and cond.get("type") in kept:
            out.append(kept[cond.get("type")])
        else:
            out.append({**cond, "reason": names.written(str(cond.get("reason")))})
    return {**new, "conditions": out}


def _by_type(status: Mapping[str, Any]) -> dict[Any, dict[str, Any]]:
    conditions = status.get("conditions")
    items = conditions if isinstance(conditions, list) else []
    return {c.get("type"): c for c in items if isinstance(c, dict)}
