"""JAXJob environment (docs/behaviour.md §4) and success rule (§5), value by value against
Kubeflow training-operator v1.9.0 `pkg/controller.v1/jax/envvar.go` (setPodEnv): each expected
value names the Go code it comes from. Addresses are kubetrain's `<pod>.<job>.<ns>.svc` where
Go writes replicaName's bare `<job>-<type>-<index>`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jobs import cluster_env, laid_out, rendered

sys.path.insert(0, str(Path(__file__).parent))

from kubeflow_go_env import jax_env
from planner_builders import container, job, replica

from kubetrain.cli import main
from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.jax import FRAMEWORK as JAX
from kubetrain.jobs.defaulting import default_job


def env(obj: dict[str, Any], index: int) -> list[tuple[str, str]]:
    return cluster_env(default_job(obj).obj, JAX, "Worker", index)


def workers(n: int, **extra: Any) -> dict[str, Any]:
    return job("JAXJob", {"Worker": replica("JAXJob", n, **extra)}, name="jx", namespace="ml")


def test_worker_env_in_kubeflows_order() -> None:
    assert env(workers(4), 3) == [
        ("PYTHONUNBUFFERED", "1"),
        ("COORDINATOR_PORT", "6666"),  # getPortFromJAXJob(Worker): the defaulted jaxjob-port
        ("COORDINATOR_ADDRESS", "jx-worker-0.jx.ml.svc"),  # replicaName(job, Worker, 0)
        ("NUM_PROCESSES", "4"),  # getTotalReplicas
        ("PROCESS_ID", "3"),  # strconv.Atoi(index)
    ]


def test_one_process_job_still_gets_the_env() -> None:
    # setPodEnv runs whatever the size: jax.distributed.initialize() works with one process too.
    assert dict(env(workers(1), 0)) == {
        "PYTHONUNBUFFERED": "1",
        "COORDINATOR_PORT": "6666",
        "COORDINATOR_ADDRESS": "jx-worker-0.jx.ml.svc",
        "NUM_PROCESSES": "1",
        "PROCESS_ID": "0",
    }


def test_coordinator_port_is_the_named_port_of_the_jax_container() -> None:
    obj = workers(
        2,
        containers=[
            container("metrics"),
            container("jax", ports=[{"name": "jaxjob-port", "containerPort": 1234}]),
        ],
    )
    assert dict(env(obj, 1))["COORDINATOR_PORT"] == "1234"


def test_env_in_every_container_and_worker_0_is_master() -> None:
    obj = workers(2, containers=[container("jax"), container("sidecar")])
    pods = {c["metadata"]["name"]: c for c in rendered(default_job(obj).obj)}
    for c in pods["jx-worker-1"]["spec"]["containers"]:
        assert {e["name"]: e["value"] for e in c["env"]}["PROCESS_ID"] == "1", c["name"]
    # JAXJobReconciler.IsMasterRole: index 0.
    assert pods["jx-worker-0"]["metadata"]["labels"]["kubetrain.io/job-role"] == "master"
    assert "kubetrain.io/job-role" not in pods["jx-worker-1"]["metadata"]["labels"]


def test_success_needs_every_worker() -> None:
    lay = laid_out(default_job(workers(3)).obj, JAX)
    done = ReplicaCounts(succeeded=3, succeeded_indices=frozenset({0, 1, 2}))
    assert JAX.succeeded(lay, {"Worker": done})
    # Worker 0 alone is not enough (UpdateJobStatus: expected = replicas - succeeded == 0).
    assert not JAX.succeeded(
        lay, {"Worker": ReplicaCounts(succeeded=1, active=2, succeeded_indices=frozenset({0}))}
    )
    assert not JAX.succeeded(lay, {})


def test_render_of_the_example_gives_every_pod_kubeflows_env(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "jax-simple.yaml"
    assert main(["render", str(example), "-n", "ml"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d is not None]
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert sorted(pods) == ["jaxjob-simple-worker-0", "jaxjob-simple-worker-1"]
    stored = default_job(
        {**yaml.safe_load(example.read_text()), "metadata": {"name": "jaxjob-simple", "namespace": "ml"}}
    ).obj
    for name, pod in pods.items():
        expected = jax_env(stored, "Worker", int(name.rsplit("-", 1)[1]))  # kubeflow_go_env.py: setPodEnv
        for c in pod["spec"]["containers"]:
            assert [(e["name"], e["value"]) for e in c["env"]] == expected[c["name"]], name
