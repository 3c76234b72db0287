"""XGBoostJob environment (docs/behaviour.md §4) and success rule (§5), value by value against
Kubeflow training-operator v1.9.0 `pkg/controller.v1/xgboost/xgboost.go` (SetPodEnv): each
expected value names the Go code it comes from. Addresses are kubetrain's
`<pod>.<job>.<ns>.svc` where Go writes replicaName's bare `<job>-<type>-<index>`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jobs import cluster_env, laid_out, rendered

sys.path.insert(0, str(Path(__file__).parent))

from kubeflow_go_env import xgboost_env
from planner_builders import container, job, replica

from kubetrain.cli import main
from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.xgboost import FRAMEWORK as XGB
from kubetrain.jobs.defaulting import default_job

MASTER = "xgb-master-0.xgb.ml.svc"


def env(obj: dict[str, Any], rtype: str, index: int) -> list[tuple[str, str]]:
    return cluster_env(default_job(obj).obj, XGB, rtype, index)


def dist(workers: int = 2, port: int | None = None) -> dict[str, Any]:
    def rspec() -> dict[str, Any]:
        ports = [{"name": "xgboostjob-port", "containerPort": port}] if port else None
        return replica(
            "XGBoostJob", 1, containers=[container("xgboost", **({"ports": ports} if ports else {}))]
        )

    master, worker = rspec(), rspec()
    worker["replicas"] = workers
    return job("XGBoostJob", {"Master": master, "Worker": worker}, name="xgb", namespace="ml")


def test_master_env_in_kubeflows_order() -> None:
    assert env(dist(), "Master", 0) == [
        ("MASTER_PORT", "9999"),  # getPortFromXGBoostJob(Master): the defaulted xgboostjob-port
        ("MASTER_ADDR", MASTER),  # replicaName(job, Master, 0)
        ("WORLD_SIZE", "3"),  # computeTotalReplicas: 1 Master + 2 Workers
        ("RANK", "0"),  # strconv.Atoi(index); no master offset for the Master
        ("PYTHONUNBUFFERED", "1"),
        ("WORKER_PORT", "9999"),  # getPortFromXGBoostJob(Worker), set when totalReplicas > 1
        # replicaName(job, Worker, i) for i in 0..totalReplicas-2
        ("WORKER_ADDRS", "xgb-worker-0.xgb.ml.svc,xgb-worker-1.xgb.ml.svc"),
    ]


def test_worker_rank_adds_the_master_offset() -> None:
    values = dict(env(dist(workers=3), "Worker", 2))
    assert values["RANK"] == "3"  # index 2 + Master replicas 1 ("Add master offset for worker pods")
    assert values["WORLD_SIZE"] == "4"
    assert values["MASTER_ADDR"] == MASTER
    assert values["WORKER_ADDRS"].split(",") == [f"xgb-worker-{i}.xgb.ml.svc" for i in range(3)]


def test_ports_come_from_each_types_named_port() -> None:
    obj = dist(port=9991)  # Kubeflow's examples use 9991
    obj["spec"]["xgbReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "xgboostjob-port", "containerPort": 9000}
    ]
    values = dict(env(obj, "Worker", 0))
    assert (values["MASTER_PORT"], values["WORKER_PORT"]) == ("9991", "9000")


def test_master_alone_gets_master_env_but_no_worker_env() -> None:
    obj = job("XGBoostJob", {"Master": replica("XGBoostJob", 1)}, name="xgb", namespace="ml")
    # totalReplicas == 1: WORKER_PORT and WORKER_ADDRS are not set; the rest is, whatever the size.
    assert env(obj, "Master", 0) == [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", MASTER),
        ("WORLD_SIZE", "1"),
        ("RANK", "0"),
        ("PYTHONUNBUFFERED", "1"),
    ]


def test_env_goes_into_every_container() -> None:
    obj = dist()
    obj["spec"]["xgbReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(container("sidecar"))
    pods = rendered(default_job(obj).obj)
    pod = next(c for c in pods if c["metadata"]["name"] == "xgb-worker-1")
    for c in pod["spec"]["containers"]:
        assert {e["name"]: e["value"] for e in c["env"]}["RANK"] == "2", c["name"]
    master = next(c for c in pods if c["metadata"]["name"] == "xgb-master-0")
    assert master["metadata"]["labels"]["kubetrain.io/job-role"] == "master"  # IsMasterRole: Master


def test_success_is_the_masters() -> None:
    lay = laid_out(default_job(dist()).obj, XGB)
    assert XGB.succeeded(lay, {"Master": ReplicaCounts(succeeded=1, succeeded_indices=frozenset({0}))})
    # Workers finishing first do not finish the job (UpdateJobStatus looks at the Master only).
    all_workers = ReplicaCounts(succeeded=2, succeeded_indices=frozenset({0, 1}))
    assert not XGB.succeeded(lay, {"Worker": all_workers, "Master": ReplicaCounts(active=1)})
    assert not XGB.succeeded(lay, {})


def test_render_of_the_example_gives_every_pod_kubeflows_env(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "xgboost-dist.yaml"
    assert main(["render", str(example), "-n", "ml"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d is not None]
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert sorted(pods) == [
        "xgboost-dist-iris-master-0",
        "xgboost-dist-iris-worker-0",
        "xgboost-dist-iris-worker-1",
    ]
    stored = default_job(
        {**yaml.safe_load(example.read_text()), "metadata": {"name": "xgboost-dist-iris", "namespace": "ml"}}
    ).obj
    for name, pod in pods.items():
        rtype, index = name.split("-")[-2].capitalize(), int(name.split("-")[-1])
        expected = xgboost_env(stored, rtype, index)  # tests/unit/kubeflow_go_env.py: SetPodEnv
        for c in pod["spec"]["containers"]:
            assert [(e["name"], e["value"]) for e in c["env"]] == expected[c["name"]], name
    assert dict(expected["xgboost"])["MASTER_PORT"] == "9991"  # the example's own port
