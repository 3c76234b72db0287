"""TensorFlow: TFJob replica types, TF_CONFIG and success rules."""

from __future__ import annotations

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError
from kubetrain.api.tfjob import TFJob


class TensorFlow:
    kind = "TFJob"
    plural = "tfjobs"
    singular = "tfjob"
    short_names = ("tfj",)
    job_model: type[JobBase] = TFJob
    replica_field = "tfReplicaSpecs"
    replica_types = ("Chief", "Master", "PS", "Worker", "Evaluator")
    master_types = ("Chief", "Master")
    container_name = "tensorflow"
    port_name = "tfjob-port"
    default_port = 2222
    default_restart_policy = "Never"
    operator_env_names = frozenset({"TF_CONFIG"})

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        raise NotImplementedError  # filled in by the validation work


FRAMEWORK = TensorFlow()
