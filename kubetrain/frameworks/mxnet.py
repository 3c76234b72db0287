"""MXNet: MXJob replica types, DMLC_*/MX_CONFIG environment and success rules."""

from __future__ import annotations

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError
from kubetrain.api.mxjob import MXJob


class MXNet:
    kind = "MXJob"
    plural = "mxjobs"
    singular = "mxjob"
    short_names = ("mxj",)
    job_model: type[JobBase] = MXJob
    replica_field = "mxReplicaSpecs"
    replica_types = ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner")
    master_types = ("Scheduler",)
    container_name = "mxnet"
    port_name = "mxjob-port"
    default_port = 9091
    default_restart_policy = "Never"
    operator_env_names = frozenset(
        {
            "DMLC_PS_ROOT_URI",
            "DMLC_PS_ROOT_PORT",
            "DMLC_NUM_SERVER",
            "DMLC_NUM_WORKER",
            "DMLC_ROLE",
            "DMLC_USE_KUBERNETES",
            "DMLC_WORKER_ID",
            "MX_CONFIG",
        }
    )

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        raise NotImplementedError  # filled in by the validation work


FRAMEWORK = MXNet()
