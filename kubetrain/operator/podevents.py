"""training-operator's per-pod Events on a job: which jobs get them, their reasons and messages.

Kubeflow's training-operator (release-1.9) and KubeDL share one job library that records, on the
job, a Normal Event for each child write that went through and for each pod that exited:

| reason | message | upstream |
|---|---|---|
| SuccessfulCreatePod | `Created pod: <pod>` | control/pod_control.go `RealPodControl.createPods` |
| SuccessfulDeletePod | `Deleted pod: <pod>` | control/pod_control.go `RealPodControl.DeletePod` |
| SuccessfulCreateService | `Created service: <service>` | control/service_control.go `createServices` |
| SuccessfulDeleteService | `Deleted service: <service>` | control/service_control.go `DeleteService` |
| ExitedWithCode | `Pod: <namespace>.<pod> exited with code <code>` | common/pod.go `ReconcilePods` |

(KubeDL: pkg/job_controller/pod_control.go, service_control.go, pod.go — the same text.)
ExitedWithCode is recorded whatever the restart policy, when the job's framework container
(`GetDefaultContainerName`: `pytorch`, `tensorflow`, …) has terminated, while the job is not
finished. training-operator records it on every sync that sees the pod so (the Event's count
grows); kubetrain records it once, when the pod's watch event shows that container newly
terminated, and not for a pod being deleted (its container stopped by the deletion — above all
in a namespace being deleted, which takes no Events).

Decision: only the groups whose operators recorded them get them — kubeflow.org and
training.kubedl.io, for the tools and habits that read them. kubetrain.io jobs do not: their
write budget is N pods + 1 Service + 4 status writes over a whole life (docs/performance.md), and
these Events would more than double a small job's writes and share the client's rate limit with
the pod creates. MPIJobs of kubeflow.org written as mpi-operator's
(`mpilabels.mpi_operator_convention`) do not: they follow mpi-operator v2, which records none
(KubeDL's MPIJob does, its framework container named `mpi`). A kubeflow.org MPIJob written at
kubeflow.org/v1 gets what training-operator v1.9's own MPIJob controller
(controller.v1/mpi/mpijob_controller.go, which makes its pods without the common library)
records, and only that: `SuccessfulCreatePod` `Created worker pod: <pod>` (`getOrCreateWorker`)
and `MPIJobRunning` `launcher pod created success: <pod>` (`ReconcilePods`). TrainJobs get none
(Kubeflow Trainer records none on a TrainJob). All of them are budgeted
(`kubetrain.kube.eventbudget`): at most 25 writes per job, then one per 5 minutes, as client-go's
recorder would send them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.groups import KUBEDL_GROUP, KUBEFLOW_GROUP, group_of
from kubetrain.frameworks.env import pod_name
from kubetrain.frameworks.mpilabels import LAUNCHER, WORKER, training_operator_mpijob
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.operator.status import terminal_condition

SUCCESSFUL_CREATE_POD = "SuccessfulCreatePod"
SUCCESSFUL_DELETE_POD = "SuccessfulDeletePod"
SUCCESSFUL_CREATE_SERVICE = "SuccessfulCreateService"
SUCCESSFUL_DELETE_SERVICE = "SuccessfulDeleteService"
EXITED_WITH_CODE = "ExitedWithCode"
KUBEDL_MPI_CONTAINER = "mpi"  # KubeDL's MPIJobDefaultContainerName
MPIJOB_LAUNCHER_CREATED = "MPIJobRunning"  # NewReason(MPIJobKind, JobRunningReason)

# (verb, kind) of a child write -> (reason, message format)
SUCCEEDED_WRITES = {
    ("Create", "Pod"): (SUCCESSFUL_CREATE_POD, "Created pod: {}"),
    ("Delete", "Pod"): (SUCCESSFUL_DELETE_POD, "Deleted pod: {}"),
    ("Create", "Service"): (SUCCESSFUL_CREATE_SERVICE, "Created service: {}"),
    ("Delete", "Service"): (SUCCESSFUL_DELETE_SERVICE, "Deleted service: {}"),
}


def records_pod_events(job: Mapping[str, Any]) -> bool:
    """Whether `job` gets the per-pod Events (see the module docstring)."""
    fw, group = FRAMEWORKS.get(str(job.get("kind"))), group_of(job.get("apiVersion"))
    if group not in (KUBEFLOW_GROUP, KUBEDL_GROUP) or fw is None:
        return False
    return fw.kubeflow_pod_events or group == KUBEDL_GROUP or training_operator_mpijob(job)


def _mpijob_pod_created(job: Mapping[str, Any], name: str) -> tuple[str, str] | None:
    """training-operator v1.9's MPIJob controller's event for a pod it made: a Worker's
    (`getOrCreateWorker`) or the Launcher's (`ReconcilePods`); none for any other."""
    job_name = str((job.get("metadata") or {}).get("name", ""))
    if name == pod_name(job_name, LAUNCHER, 0):
        return MPIJOB_LAUNCHER_CREATED, f"launcher pod created success: {name}"
    prefix = pod_name(job_name, WORKER, 0)[:-1]
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        return SUCCESSFUL_CREATE_POD, f"Created worker pod: {name}"
    return None


def succeeded_write(job: Mapping[str, Any], verb: str, kind: str, name: str) -> tuple[str, str] | None:
    """The (reason, message) of the Event for a write of `job`'s child that went through."""
    if training_operator_mpijob(job):  # only its pod creates
        return _mpijob_pod_created(job, name) if (verb, kind) == ("Create", "Pod") else None
    event = SUCCEEDED_WRITES.get((verb, kind))
    if event is None or not records_pod_events(job):
        return None
    reason, message = event
    return reason, message.format(name)


def framework_container(job: Mapping[str, Any]) -> str:
    """The name of the container whose exit training-operator (KubeDL) reports for `job`."""
    fw = FRAMEWORKS[str(job.get("kind"))]
    if group_of(job.get("apiVersion")) == KUBEDL_GROUP:
        return fw.kubedl_container_name or fw.container_name or KUBEDL_MPI_CONTAINER
    return fw.container_name


def exited_with_code(
    job: Mapping[str, Any], old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> str | None:
    """The ExitedWithCode message when pod `new` of `job` shows its framework container newly
    terminated (not so in `old`, or another run of it); None otherwise, or when `job` gets no
    per-pod Events or has finished, or the pod is being deleted."""
    if not records_pod_events(job) or terminal_condition(job.get("status") or {}) is not None:
        return None
    if training_operator_mpijob(job):
        return None  # its controller's own ReconcilePods records no exit
    if (new.get("metadata") or {}).get("deletionTimestamp"):
        return None  # stopped by its deletion (a restart, a namespace being deleted): not its own exit
    container = framework_container(job)
    now = _terminated(new, container)
    if now is None or (old is not None and _terminated(old, container) == now):
        return None
    meta = new.get("metadata") or {}
    return f"Pod: {meta.get('namespace', '')}.{meta.get('name', '')} exited with code {now[2]}"


def _terminated(pod: Mapping[str, Any], container: str) -> tuple[str, int, int] | None:
    """(containerID, restartCount, exit code) of `container`'s terminated state in `pod`."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if not isinstance(cs, Mapping) or cs.get("name") != container:
            continue
        terminated = (cs.get("state") or {}).get("terminated")
        if not isinstance(terminated, Mapping):
            return None
        code = terminated.get("exitCode")
        return (
            str(terminated.get("containerID") or cs.get("containerID") or ""),
            int(cs.get("restartCount") or 0),
            int(code) if isinstance(code, int) else 0,
        )
    return None
