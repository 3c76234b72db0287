"""PyTorch environment (MASTER_*, WORLD_SIZE, RANK, PET_*, elastic PET_RDZV_*) per docs/behaviour.md §4,
and the PyTorchJob success rule (§5)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from jobs import cluster_env, laid_out

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import elastic_pytorch, env_of, job, replica

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.pytorch import FRAMEWORK as PT
from kubetrain.operator.children import build_pods


def env(obj: dict[str, Any], rtype: str, index: int) -> dict[str, str]:
    return dict(cluster_env(obj, PT, rtype, index))


def ddp(workers: int = 3, **spec: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", workers)},
        name="ddp",
        namespace="ml",
        **spec,
    )


def test_master_worker_env_with_integer_nproc() -> None:
    obj = ddp(3, nprocPerNode="4")
    master_host = "ddp-master-0.ddp.ml.svc"
    assert env(obj, "Master", 0) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": master_host,
        "MASTER_PORT": "23456",
        "PET_MASTER_ADDR": master_host,
        "PET_MASTER_PORT": "23456",
        "WORLD_SIZE": "16",  # 4 pods x 4 processes
        "RANK": "0",
        "PET_NODE_RANK": "0",
        "PET_NPROC_PER_NODE": "4",
        "PET_NNODES": "4",
    }
    w2 = env(obj, "Worker", 2)
    assert (w2["RANK"], w2["PET_NODE_RANK"], w2["WORLD_SIZE"]) == ("3", "3", "16")


def test_world_size_is_pods_when_nproc_is_auto_or_unset() -> None:
    assert env(ddp(3, nprocPerNode="auto"), "Worker", 0)["WORLD_SIZE"] == "4"
    assert env(ddp(3, nprocPerNode="auto"), "Worker", 0)["PET_NPROC_PER_NODE"] == "auto"
    unset = env(ddp(1), "Worker", 0)
    assert unset["WORLD_SIZE"] == "2" and "PET_NPROC_PER_NODE" not in unset


def test_env_order_is_stable_and_in_pod() -> None:
    pods = build_pods(laid_out(ddp(1, nprocPerNode="2"), PT), PT)
    names = [e["name"] for e in pods[1]["spec"]["containers"][0]["env"]]
    assert names == [
        "PYTHONUNBUFFERED", "MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT",
        "WORLD_SIZE", "RANK", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_NNODES",
    ]  # fmt: skip
    assert env_of(pods[1])["RANK"] == "1"


def test_master_port_follows_named_container_port() -> None:
    obj = ddp(1)
    master = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    master["ports"] = [{"name": "pytorchjob-port", "containerPort": 29500}]
    assert env(obj, "Worker", 0)["MASTER_PORT"] == "29500"


def elastic_job(**policy: Any) -> dict[str, Any]:
    return elastic_pytorch(policy, nprocPerNode="auto")


def test_elastic_env_with_every_rendezvous_field() -> None:
    obj = elastic_job(
        minReplicas=1,
        maxReplicas=4,
        rdzvBackend="etcd",
        rdzvHost="etcd.infra",
        rdzvPort=2379,
        rdzvId="run-7",
        rdzvConf=[{"key": "timeout", "value": "900"}, {"key": "read_timeout", "value": "60"}],
        maxRestarts=3,
        standalone=True,
    )
    assert env(obj, "Worker", 1) == {
        "PYTHONUNBUFFERED": "1",
        "PET_NPROC_PER_NODE": "auto",
        "PET_NNODES": "1:4",
        "PET_RDZV_ENDPOINT": "etcd.infra:2379",
        "PET_RDZV_BACKEND": "etcd",
        "PET_RDZV_ID": "run-7",
        "PET_RDZV_CONF": "timeout=900,read_timeout=60",
        "PET_MAX_RESTARTS": "3",
        "PET_STANDALONE": "1",
    }


def test_elastic_defaults_endpoint_worker0_and_c10d() -> None:
    e = env(elastic_job(minReplicas=2, maxReplicas=2), "Worker", 0)
    assert e["PET_RDZV_ENDPOINT"] == "el-worker-0.el.ml.svc:23456"
    assert e["PET_RDZV_BACKEND"] == "c10d"
    assert e["PET_NNODES"] == "2:2"
    assert not {"PET_RDZV_ID", "PET_RDZV_CONF", "PET_MAX_RESTARTS", "PET_STANDALONE", "MASTER_ADDR"} & set(e)


def test_elastic_without_min_max_uses_worker_count() -> None:
    assert env(elastic_job(), "Worker", 0)["PET_NNODES"] == "2:2"


def test_deprecated_elastic_nproc_is_used_when_not_defaulted() -> None:
    obj = elastic_job(nProcPerNode=8)
    del obj["spec"]["nprocPerNode"]
    assert env(obj, "Worker", 0)["PET_NPROC_PER_NODE"] == "8"


def test_single_master_job_gets_a_world_of_one() -> None:
    obj = job(
        "PyTorchJob", {"Master": replica("PyTorchJob", 1)}, name="one", namespace="ml", nprocPerNode="2"
    )
    assert env(obj, "Master", 0) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": "one-master-0.one.ml.svc",
        "MASTER_PORT": "23456",
        "PET_MASTER_ADDR": "one-master-0.one.ml.svc",
        "PET_MASTER_PORT": "23456",
        "WORLD_SIZE": "2",
        "RANK": "0",
        "PET_NODE_RANK": "0",
        "PET_NPROC_PER_NODE": "2",
        "PET_NNODES": "1",
    }


def test_a_worker_spec_with_zero_replicas_makes_no_worker_pod() -> None:
    """Kubeflow Trainer issue 1709: `Worker.replicas: 0` still made a Worker pod there, holding its
    GPUs; here the job is the Master alone — one pod, a world of one."""
    obj = ddp(0)
    names = [p["metadata"]["name"] for p in build_pods(laid_out(obj, PT), PT)]
    assert names == ["ddp-master-0"]
    master = env(obj, "Master", 0)
    assert (master["WORLD_SIZE"], master["RANK"], master["PET_NNODES"]) == ("1", "0", "1")


def test_single_worker_job_without_master_gets_nnodes_only() -> None:
    obj = job("PyTorchJob", {"Worker": replica("PyTorchJob", 1)})
    assert env(obj, "Worker", 0) == {"PYTHONUNBUFFERED": "1", "PET_NNODES": "1"}


def test_single_worker_elastic_that_can_grow_is_not_standalone() -> None:
    obj = job(
        "PyTorchJob", {"Worker": replica("PyTorchJob", 1)}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3}
    )
    assert env(obj, "Worker", 0)["PET_NNODES"] == "1:3"


def done(**by_type: set[int]) -> dict[str, ReplicaCounts]:
    return {t: ReplicaCounts(succeeded=len(ix), succeeded_indices=frozenset(ix)) for t, ix in by_type.items()}


def test_success_rules() -> None:
    assert PT.succeeded(laid_out(ddp(2), PT), done(Master={0}))
    assert not PT.succeeded(laid_out(ddp(2), PT), done(Worker={0, 1}))
    workers = job("PyTorchJob", {"Worker": replica("PyTorchJob", 3)})
    assert not PT.succeeded(laid_out(workers, PT), done(Worker={0, 1}))
    assert PT.succeeded(laid_out(workers, PT), done(Worker={0, 1, 2}))
    assert PT.succeeded(laid_out(elastic_job(), PT), done(Worker={1}))
