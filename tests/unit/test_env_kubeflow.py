"""Every replica's environment equals what Kubeflow's Go code sets (tests/unit/kubeflow_go_env.py
transcribes it, naming each Go function), for Kubeflow's example corpus and for the edge cases
its examples lack: one-pod jobs, local and MXTune MXJobs, enableDynamicWorker, an XGBoostJob
without Workers, parameter-server and elastic PaddleJobs, sidecars."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jobs import rendered

sys.path.insert(0, str(Path(__file__).parent))

from kubeflow_corpus import NOT_CREATABLE, accepted_files, jobs_of
from kubeflow_go_env import JSON_VALUES, KUBEFLOW_ENV

from kubetrain.commands.render import render_job, with_generated_name
from kubetrain.frameworks.registry import FRAMEWORKS, get_framework
from kubetrain.jobs.defaulting import default_job

REPLICA_FIELDS = {kind: f.replica_field for kind, f in FRAMEWORKS.items()}


def container(name: str, *, env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "example.com/train:1"}
    if env:
        c["env"] = env
    return c


def make_job(kind: str, replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A job of `kind`; `replicas` maps a type to a count or to (count, containers, annotations)."""
    framework_container = FRAMEWORKS[kind].container_name
    specs: dict[str, Any] = {}
    for rtype, value in replicas.items():
        count, containers, annotations = value if isinstance(value, tuple) else (value, None, None)
        template: dict[str, Any] = {"spec": {"containers": containers or [container(framework_container)]}}
        if annotations:
            template["metadata"] = {"annotations": annotations}
        specs[rtype] = {"replicas": count, "template": template}
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": kind,
        "metadata": {"name": "job", "namespace": "ml"},
        "spec": {REPLICA_FIELDS[kind]: specs, **spec},
    }


EDGE_CASES: dict[str, dict[str, Any]] = {
    # One pod with a Master: Kubeflow still writes MASTER_*, WORLD_SIZE=1, RANK=0, PET_NNODES=1.
    "pytorch-master-only": make_job("PyTorchJob", {"Master": 1}),
    "pytorch-master-only-nproc": make_job("PyTorchJob", {"Master": 1}, nprocPerNode="4"),
    "pytorch-worker-only": make_job("PyTorchJob", {"Worker": 1}),
    "pytorch-workers-no-master": make_job("PyTorchJob", {"Worker": 3}),
    "pytorch-sidecar": make_job(
        "PyTorchJob", {"Master": (1, [container("pytorch"), container("log-shipper")], None), "Worker": 2}
    ),
    "pytorch-elastic": make_job(
        "PyTorchJob",
        {"Worker": 2},
        elasticPolicy={
            "minReplicas": 1,
            "maxReplicas": 4,
            "rdzvBackend": "etcd-v2",
            "rdzvHost": "etcd.ml.svc",
            "rdzvPort": 2379,
            "rdzvId": "abc",
            "rdzvConf": [{"key": "timeout", "value": "60"}, {"key": "k", "value": "v"}],
            "maxRestarts": 3,
            "standalone": True,
        },
    ),
    # A local MXJob: Kubeflow sets MX_CONFIG and DMLC_* (root URI empty, port 0) all the same.
    "mxnet-local": make_job("MXJob", {"Worker": 1}, jobMode="MXTrain"),
    "mxnet-dist-sidecar": make_job(
        "MXJob",
        {"Scheduler": 1, "Server": 2, "Worker": (2, [container("mxnet"), container("metrics")], None)},
        jobMode="MXTrain",
    ),
    # MXTune: labels from `tuner-server-key`, no Scheduler (DMLC_PS_ROOT_URI "", PORT 0).
    "mxnet-tune": make_job(
        "MXJob",
        {
            "TunerTracker": 1,
            "TunerServer": (2, None, {"tuner-server-key": "tunerserver"}),
            "Tuner": 1,
        },
        jobMode="MXTune",
    ),
    "tf-single-worker": make_job("TFJob", {"Worker": 1}),
    "tf-chief-ps-workers-evaluator": make_job("TFJob", {"Chief": 1, "PS": 2, "Worker": 3, "Evaluator": 1}),
    "tf-zero-ps": make_job("TFJob", {"PS": 0, "Worker": 2}),
    "tf-sidecar": make_job(
        "TFJob", {"Worker": (2, [container("tensorboard"), container("tensorflow")], None)}
    ),
    "tf-dynamic-worker": make_job(
        "TFJob", {"Chief": 1, "PS": 2, "Worker": 3, "Evaluator": 1}, enableDynamicWorker=True
    ),
    "tf-dynamic-worker-no-ps": make_job("TFJob", {"Worker": 2}, enableDynamicWorker=True),
    # A Master alone: MASTER_*, WORLD_SIZE=1, RANK=0, no WORKER_* (total replicas 1).
    "xgboost-master-only": make_job("XGBoostJob", {"Master": 1}),
    "xgboost-zero-workers": make_job("XGBoostJob", {"Master": 1, "Worker": 0}),
    "xgboost-sidecar": make_job(
        "XGBoostJob", {"Master": 1, "Worker": (3, [container("xgboost"), container("log-shipper")], None)}
    ),
    "jax-one-process": make_job("JAXJob", {"Worker": 1}),
    "jax-sidecar": make_job("JAXJob", {"Worker": (4, [container("metrics"), container("jax")], None)}),
    # Collective PaddleJob of one pod: Worker 0 still listens on $(POD_IP_DUMMY).
    "paddle-one-worker": make_job("PaddleJob", {"Worker": 1}),
    # Parameter-server mode: two servers (Masters) and three trainers (Workers), a sidecar.
    "paddle-ps-sidecar": make_job(
        "PaddleJob", {"Master": 2, "Worker": (3, [container("paddle"), container("log-shipper")], None)}
    ),
    # Elastic: Kubeflow's variables do not change (PADDLE_NNODES is the pod count, not min:max).
    "paddle-elastic": make_job(
        "PaddleJob", {"Worker": 2}, elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "maxRestarts": 3}
    ),
    "paddle-ps-elastic": make_job("PaddleJob", {"Master": 1, "Worker": 3}, elasticPolicy={"maxRestarts": 2}),
}


