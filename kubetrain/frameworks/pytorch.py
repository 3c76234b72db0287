"""PyTorch: PyTorchJob replica types, elastic Workers (elasticPolicy), MASTER_*/PET_* environment
and success rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.common import JobBase
from kubetrain.api.errors import QUOTE, RECREATE, FieldError, forbidden, invalid
from kubetrain.api.pytorchjob import PyTorchJob
from kubetrain.frameworks.base import Autoscaling, Framework, ReplicaBounds
from kubetrain.frameworks.checks import replica_count, replica_path
from kubetrain.frameworks.elastic import (
    autoscaling,
    bounds,
    default_bounds,
    max_restarts_errors,
    worker_bounds_errors,
)
from kubetrain.frameworks.env import JobLayout, ReplicaCounts, env_var

DEFAULT_NPROC_PER_NODE = "auto"
_RENDEZVOUS_FIELDS = ("rdzvBackend", "rdzvHost", "rdzvPort", "rdzvId", "rdzvConf")


class PyTorch(Framework):
    kind = "PyTorchJob"
    kubeflow_framework_name = "pytorch"  # training-operator's GetFrameworkName()
    kubedl_kind = True
    kubedl_unread_annotations = (
        (
            "kubedl.io/enable-elastic-training",  # KubeDL's own elastic scaling loop
            "the job runs at the replicas its spec asks for, without KubeDL's elastic scaling; set "
            "spec.elasticPolicy for elastic training with torchrun",
        ),
    )
    kubedl_controller_name = "PytorchController"  # KubeDL's controllerName
    kubedl_dag = (("Worker", "Master"),)  # setDefaultPyTorchDAGConditions
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

    # `kubectl scale` / an HPA resize the Workers; an elastic job's within its elasticPolicy.
    scalable_replica_type = "Worker"
    scale_hint = "elastic Workers can change within minReplicas..maxReplicas"
    bounds_name = "elasticPolicy minReplicas..maxReplicas"

    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        """nprocPerNode (from the deprecated elasticPolicy.nProcPerNode, else "auto"); elastic
        minReplicas/maxReplicas from each other, else from the Worker count."""
        warnings: list[str] = []
        elastic = spec.get("elasticPolicy")
        if isinstance(elastic, dict):
            elastic = spec["elasticPolicy"] = dict(elastic)
            deprecated = elastic.get("nProcPerNode")
            if deprecated is not None and spec.get("nprocPerNode") is None:
                spec["nprocPerNode"] = str(deprecated)
                del elastic["nProcPerNode"]
                warnings.append(
                    "spec.elasticPolicy.nProcPerNode is deprecated: its value was moved to spec.nprocPerNode"
                )
            default_bounds(elastic, counts.get("Worker"))
            master = counts.get("Master")
            if master is not None and master > 0:
                warnings.append(master_in_rendezvous_warning(elastic))
        if spec.get("nprocPerNode") is None:
            spec["nprocPerNode"] = DEFAULT_NPROC_PER_NODE
        return warnings

    def replica_bounds(self, spec: Mapping[str, Any]) -> ReplicaBounds | None:
        return bounds(spec)

    def validate_update(self, spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
        """elasticPolicy can be neither added nor removed; its rendezvous settings are immutable."""
        new, old = spec.get("elasticPolicy"), old_spec.get("elasticPolicy")
        if isinstance(new, Mapping) != isinstance(old, Mapping):
            verb = "added to" if isinstance(new, Mapping) else "removed from"
            return [forbidden("spec.elasticPolicy", f"cannot be {verb} an existing job: {RECREATE}")]
        if not isinstance(new, Mapping) or not isinstance(old, Mapping):
            return []
        return [
            forbidden(f"spec.elasticPolicy.{name}", f"rendezvous settings are immutable: {RECREATE}")
            for name in _RENDEZVOUS_FIELDS
            if new.get(name) != old.get(name)
        ]

    def autoscaling(self, job: JobLayout) -> Autoscaling | None:
        return autoscaling(job.spec)

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
                    f'{QUOTE.encode(nproc)} is not valid: must be a positive integer as a string (e.g. "4") '
                    'or one of "auto", "cpu", "gpu"',
                )
            )
        return errors

    def _validate_elastic(self, job: PyTorchJob, base_path: str) -> list[FieldError]:
        elastic = job.spec.elastic_policy
        assert elastic is not None
        replicas = job.spec.pytorch_replica_specs or {}
        path = f"{base_path}.elasticPolicy"
        errors = worker_bounds_errors(
            self.kind, base_path, self.replica_field, replicas, elastic.min_replicas, elastic.max_replicas
        )
        if elastic.rdzv_port is not None and not 1 <= elastic.rdzv_port <= 65535:
            errors.append(
                invalid(
                    f"{path}.rdzvPort", f"must be a port number between 1 and 65535, got {elastic.rdzv_port}"
                )
            )
        errors.extend(max_restarts_errors(base_path, elastic.max_restarts))
        return errors

    # --- engine (docs/behaviour.md §4-§5) ----------------------------------------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        return pytorch_cluster_env(job, replica_type, index)

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        return pytorch_succeeded(job, counts)


def master_in_rendezvous_warning(elastic: Mapping[str, Any]) -> str:
    """The admission warning for an elastic job with a Master (`elastic`: its elasticPolicy,
    defaulted).

    **Decision** (docs/behaviour.md §2, Kubeflow Trainer issue 2277): the env stays exactly as
    Kubeflow's `setPodEnv` / `ElasticEnvVarGenerator.Generate` write it — the Master gets the
    rendezvous variables like every pod, `PET_NNODES` is `minReplicas:maxReplicas` (bounds of the
    Workers, `setElasticPolicy`), and `PET_RDZV_ENDPOINT` is Worker 0's (or `rdzvHost`), never the
    Master's (`generateEnvRDZVEndpoint`) — and the user is told instead.
    """
    lo, hi = elastic.get("minReplicas"), elastic.get("maxReplicas")
    if isinstance(hi, int) and not isinstance(hi, bool) and isinstance(lo, int) and not isinstance(lo, bool):
        seen, nnodes = f"up to {hi + 1} nodes (maxReplicas {hi} + the Master)", f"PET_NNODES={lo}:{hi}"
    else:
        seen, nnodes = "up to maxReplicas + 1 nodes", "PET_NNODES=minReplicas:maxReplicas"
    host = "spec.elasticPolicy.rdzvHost" if elastic.get("rdzvHost") else "Worker 0"
    return (
        "spec.pytorchReplicaSpecs[Master]: in an elastic job (spec.elasticPolicy) the Master gets the "
        f"rendezvous env like the Workers and, running torchrun, joins the rendezvous too: {seen} "
        f"while {nnodes} counts the Workers only (as Kubeflow's operator sets it), so torchrun can "
        "leave one node waiting outside the rendezvous or start a world that includes the Master; remove the "
        f"Master, which an elastic job does not need: the rendezvous is at {host} (PET_RDZV_ENDPOINT), "
        "not the Master (Kubeflow Trainer issue 2277)"
    )


def _valid_nproc(value: str) -> bool:
    if value in ("auto", "cpu", "gpu"):
        return True
    return value.isdigit() and int(value) >= 1


def _nproc_per_node(spec: Mapping[str, Any]) -> str | None:
    """spec.nprocPerNode, else the deprecated elasticPolicy.nProcPerNode (as a string)."""
    value = spec.get("nprocPerNode")
    if value is not None:
        return str(value)
    elastic = spec.get("elasticPolicy")
    if isinstance(elastic, Mapping) and elastic.get("nProcPerNode") is not None:
        return str(elastic["nProcPerNode"])
    return None


def _elastic_range(job: JobLayout, elastic: Mapping[str, Any]) -> tuple[int, int]:
    """(minReplicas, maxReplicas) with the §2 defaults (either one from the other, else Workers)."""
    lo: Any = elastic.get("minReplicas")
    hi: Any = elastic.get("maxReplicas")
    if lo is None and hi is None:
        workers = job.count("Worker")
        return workers, workers
    low = int(lo if lo is not None else hi)
    high = int(hi if hi is not None else lo)
    return low, high


def pytorch_cluster_env(job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
    """PYTHONUNBUFFERED, MASTER_*/WORLD_SIZE/RANK (with a Master), PET_* (torchrun), elastic PET_RDZV_*.

    As Kubeflow's setPodEnv: a job with a Master gets the Master's address, WORLD_SIZE, RANK and
    PET_NODE_RANK whatever its size — a one-pod job too (WORLD_SIZE=1, RANK=0), since training
    code calls `init_process_group` unconditionally — and every non-elastic job PET_NNODES.
    """
    spec = job.spec
    raw_elastic = spec.get("elasticPolicy")
    elastic = raw_elastic if isinstance(raw_elastic, Mapping) else None
    nproc = _nproc_per_node(spec)
    env = [env_var("PYTHONUNBUFFERED", "1")]
    pods = job.total_replicas
    if job.has("Master"):
        host, port = job.pod_host("Master", 0), job.port("Master")
        world_size = pods * int(nproc) if nproc is not None and nproc.isdigit() else pods
        rank = 0 if replica_type == "Master" else index + 1
        env += [
            env_var("MASTER_ADDR", host),
            env_var("MASTER_PORT", port),
            env_var("PET_MASTER_ADDR", host),
            env_var("PET_MASTER_PORT", port),
            env_var("WORLD_SIZE", world_size),
            env_var("RANK", rank),
            env_var("PET_NODE_RANK", rank),
        ]
    if nproc is not None:
        env.append(env_var("PET_NPROC_PER_NODE", nproc))
    if elastic is None:
        env.append(env_var("PET_NNODES", pods))
        return env
    lo, hi = _elastic_range(job, elastic)
    env.append(env_var("PET_NNODES", f"{lo}:{hi}"))
    env += _rendezvous_env(job, elastic)
    return env


def _rendezvous_env(job: JobLayout, elastic: Mapping[str, Any]) -> list[dict[str, str]]:
    rdzv_type = "Worker" if job.has("Worker") else "Master"
    host = elastic.get("rdzvHost") or job.pod_host(rdzv_type, 0)
    port = elastic.get("rdzvPort") or job.port(rdzv_type)
    env = [
        env_var("PET_RDZV_ENDPOINT", f"{host}:{port}"),
        env_var("PET_RDZV_BACKEND", elastic.get("rdzvBackend") or "c10d"),
    ]
    if elastic.get("rdzvId"):
        env.append(env_var("PET_RDZV_ID", elastic["rdzvId"]))
    conf = [
        f"{c.get('key')}={c.get('value') if c.get('value') is not None else ''}"
        for c in elastic.get("rdzvConf") or []
        if isinstance(c, Mapping) and c.get("key")
    ]
    if conf:
        env.append(env_var("PET_RDZV_CONF", ",".join(conf)))
    if elastic.get("maxRestarts") is not None:
        env.append(env_var("PET_MAX_RESTARTS", elastic["maxRestarts"]))
    if elastic.get("standalone"):
        # torchrun reads boolean flags from PET_* as integers: "1" turns --standalone on
        # (the anchor's empty value makes torchrun fail to parse it).
        env.append(env_var("PET_STANDALONE", "1"))
    return env


def pytorch_succeeded(job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
    """Master succeeded if present; else all Workers, or (elastic) any Worker."""
    empty = ReplicaCounts()
    if job.has("Master"):
        return _done(job, "Master", counts.get("Master", empty))
    if not job.has("Worker"):
        return False
    workers = counts.get("Worker", empty)
    if _done(job, "Worker", workers):
        return True
    return job.spec.get("elasticPolicy") is not None and bool(workers.succeeded_indices)


def _done(job: JobLayout, replica_type: str, c: ReplicaCounts) -> bool:
    wanted = job.count(replica_type)
    return sum(1 for i in c.succeeded_indices if i < wanted) >= wanted


FRAMEWORK = PyTorch()
