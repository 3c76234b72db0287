"""Every label and annotation kubetrain writes or reads on the objects it manages — one home.

Children of a job (pods, the Service, the PodGroup, the HPA) carry `job-name`, `job-kind` and
`managed-by`; pods add their replica type and index, and pod 0 of the master type its role.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LABEL_JOB_NAME = "kubetrain.io/job-name"
LABEL_JOB_KIND = "kubetrain.io/job-kind"
LABEL_REPLICA_TYPE = "kubetrain.io/replica-type"  # lower-case replica type: "worker"
LABEL_REPLICA_INDEX = "kubetrain.io/replica-index"
LABEL_JOB_ROLE = "kubetrain.io/job-role"  # "master" on the pod that leads the job
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "kubetrain"

# On a pod of a job restarted as a whole (a RestartJob rule): the attempt it belongs to, equal to
# the job's `status.jobRestarts` when it was created; absent on attempt 0.
LABEL_ATTEMPT = "kubetrain.io/attempt"
# On a job's HPA: a hash of the spec kubetrain last wrote. The HPA is replaced when the spec
# the job asks for hashes differently (not when the API server normalised what was written).
# On a Secret the operator creates without data: its data, `curve.cert`, is a fresh ZeroMQ CURVE
# certificate (X25519 key pair) named by this annotation's value, made when it is created
# (kubetrain.certs.secretdata; a Flux TrainJob's `<tj>-flux-curve`).
ANNOTATION_CURVE_CERTIFICATE = "kubetrain.io/curve-certificate"
ANNOTATION_HPA_SPEC_HASH = "kubetrain.io/hpa-spec-hash"

# On a job: `host` runs its pods in the node's network namespace (hostNetwork, DNS policy
# ClusterFirstWithHostNet), each on its own port from the range below (frameworks/hostnetwork.py).
ANNOTATION_NETWORK_MODE = "kubetrain.io/network-mode"
# KubeDL's name for the same annotation and value (its `AnnotationNetworkMode`): either one works.
KUBEDL_ANNOTATION_NETWORK_MODE = "kubedl.io/network-mode"
NETWORK_MODE_HOST = "host"
# On a job in host network mode: the ports its pods are given, `FIRST-LAST` (default 20000-29999).
ANNOTATION_HOST_PORT_RANGE = "kubetrain.io/host-port-range"

# On a job: how its pods are addressed, `headless` (one Service per job) or `per-pod` (one
# Service per pod, as Kubeflow's operator makes them) — kubetrain.api.servicemode.
ANNOTATION_SERVICE_MODE = "kubetrain.io/service-mode"
# On a kubeflow.org job whose running pods kubetrain adopted from Kubeflow's training operator
# (value `kubeflow.org/training-operator`, kubetrain.operator.adoption), or a training.kubedl.io
# job adopted from KubeDL (`training.kubedl.io/kubedl`, adoption_kubedl): without its own
# service-mode annotation it runs in per-pod mode, the addresses its adopted pods use.
ANNOTATION_ADOPTED = "kubetrain.io/adopted-from"

# On a job of a kind served at more than one version of its group (an MPIJob in kubeflow.org:
# v2beta1, mpi-operator's, and v1, training-operator's): the apiVersion its author created it at
# (`kubeflow.org/v1`), set by the mutating webhook on CREATE from the AdmissionReview's
# requestKind unless the client wrote a served version, then immutable
# (kubetrain.jobs.createdversion). Its pods carry the labels of that version's operator; a job
# without it carries mpi-operator's.
ANNOTATION_CREATED_API_VERSION = "kubetrain.io/created-api-version"

# Kubeflow's training-operator labels, which pods of kubeflow.org jobs carry too (Kueue, Katib,
# the Kubeflow SDK's get_job_pod_names and dashboards select pods by them).
KUBEFLOW_LABEL_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"  # lower case
KUBEFLOW_LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
KUBEFLOW_LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
KUBEFLOW_LABEL_OPERATOR_NAME = "training.kubeflow.org/operator-name"  # "<kind lower>-controller"

# KubeDL's job annotations (its `apis/training/v1` constants), read on jobs of every group:
# `kubedl.io/tenancy` (JSON: tenant, user, idc, region — kubetrain.jobs.tenancy),
# `kubedl.io/git-sync-config` (JSON — kubetrain.jobs.codesync) and
# `kubedl.io/tensorboard-config` (JSON — kubetrain.jobs.tensorboard).
KUBEDL_ANNOTATION_TENANCY = "kubedl.io/tenancy"
KUBEDL_ANNOTATION_GIT_SYNC = "kubedl.io/git-sync-config"
KUBEDL_ANNOTATION_TENSORBOARD = "kubedl.io/tensorboard-config"
# The tenancy of a job, as labels on the job and on every pod it owns (set from the annotation:
# TrainingPolicy `jobSelector`s, label selectors and metrics use them).
LABEL_TENANT = "tenancy.kubetrain.io/tenant"
LABEL_TENANT_USER = "tenancy.kubetrain.io/user"
LABEL_TENANT_IDC = "tenancy.kubetrain.io/idc"
LABEL_TENANT_REGION = "tenancy.kubetrain.io/region"

# KubeDL's pod labels (its `apis/training/v1` constants), which pods of training.kubedl.io jobs
# carry too: group-name (training.kubedl.io), job-name, replica-type (lower case), replica-index
# and job-role (master).
KUBEDL_LABEL_GROUP_NAME = "group-name"
KUBEDL_LABEL_JOB_NAME = "job-name"
KUBEDL_LABEL_REPLICA_TYPE = "replica-type"
KUBEDL_LABEL_REPLICA_INDEX = "replica-index"
KUBEDL_LABEL_JOB_ROLE = "job-role"

# On a job a cron (TrainingCron, KubeDL's Cron) created: the cron's name (the operator watches
# jobs with this label only), and the scheduled time it was created for, RFC 3339 in the cron's
# time zone (as batch.kubernetes.io/cronjob-scheduled-timestamp on a CronJob's Jobs).
LABEL_CRON_NAME = "kubetrain.io/cron-name"
KUBEDL_LABEL_CRON_NAME = "kubedl.io/cron-name"  # KubeDL's, also on the jobs of a KubeDL Cron
ANNOTATION_CRON_SCHEDULED_TIMESTAMP = "kubetrain.io/cron-scheduled-timestamp"


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's `metadata.annotations` as written, {} when absent or not a map."""
    meta = obj.get("metadata")
    value = meta.get("annotations") if isinstance(meta, Mapping) else None
    return value if isinstance(value, Mapping) else {}
