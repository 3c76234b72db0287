"""PyTorch: PyTorchJob replica types, MASTER_*/PET_* environment and success rules."""

from __future__ import annotations

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError
from kubetrain.api.pytorchjob import PyTorchJob


class PyTorch:
    kind = "PyTorchJob"
    plural = "pytorchjobs"
    singular = "pytorchjob"
    short_names = ("ptj",)
    job_model: type[JobBase] = PyTorchJob
    replica_field = "pytorchReplicaSpecs"
    replica_types = ("Master", "Worker")
    master_types = ("Master",)
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
        raise NotImplementedError  # filled in by the validation work


FRAMEWORK = PyTorch()
