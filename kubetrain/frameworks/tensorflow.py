"""TensorFlow: TFJob replica types, TF_CONFIG and success rules."""

from __future__ import annotations

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, forbidden
from kubetrain.api.tfjob import TFJob
from kubetrain.frameworks.checks import replica_count, replica_path


class TensorFlow:
    kind = "TFJob"
    plural = "tfjobs"
    singular = "tfjob"
    short_names: tuple[str, ...] = ("tfj",)
    job_model: type[JobBase] = TFJob
    replica_field = "tfReplicaSpecs"
    replica_types: tuple[str, ...] = ("Chief", "Master", "PS", "Worker", "Evaluator")
    master_types: tuple[str, ...] = ("Chief", "Master")
    container_name = "tensorflow"
    port_name = "tfjob-port"
    default_port = 2222
    default_restart_policy = "Never"
    operator_env_names = frozenset({"TF_CONFIG"})

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """At most one of Chief and Master, with at most one replica."""
        if not isinstance(job, TFJob):
            return []
        replicas = job.spec.tf_replica_specs or {}
        errors: list[FieldError] = []
        leaders = [t for t in ("Chief", "Master") if t in replicas]
        if len(leaders) > 1:
            errors.append(
                forbidden(
                    replica_path(base_path, self.replica_field, "Master"),
                    "a TFJob may have a Chief or a Master, not both: remove one of them",
                )
            )
        for rtype in leaders:
            if replica_count(replicas[rtype]) > 1:
                errors.append(
                    forbidden(
                        replica_path(base_path, self.replica_field, rtype) + ".replicas",
                        f"must be 0 or 1 (a TFJob has at most one {rtype})",
                    )
                )
        return errors


FRAMEWORK = TensorFlow()
