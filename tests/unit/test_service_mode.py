"""Per-pod service mode (`kubetrain.io/service-mode: per-pod`, `--service-mode per-pod`): one
headless Service per pod in Kubeflow's shape, Kubeflow's own addresses in the environment, the
Services created before the pods and removed with them, conflicts, and the annotation's rules."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from jobs import rendered

sys.path.insert(0, str(Path(__file__).parent))

import kubeflow_go_env
from planner_builders import Sim, at, job, replica
from test_env_kubeflow import REPLICA_FIELDS, _template_env, cases, comparable

from kubetrain.commands.render import render_job
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.plan import PlannerConfig

ANNOTATION = "kubetrain.io/service-mode"


def per_pod(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("annotations", {})[ANNOTATION] = "per-pod"
    return out


def kubeflow_host(job_obj: Any, rtype: str, index: int) -> str:
    """common.GenGeneralName as Kubeflow writes it: bare, TF `<name>.<ns>.svc` (genClusterSpec)."""
    name, ns = job_obj["metadata"]["name"], job_obj["metadata"].get("namespace") or "default"
    bare = f"{name}-{rtype.lower()}-{index}"
    return f"{bare}.{ns}.svc" if job_obj["kind"] == "TFJob" else bare


PT = job(
    "PyTorchJob",
    {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)},
    name="pt",
)


def test_render_makes_one_kubeflow_shaped_service_per_pod_and_no_job_service() -> None:
    children, errors = render_job(per_pod(PT))
    assert errors == []
    services = [c for c in children if c["kind"] == "Service"]
    pods = [c for c in children if c["kind"] == "Pod"]
    assert [s["metadata"]["name"] for s in services] == [p["metadata"]["name"] for p in pods]
    assert children.index(services[-1]) < children.index(pods[0])  # Services first
    worker1 = services[2]
    assert worker1["metadata"]["name"] == "pt-worker-1"
    assert worker1["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {
            "kubetrain.io/job-name": "pt",
            "kubetrain.io/replica-type": "worker",
            "kubetrain.io/replica-index": "1",
        },
        "ports": [{"name": "pytorchjob-port", "port": 23456, "protocol": "TCP"}],
    }
    assert worker1["metadata"]["ownerReferences"][0]["kind"] == "PyTorchJob"
    # the selector picks exactly its pod
    pod_labels = pods[2]["metadata"]["labels"]
    assert all(pod_labels[k] == v for k, v in worker1["spec"]["selector"].items())
    assert all(pods[i]["metadata"]["labels"]["kubetrain.io/replica-index"] != "1" for i in (0, 1))
    env = {e["name"]: e["value"] for e in pods[1]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "pt-master-0"  # Kubeflow's bare name


def test_service_ports_are_the_framework_containers_named_ports() -> None:
    ports = [{"name": "tfjob-port", "containerPort": 3000}, {"name": "metrics", "containerPort": 9100}]
    tf = job(
        "TFJob",
        {"Worker": replica("TFJob", 2, containers=[{"name": "tensorflow", "image": "i", "ports": ports}])},
    )
    services = [c for c in render_job(per_pod(tf))[0] if c["kind"] == "Service"]
    assert services[0]["spec"]["ports"] == [
        {"name": "tfjob-port", "port": 3000, "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "protocol": "TCP"},
    ]


def test_operator_default_applies_to_jobs_without_the_annotation() -> None:
    headless, _ = render_job(copy.deepcopy(PT), service_mode="per-pod")
    assert next(c["metadata"]["name"] for c in headless if c["kind"] == "Service") == "pt-master-0"
    opted_out = copy.deepcopy(PT)
    opted_out["metadata"]["annotations"] = {ANNOTATION: "headless"}
    children, _ = render_job(opted_out, service_mode="per-pod")
    assert [c["metadata"]["name"] for c in children if c["kind"] == "Service"] == ["pt"]


@pytest.mark.parametrize(("label", "job_obj"), cases(), ids=[c[0] for c in cases()])
def test_every_replica_gets_exactly_kubeflows_env_in_per_pod_mode(
    label: str, job_obj: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kubeflow's Go code without the address substitution: per-pod mode writes its addresses."""
    monkeypatch.setattr(kubeflow_go_env, "host", kubeflow_host)
    defaulted = default_job(per_pod(job_obj)).obj
    kind = defaulted["kind"]
    names = get_framework(kind).operator_env_names
    canonical = {t.lower(): t for t in defaulted["spec"][REPLICA_FIELDS[kind]]}
    for pod in rendered(defaulted):
        labels = pod["metadata"]["labels"]
        rtype, index = (
            canonical[labels["kubetrain.io/replica-type"]],
            int(labels["kubetrain.io/replica-index"]),
        )
        expected = kubeflow_go_env.KUBEFLOW_ENV[kind](defaulted, rtype, index)
        for c in pod["spec"]["containers"]:
            user = {e["name"] for e in _template_env(defaulted, kind, rtype, c["name"])}
            got = {
                e["name"]: comparable(e["name"], e["value"]) if "value" in e else e["valueFrom"]
                for e in c.get("env") or []
                if e["name"] in names and e["name"] not in user
            }
            assert got == {
                n: comparable(n, v) if isinstance(v, str) else v
                for n, v in expected[c["name"]]
                if n not in user
            }


