"""Every label and annotation kubetrain writes or reads on the objects it manages — one home.

Children of a job (pods, the Service, the PodGroup, the HPA) carry `job-name`, `job-kind` and
`managed-by`; pods add their replica type and index, and pod 0 of the master type its role.
"""

from __future__ import annotations

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
ANNOTATION_HPA_SPEC_HASH = "kubetrain.io/hpa-spec-hash"

# On a job: `host` runs its pods in the node's network namespace (hostNetwork, DNS policy
# ClusterFirstWithHostNet), each on its own port from the range below (frameworks/hostnetwork.py).
ANNOTATION_NETWORK_MODE = "kubetrain.io/network-mode"
NETWORK_MODE_HOST = "host"
# On a job in host network mode: the ports its pods are given, `FIRST-LAST` (default 20000-29999).
ANNOTATION_HOST_PORT_RANGE = "kubetrain.io/host-port-range"