def cases() -> list[tuple[str, dict[str, Any]]]:
    out = [(name, job) for name, job in EDGE_CASES.items()]
    for relpath in accepted_files():
        for i, job in enumerate(jobs_of(relpath)):
            out.append((f"{relpath}#{i + 1}", with_generated_name(job, relpath)))
    return out


def comparable(name: str, value: Any) -> Any:
    return json.loads(value) if name in JSON_VALUES else value


def env_value(var: dict[str, Any]) -> Any:
    """An EnvVar's value, or its `valueFrom` when Kubernetes fills it in (POD_IP_DUMMY)."""
    return var["valueFrom"] if "valueFrom" in var else comparable(var["name"], var["value"])


@pytest.mark.parametrize(("label", "job"), cases(), ids=[c[0] for c in cases()])
def test_every_replica_gets_kubeflows_env(label: str, job: dict[str, Any]) -> None:
    defaulted = default_job(copy.deepcopy(job)).obj
    kind = defaulted["kind"]
    operator_names = get_framework(kind).operator_env_names
    canonical = {t.lower(): t for t in defaulted["spec"][REPLICA_FIELDS[kind]]}
    pods = rendered(defaulted)
    assert pods
    for pod in pods:
        labels = pod["metadata"]["labels"]
        rtype, index = (
            canonical[labels["kubetrain.io/replica-type"]],
            int(labels["kubetrain.io/replica-index"]),
        )
        expected = KUBEFLOW_ENV[kind](defaulted, rtype, index)
        assert [c["name"] for c in pod["spec"]["containers"]] == list(expected)
        for c in pod["spec"]["containers"]:
            user = {e["name"] for e in _template_env(defaulted, kind, rtype, c["name"])}
            got = {
                e["name"]: env_value(e)
                for e in c.get("env") or []
                if e["name"] in operator_names and e["name"] not in user
            }
            want = {n: comparable(n, v) for n, v in expected[c["name"]] if n not in user}
            assert got == want, f"{pod['metadata']['name']} container {c['name']}"
            names = [e["name"] for e in c.get("env") or []]
            assert len(names) == len(set(names)), f"duplicate env in {pod['metadata']['name']}"


def _template_env(job: dict[str, Any], kind: str, rtype: str, container_name: str) -> list[dict[str, Any]]:
    spec = job["spec"][REPLICA_FIELDS[kind]][rtype]["template"]["spec"]
    for c in spec["containers"]:
        if c["name"] == container_name:
            return list(c.get("env") or [])
    return []


def test_mxtune_start_script_finds_its_labels() -> None:
    """Kubeflow's MXTune start-job.py reads `labels["tunerserver"]` on the TunerServer and Tuner."""
    defaulted = default_job(copy.deepcopy(EDGE_CASES["mxnet-tune"])).obj
    pods = [c for c in render_job(defaulted)[0] if c["kind"] == "Pod"]
    for pod in pods:
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        config = json.loads(env["MX_CONFIG"])
        assert config["labels"]["tunerserver"] == "tunerserver"
        assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"]) == ("", "0")


def test_corpus_cases_cover_every_kind() -> None:
    kinds = {job["kind"] for name, job in cases() if "/" in name and name.split("#")[0] not in NOT_CREATABLE}
    # Every kind of Kubeflow's training operator; MPIJob follows mpi-operator instead (its own
    # example corpus and Go-derived expectations: tests/unit/test_env_mpi.py,
    # tests/integration/test_controller_mpi.py).
    training_operator_kinds = set(FRAMEWORKS) - {"MPIJob"}
    assert kinds == training_operator_kinds == set(KUBEFLOW_ENV)
