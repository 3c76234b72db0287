"""Taking over jobs KubeDL started (docs/operations.md, "Serving KubeDL's API"): the `Source`
for KubeDL's pods and Services, and the jobs whose pods are not adopted. Pure.

KubeDL (`pkg/job_controller`, JobController.GenLabels, createNewPod, CreateNewService,
GenOwnerReference) labels a job's pods and Services `group-name: training.kubedl.io`,
`job-name`, `replica-type` (lower case), `replica-index` (and `job-role: master` on the master
pod), names them `<job>-<type>-<index>` (util.GenGeneralName) and sets a controller
ownerReference to the job (`training.kubedl.io/v1alpha1`). Its pods address their peers by the
per-pod Services: `MASTER_ADDR=<job>-master-0` (PyTorch, XGBoost) and
`<job>-<type>-<index>.<ns>.svc:<port>` in TF_CONFIG — the names kubetrain's per-pod service mode
gives a pod it recreates, which the adopted job runs in (`kubetrain.io/adopted-from`).

Not adopted (`kubedl_refusal`), their pods left alone:
- host network mode (`kubedl.io/network-mode: host`): KubeDL gave each pod a random port
  (setupHostNetwork) and wrote it into its peers' cluster spec; a pod kubetrain recreates would
  take another port than its peers expect;
- code sync (`kubedl.io/git-sync-config`): KubeDL did not record the commit it fetched, so a pod
  kubetrain recreates could fetch other code than its peers run;
- a kind whose framework has objects besides pods and Services (`Framework.extra_children`,
  MPIJob's `<job>-config`): KubeDL's launcher runs from the hostfile and kubexec script KubeDL
  wrote there (controllers/mpi/mpi_config.go), which kubetrain writes in mpi-operator's form;
- a kind whose container KubeDL names otherwise (`Framework.kubedl_container_name`, XGBoost's
  `xgboostjob` against kubetrain's `xgboost`, docs/behaviour.md): kubetrain reads restarts and
  exit codes of the container of its name, so an adopted pod's restarts would go uncounted and
  a failure of an ExitCode replica would read as permanent.
Such a job waits: kubetrain's creates of the pods whose names KubeDL's pods hold are answered
AlreadyExists, so it reports Running=False `PodNameConflict` (docs/behaviour.md §5) until those
pods are deleted, and then starts them again from the beginning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.api.labels import (
    KUBEDL_ANNOTATION_GIT_SYNC,
    KUBEDL_ANNOTATION_NETWORK_MODE,
    KUBEDL_LABEL_GROUP_NAME,
    KUBEDL_LABEL_JOB_NAME,
    KUBEDL_LABEL_JOB_ROLE,
    KUBEDL_LABEL_REPLICA_INDEX,
    KUBEDL_LABEL_REPLICA_TYPE,
    LABEL_JOB_NAME,
    annotations_of,
)
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.hostnetwork import read_host_network
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.operator.adoption import Source

# The value of `kubetrain.io/adopted-from` on a job adopted from KubeDL (its operator, `kubedl`).
KUBEDL_ADOPTED_FROM = "training.kubedl.io/kubedl"


def kubedl_refusal(job: Mapping[str, Any]) -> str | None:
    """Why KubeDL's pods of `job` (a stored training.kubedl.io job) are not adopted, with what
    to do; None when they are."""
    meta = job.get("metadata")
    name, namespace = (meta.get("name"), meta.get("namespace")) if isinstance(meta, Mapping) else (None, None)
    annotations = annotations_of(job)
    kind = job.get("kind")
    framework = FRAMEWORKS.get(str(kind))
    if read_host_network(annotations).enabled:
        why = (
            f"it runs in host network mode ({KUBEDL_ANNOTATION_NETWORK_MODE}: host): KubeDL gave each "
            "pod a random port and wrote it into its peers' cluster spec, which a pod kubetrain "
            "recreates would not get"
        )
    elif KUBEDL_ANNOTATION_GIT_SYNC in annotations:
        why = (
            f"it syncs its code from git ({KUBEDL_ANNOTATION_GIT_SYNC}): KubeDL did not record the "
            "commit it fetched, so a pod kubetrain recreates could run other code than its peers"
        )
    elif framework is not None and framework.kubedl_container_name:
        why = (
            f"KubeDL's pods name their container {framework.kubedl_container_name}, and kubetrain "
            f"reads the restarts and exit codes of its own container name, {framework.container_name}"
        )
    elif framework is not None and type(framework).extra_children is not Framework.extra_children:
        why = (
            f"a {kind} has objects besides its pods and Services (such as {name}-config) that KubeDL "
            "wrote in its own form, which kubetrain writes in another"
        )
    else:
        return None
    return (
        f"not adopting the pods KubeDL made: {why}. The job waits while they hold its pod names; "
        f"delete them (kubectl -n {namespace} delete pods,services -l "
        f"{KUBEDL_LABEL_GROUP_NAME}={KUBEDL_GROUP},{KUBEDL_LABEL_JOB_NAME}={name}) to have kubetrain "
        "start the job again from the beginning"
    )


KUBEDL = Source(
    group=KUBEDL_GROUP,
    operator="KubeDL",
    adopted_from=KUBEDL_ADOPTED_FROM,
    job_name_label=KUBEDL_LABEL_JOB_NAME,
    replica_type_label=KUBEDL_LABEL_REPLICA_TYPE,
    replica_index_label=KUBEDL_LABEL_REPLICA_INDEX,
    job_role_label=KUBEDL_LABEL_JOB_ROLE,
    selector=f"{KUBEDL_LABEL_GROUP_NAME}={KUBEDL_GROUP},{KUBEDL_LABEL_JOB_NAME},!{LABEL_JOB_NAME}",
    refusal=kubedl_refusal,
)