def test_planner_creates_services_with_the_pods_and_cleans_them_up() -> None:
    obj = per_pod(job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 1)}))
    sim = Sim(obj)
    first = sim.step(at(0))
    assert first.create_service is None
    assert sorted(sim.pod_services) == ["train-master-0", "train-worker-0"]
    assert sorted(sim.created) == ["train-master-0", "train-worker-0"]
    assert sim.step(at(1)).create_pod_services == []  # nothing new
    sim.all_phase("Running")
    sim.step(at(2))
    sim.set_phase("train-master-0", "Succeeded", exit_code=0)
    sim.step(at(3))
    assert sim.is_true("Succeeded")
    assert sim.pod_services == {}  # cleanPodPolicy Running (the default) takes them along


def test_clean_pod_policy_none_keeps_the_services() -> None:
    obj = per_pod(
        job("PyTorchJob", {"Master": replica("PyTorchJob", 1)}, run_policy={"cleanPodPolicy": "None"})
    )
    sim = Sim(obj)
    sim.step(at(0))
    sim.set_phase("train-master-0", "Succeeded", exit_code=0)
    sim.step(at(1))
    sim.step(at(2))
    assert sim.is_true("Succeeded") and list(sim.pod_services) == ["train-master-0"]


def test_a_foreign_service_of_a_pod_name_blocks_pods() -> None:
    sim = Sim(per_pod(PT))
    sim.pod_services["pt-worker-1"] = {"metadata": {"name": "pt-worker-1", "labels": {}}}
    p = sim.step(at(0))
    assert p.create_pods == []
    assert [s["metadata"]["name"] for s in p.create_pod_services] == ["pt-master-0", "pt-worker-0"]
    running = sim.condition("Running")
    assert running is not None and running["reason"] == "ServiceConflict"
    assert "pt-worker-1" in running["message"]
    assert [e.reason for e in sim.events] == ["ServiceConflict"]
    del sim.pod_services["pt-worker-1"]
    sim.step(at(1))
    assert sorted(sim.created) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]


def test_scale_down_removes_the_services_of_pods_gone() -> None:
    elastic = job(
        "PyTorchJob",
        {"Worker": replica("PyTorchJob", 3)},
        elasticPolicy={"minReplicas": 1, "maxReplicas": 3},
    )
    sim = Sim(per_pod(elastic))
    sim.step(at(0))
    assert len(sim.pod_services) == 3
    sim.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    sim.job["metadata"]["generation"] = 2
    p = sim.step(at(1))
    assert sorted(p.delete_pod_services) == ["train-worker-1", "train-worker-2"]
    assert list(sim.pod_services) == ["train-worker-0"]


def test_controller_default_per_pod() -> None:
    sim = Sim(copy.deepcopy(PT), PlannerConfig(service_mode="per-pod"))
    sim.step(at(0))
    assert sim.service is None and len(sim.pod_services) == 3


def test_bad_annotation_value_is_refused_naming_the_modes() -> None:
    obj = copy.deepcopy(PT)
    obj["metadata"]["annotations"] = {ANNOTATION: "per-replica"}
    errors = [str(e) for e in validate_job(default_job(obj).obj).errors]
    assert errors == [
        f'metadata.annotations[{ANNOTATION}]: NotSupported: "per-replica" is not supported: '
        'must be one of "headless", "per-pod"'
    ]


def test_changing_the_mode_of_a_stored_job_is_forbidden() -> None:
    old = default_job(copy.deepcopy(PT)).obj
    new = per_pod(old)
    errors = [str(e) for e in validate_job(new, old).errors]
    assert len(errors) == 1 and "Forbidden" in errors[0] and "immutable" in errors[0]
    relabel = copy.deepcopy(new)
    relabel["metadata"]["labels"] = {"team": "a"}
    assert validate_job(relabel, new).ok  # other metadata changes still pass


def test_an_invalid_stored_annotation_fails_the_job() -> None:
    obj = copy.deepcopy(PT)
    obj["metadata"]["annotations"] = {ANNOTATION: "bogus"}
    sim = Sim(obj)
    sim.step(at(0))
    assert sim.is_true("Failed") and sim.created == []
