"""The `training.kubeflow.org/*` labels of a kubeflow.org MPIJob's pods: those of the operator
whose version the job's author wrote (`kubetrain.io/created-api-version`, recorded at creation:
kubetrain.jobs.createdversion). Pure.

- `kubeflow.org/v1` — training-operator v1.9's MPIJob controller (`pkg/controller.v1/mpi`):
  `GenLabels` (operator-name `mpijob-controller`, job-name) plus `defaultReplicaLabels`
  (replica-type `launcher`/`worker`); `newLauncher` adds job-role `master` (`IsMasterRole`: the
  Launcher), `getOrCreateWorker` replica-index `<i>` on Worker i. The Launcher has no index.
- anything else (`kubeflow.org/v2beta1`, or no annotation) — mpi-operator's (`defaultLabels`,
  `workerReplicaIndexLabel`): operator-name `mpi-operator`, job-name, job-role
  `launcher`/`worker`, replica-type (kept for selectors written against either), replica-index
  on every Worker — its index + 1 with runLauncherAsWorker, the Launcher then being 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.groups import KUBEFLOW_GROUP, group_of
from kubetrain.api.labels import (
    ANNOTATION_CREATED_API_VERSION,
    KUBEFLOW_LABEL_JOB_NAME,
    KUBEFLOW_LABEL_JOB_ROLE,
    KUBEFLOW_LABEL_OPERATOR_NAME,
    KUBEFLOW_LABEL_REPLICA_INDEX,
    KUBEFLOW_LABEL_REPLICA_TYPE,
)

LAUNCHER, WORKER = "Launcher", "Worker"
MPI_OPERATOR_NAME = "mpi-operator"  # kubeflow.OperatorName (mpi-operator v2)
TRAINING_OPERATOR_NAME = "mpijob-controller"  # controllerName (training-operator v1.9)
TRAINING_OPERATOR_VERSION = f"{KUBEFLOW_GROUP}/v1"


def training_operator_convention(annotations: Mapping[str, Any]) -> bool:
    """Whether the job was created at kubeflow.org/v1, training-operator's version."""
    return annotations.get(ANNOTATION_CREATED_API_VERSION) == TRAINING_OPERATOR_VERSION


def mpi_operator_convention(obj: Mapping[str, Any]) -> bool:
    """Whether `obj` is an MPIJob of kubeflow.org not created at kubeflow.org/v1: one written as
    mpi-operator's, whose pods carry its labels and whose status follows its controller's."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return isinstance(annotations, Mapping) and written_as_mpi_operator(
        obj.get("kind"), group_of(obj.get("apiVersion")), annotations.get(ANNOTATION_CREATED_API_VERSION)
    )


def written_as_mpi_operator(kind: Any, group: str, created_api_version: Any) -> bool:
    """`mpi_operator_convention` of a job already read: its `kind`, the API `group` of its
    apiVersion and its created-api-version annotation as written (None when absent)."""
    return kind == "MPIJob" and group == KUBEFLOW_GROUP and created_api_version != TRAINING_OPERATOR_VERSION


def training_operator_mpijob(obj: Mapping[str, Any]) -> bool:
    """Whether `obj` is an MPIJob of kubeflow.org created at kubeflow.org/v1: one written as
    training-operator v1.9's."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return (
        obj.get("kind") == "MPIJob"
        and group_of(obj.get("apiVersion")) == KUBEFLOW_GROUP
        and isinstance(annotations, Mapping)
        and training_operator_convention(annotations)
    )


def mpijob_pod_labels(
    name: str, annotations: Mapping[str, Any], replica_type: str, index: int, *, launcher_as_worker: bool
) -> dict[str, str]:
    """The Kubeflow labels of pod `index` of `replica_type` of MPIJob `name` (module docstring)."""
    labels = {KUBEFLOW_LABEL_JOB_NAME: name, KUBEFLOW_LABEL_REPLICA_TYPE: replica_type.lower()}
    if training_operator_convention(annotations):
        labels[KUBEFLOW_LABEL_OPERATOR_NAME] = TRAINING_OPERATOR_NAME
        if replica_type == LAUNCHER:
            labels[KUBEFLOW_LABEL_JOB_ROLE] = "master"
        else:
            labels[KUBEFLOW_LABEL_REPLICA_INDEX] = str(index)
        return labels
    labels[KUBEFLOW_LABEL_OPERATOR_NAME] = MPI_OPERATOR_NAME
    labels[KUBEFLOW_LABEL_JOB_ROLE] = replica_type.lower()
    if replica_type == WORKER:
        labels[KUBEFLOW_LABEL_REPLICA_INDEX] = str(index + 1 if launcher_as_worker else index)
    elif launcher_as_worker:
        labels[KUBEFLOW_LABEL_REPLICA_INDEX] = "0"
    return labels
