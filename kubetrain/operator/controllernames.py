"""The `controller` label of controller-runtime's series (kubetrain.serving.crmetrics) for a key.

The operators kubetrain replaces run one controller-runtime controller per job kind, and
dashboards select their series by its name; kubetrain reports each served resource's reconciles
under the name the replaced operator gave that kind's controller:

- kubeflow.org `PyTorchJob`, `TFJob`, ...: `pytorchjob-controller`, `tfjob-controller`, ...
  (training-operator release-1.9, `controllerName` in pkg/controller.v1/*/);
- trainer.kubeflow.org `TrainJob`: `trainjob_controller` (Trainer,
  pkg/controller/trainjob_controller.go `Named(...)`);
- training.kubedl.io `PyTorchJob`, `TFJob`, ...: `PytorchController`, `TensorFlowController`, ...
  (KubeDL, `controllerName` in controllers/*/, each framework's `kubedl_controller_name`);
- apps.kubedl.io `Cron`: `CronController` (KubeDL, controllers/apps/cron_controller.go);
- kubetrain.io `PyTorchJob`, `TrainingCron`, ...: `kubetrain-pytorchjob-controller`,
  `kubetrain-trainingcron-controller`, ... (kubetrain's own).

A kubetrain.io kind has a name of its own so that one operator serving both kubetrain.io and
kubeflow.org PyTorchJobs reports them apart.
"""

from __future__ import annotations

from kubetrain.api.groups import KUBEDL_GROUP, KUBEFLOW_GROUP, KUBETRAIN_GROUP, TRAINER_GROUP
from kubetrain.frameworks.registry import get_framework

_KUBEDL_CRON = "CronController"
_TRAINJOB = "trainjob_controller"


def job_controller(kind: str, group: str) -> str:
    """The controller name for jobs of `kind` in API group `group`."""
    if group == TRAINER_GROUP:
        return _TRAINJOB
    framework = get_framework(kind)
    if group == KUBEDL_GROUP and framework is not None and framework.kubedl_controller_name:
        return framework.kubedl_controller_name
    if group in (KUBEFLOW_GROUP, KUBEDL_GROUP):
        return f"{kind.lower()}-controller"
    return f"kubetrain-{kind.lower()}-controller"


def job_resource_controller(rid: str) -> str:
    """The controller name for a job resource id (kubetrain.kube.resources.job_resource_id:
    `TFJob` for kubetrain.io, `TFJob.kubeflow.org` for another group)."""
    kind, _, group = rid.partition(".")
    return job_controller(kind, group or KUBETRAIN_GROUP)


def cron_controller(group: str, kind: str) -> str:
    """The controller name for the cron kind `kind` of `group`."""
    if group == KUBETRAIN_GROUP:
        return f"kubetrain-{kind.lower()}-controller"
    return _KUBEDL_CRON
