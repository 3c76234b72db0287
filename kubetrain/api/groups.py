"""The API groups kubetrain can serve its job kinds in. Pure.

- `kubetrain.io` (the default): kubetrain's own group; it runs beside Kubeflow's operator.
- `kubeflow.org`: Kubeflow's group, for a cluster where kubetrain replaces Kubeflow's training
  operator — the Kubeflow SDK, Kueue's Kubeflow integrations, Katib and Pipelines components
  create `kubeflow.org/v1` jobs and work unchanged.

- `training.kubedl.io` (`v1alpha1`): KubeDL's group, for KubeDL's kinds kubetrain runs (TFJob,
  PyTorchJob, XGBoostJob, MPIJob) in KubeDL's spec layout (kubetrain.jobs.kubedllayout).

An operator serves any of them (`--api-groups`, chart `apiGroups`); the job kinds, fields and
behaviour are the same in each.
"""

from __future__ import annotations

from collections.abc import Iterable

KUBETRAIN_GROUP = "kubetrain.io"
KUBEFLOW_GROUP = "kubeflow.org"
KUBEDL_GROUP = "training.kubedl.io"
KUBEDL_VERSION = "v1alpha1"
# KubeDL's kinds kubetrain runs are those whose framework says `kubedl_kind`
# (kubetrain.frameworks.registry.group_serves); KubeDL's XDLJob, MarsJob and ElasticDLJob are not
# served (docs/behaviour.md, "Serving training.kubedl.io").
JOB_GROUPS = (KUBETRAIN_GROUP, KUBEFLOW_GROUP, KUBEDL_GROUP)
JOB_VERSION = "v1"
JOB_GROUP_VERSIONS = tuple(f"{g}/{KUBEDL_VERSION if g == KUBEDL_GROUP else JOB_VERSION}" for g in JOB_GROUPS)
# Kubeflow Trainer v2's group (TrainJob, TrainingRuntime, ClusterTrainingRuntime: kubetrain.api.trainer):
# served beside the job groups, with its own kinds.
TRAINER_GROUP = "trainer.kubeflow.org"
# KubeDL's apps group: its Cron (scheduled training, kubetrain.api.cron), served beside
# kubetrain.io's TrainingCron when asked (`--api-groups` including apps.kubedl.io).
KUBEDL_APPS_GROUP = "apps.kubedl.io"
SERVABLE_GROUPS = (*JOB_GROUPS, TRAINER_GROUP, KUBEDL_APPS_GROUP)

# runPolicy.managedBy values whose jobs kubetrain reconciles: unset/empty, its own name, and
# Kubeflow's operator's (kubetrain serving kubeflow.org is that operator). Anything else — e.g.
# Kueue's "kueue.x-k8s.io/multikueue" — is another controller's job, left alone.
KUBETRAIN_MANAGER = "kubetrain.io/operator"
KUBEFLOW_MANAGER = "kubeflow.org/training-operator"
MULTIKUEUE_MANAGER = "kueue.x-k8s.io/multikueue"
RECONCILED_MANAGERS = (KUBETRAIN_MANAGER, KUBEFLOW_MANAGER)
# mpi-operator's own name (its KubeflowJobController), which it reconciles like unset: kubetrain
# serving mpijobs.kubeflow.org is that operator, for MPIJobs.
MPI_OPERATOR_MANAGER = "kubeflow.org/mpi-operator"


def group_of(api_version: object) -> str:
    """`kubeflow.org` of `kubeflow.org/v1` ("" for a core or malformed apiVersion)."""
    if not isinstance(api_version, str) or "/" not in api_version:
        return ""
    return api_version.split("/", 1)[0]


def job_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """The groups of `groups` that serve the job kinds (TFJob, …): not trainer.kubeflow.org."""
    return tuple(g for g in groups if g in JOB_GROUPS)


def group_version(group: str) -> str:
    """The version kubetrain serves a job group's kinds in: `v1alpha1` for KubeDL's, else `v1`."""
    return KUBEDL_VERSION if group == KUBEDL_GROUP else JOB_VERSION
