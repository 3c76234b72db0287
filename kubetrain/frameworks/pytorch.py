"""PyTorch: PyTorchJob replica types, MASTER_*/PET_* environment and success rules."""

from __future__ import annotations

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError, forbidden, invalid, required
from kubetrain.api.pytorchjob import PyTorchJob
from kubetrain.frameworks.checks import replica_count, replica_path


class PyTorch:
    kind = "PyTorchJob"
    plural = "pytorchjobs"
    singular = "pytorchjob"
    short_names: tuple[str, ...] = ("ptj",)
    job_model: type[JobBase] = PyTorchJob
    replica_field = "pytorchReplicaSpecs"
    replica_types: tuple[str, ...] = ("Master", "Worker")
    master_types: tuple[str, ...] = ("Master",)
    container_name = "pytorch"
    port_name = "pytorchjob-port"
    default_port = 23456
    default_restart_policy = "OnFailure"
    operator_env_names = frozenset(
        {
            "PYTHONUNBUFFERED",
            "MASTER_ADDR",
            "MASTER_PORT",
            "WORLD_SIZE",
            "RANK",
            "PET_MASTER_ADDR",
            "PET_MASTER_PORT",
            "PET_NODE_RANK",
            "PET_NPROC_PER_NODE",
            "PET_NNODES",
            "PET_RDZV_ENDPOINT",
            "PET_RDZV_BACKEND",
            "PET_RDZV_ID",
            "PET_RDZV_CONF",
            "PET_MAX_RESTARTS",
            "PET_STANDALONE",
        }
    )

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """One Master; elastic Workers within minReplicas..maxReplicas; a valid nprocPerNode."""
        if not isinstance(job, PyTorchJob):
            return []
        spec = job.spec
        replicas = spec.pytorch_replica_specs or {}
        errors: list[FieldError] = []
        if "Master" in replicas and replica_count(replicas["Master"]) != 1:
            errors.append(
                forbidden(
                    replica_path(base_path, self.replica_field, "Master") + ".replicas",
                    "must be 1 (a PyTorchJob has exactly one Master)",
                )
            )
        elastic = spec.elastic_policy
        elastic_path = f"{base_path}.elasticPolicy"
        if elastic is not None:
            errors.extend(self._validate_elastic(job, base_path))
            if elastic.n_proc_per_node is not None and spec.nproc_per_node is not None:
                errors.append(
                    forbidden(
                        f"{elastic_path}.nProcPerNode",
                        "is deprecated and may not be set together with spec.nprocPerNode: remove it",
                    )
                )
            elif elastic.n_proc_per_node is not None and elastic.n_proc_per_node < 1:
                errors.append(invalid(f"{elastic_path}.nProcPerNode", "must be at least 1"))
        nproc = spec.nproc_per_node
        if nproc is not None and not _valid_nproc(nproc):
            errors.append(
                invalid(
                    f"{base_path}.nprocPerNode",
                    f'{nproc!r} is not valid: must be a positive integer as a string (e.g. "4") '
                    'or one of "auto", "cpu", "gpu"',
                )
            )
        return errors

    def _validate_elastic(self, job: PyTorchJob, base_path: str) -> list[FieldError]:
        elastic = job.spec.elastic_policy
        assert elastic is not None
        replicas = job.spec.pytorch_replica_specs or {}
        errors: list[FieldError] = []
        path = f"{base_path}.elasticPolicy"
        worker_path = replica_path(base_path, self.replica_field, "Worker")
        min_r, max_r = elastic.min_replicas, elastic.max_replicas
        if min_r is not None and min_r < 1:
            errors.append(invalid(f"{path}.minReplicas", f"must be at least 1, got {min_r}"))
        if min_r is not None and max_r is not None and max_r < min_r:
            errors.append(
                invalid(
                    f"{path}.maxReplicas",
                    f"must be greater than or equal to minReplicas ({min_r}), got {max_r}",
                )
            )
        if "Worker" not in replicas:
            errors.append(
                required(worker_path, "an elastic PyTorchJob (spec.elasticPolicy set) needs Workers")
            )
        else:
            workers = replica_count(replicas["Worker"])
            if workers < 1:
                errors.append(
                    invalid(f"{worker_path}.replicas", "must be at least 1 in an elastic PyTorchJob")
                )
            elif min_r is not None and max_r is not None and min_r <= max_r and not min_r <= workers <= max_r:
                errors.append(
                    invalid(
                        f"{worker_path}.replicas",
                        f"{workers} is outside elasticPolicy minReplicas..maxReplicas ({min_r}..{max_r})",
                    )
                )
        if elastic.rdzv_port is not None and not 1 <= elastic.rdzv_port <= 65535:
            errors.append(
                invalid(
                    f"{path}.rdzvPort", f"must be a port number between 1 and 65535, got {elastic.rdzv_port}"
                )
            )
        if elastic.max_restarts is not None and elastic.max_restarts < 0:
            errors.append(
                invalid(
                    f"{path}.maxRestarts", f"must be greater than or equal to 0, got {elastic.max_restarts}"
                )
            )
        return errors


def _valid_nproc(value: str) -> bool:
    if value in ("auto", "cpu", "gpu"):
        return True
    return value.isdigit() and int(value) >= 1


FRAMEWORK = PyTorch()
