"""PaddleJob: the PADDLE_* environment per docs/behaviour.md §4 — each expected value names the
function of Kubeflow training-operator v1.9.0 (`pkg/controller.v1/paddlepaddle/envvar.go`) it
comes from — and the success rule (§5), defaulting (§2), validation (§3) and elastic scaling."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from jobs import cluster_env, laid_out, rendered

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import container, job, replica

from kubetrain.commands.render import render_job
from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.paddle import FRAMEWORK as PADDLE
from kubetrain.jobs.crdgen import job_crd
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.prepare import prepare_job

POD_IP = {"fieldRef": {"fieldPath": "status.podIP"}}


def env(obj: dict[str, Any], rtype: str, index: int) -> list[tuple[str, Any]]:
    """The variables in order; a `valueFrom` variable as its source."""
    return cluster_env(obj, PADDLE, rtype, index)


def collective(workers: int = 3, **spec: Any) -> dict[str, Any]:
    return job("PaddleJob", {"Worker": replica("PaddleJob", workers)}, name="pd", namespace="ml", **spec)


def ps(masters: int = 2, workers: int = 3, **spec: Any) -> dict[str, Any]:
    return job(
        "PaddleJob",
        {"Master": replica("PaddleJob", masters), "Worker": replica("PaddleJob", workers)},
        name="pd",
        namespace="ml",
        **spec,
    )


def test_collective_worker0_listens_on_its_pod_ip_others_dial_it() -> None:
    obj = collective(3)
    assert env(obj, "Worker", 0) == [
        ("PYTHONUNBUFFERED", "1"),  # setPodEnv: PYTHONUNBUFFERED
        ("PADDLE_JOB_ID", "pd"),  # setPodEnv: EnvJobID = paddlejob.Name
        ("PADDLE_NNODES", "3"),  # setPodEnv: EnvNumNodes = getTotalReplicas
        # setPodEnv, Master nil and rank == 0: POD_IP_DUMMY from status.podIP, then the reference
        # (it must come after the variable it names for the kubelet to expand it).
        ("POD_IP_DUMMY", POD_IP),
        ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),  # getPortFromPaddleJob: PaddleJobDefaultPort
    ]
    assert env(obj, "Worker", 2) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", "pd"),
        ("PADDLE_NNODES", "3"),
        # setPodEnv, Master nil and rank != 0: replicaName(job, Worker, 0), as kubetrain addresses
        # it under the job's headless Service.
        ("PADDLE_MASTER", "pd-worker-0.pd.ml.svc:36543"),
    ]


def test_parameter_server_master0_is_the_endpoint_and_roles_are_counted() -> None:
    obj = ps(2, 3)
    assert env(obj, "Master", 0) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", "pd"),
        ("PADDLE_NNODES", "5"),  # getTotalReplicas: 2 Masters + 3 Workers
        # setPodEnv, PS mode, rank == 0 && rtype == master.
        ("POD_IP_DUMMY", POD_IP),
        ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
        ("PADDLE_SERVER_NUM", "1"),  # setPodEnv: EnvServerNum on Masters
    ]
    master1 = dict(env(obj, "Master", 1))
    assert master1["PADDLE_MASTER"] == "pd-master-0.pd.ml.svc:36543"  # replicaName(job, Master, 0)
    assert "POD_IP_DUMMY" not in master1 and master1["PADDLE_SERVER_NUM"] == "1"
    # Worker 0 is not the endpoint in PS mode (the rank-0 test also checks the type).
    assert env(obj, "Worker", 0) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", "pd"),
        ("PADDLE_NNODES", "5"),
        ("PADDLE_MASTER", "pd-master-0.pd.ml.svc:36543"),
        ("PADDLE_TRAINER_NUM", "1"),  # setPodEnv: EnvTrainerNum (PADDLE_TRAINER_NUM) on Workers
    ]


def test_endpoint_port_is_the_rendezvous_types_master_port() -> None:
    """getPortFromPaddleJob: the `master` port of the `paddle` container of the rendezvous type."""
    master = replica(
        "PaddleJob", 1, containers=[container("paddle", ports=[{"name": "master", "containerPort": 4000}])]
    )
    obj = job("PaddleJob", {"Master": master, "Worker": replica("PaddleJob", 1)}, name="pd", namespace="ml")
    assert dict(env(obj, "Worker", 0))["PADDLE_MASTER"] == "pd-master-0.pd.ml.svc:4000"
    assert dict(env(obj, "Master", 0))["PADDLE_MASTER"] == "$(POD_IP_DUMMY):4000"


def test_elastic_job_env_is_kubeflows_plain_env() -> None:
    """Kubeflow v1.9 sets no elastic variables for Paddle: PADDLE_NNODES is the pod count."""
    obj = collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4})
    assert env(obj, "Worker", 1) == env(collective(2), "Worker", 1)


def test_every_container_gets_the_env_in_the_pod_and_the_pod_ip_resolves_first() -> None:
    spec = replica("PaddleJob", 2, containers=[container("paddle"), container("log-shipper")])
    obj = job("PaddleJob", {"Worker": spec}, name="pd", namespace="ml")
    pod0 = next(c for c in rendered(default_job(obj).obj) if c["metadata"]["name"] == "pd-worker-0")
    for c in pod0["spec"]["containers"]:
        names = [e["name"] for e in c["env"]]
        assert names.index("POD_IP_DUMMY") < names.index("PADDLE_MASTER")
        assert c["env"][names.index("POD_IP_DUMMY")] == {"name": "POD_IP_DUMMY", "valueFrom": POD_IP}
    ports = pod0["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "master", "containerPort": 36543}]


def test_a_variable_the_container_sets_keeps_its_value_with_a_warning() -> None:
    mine = container("paddle", env=[{"name": "PADDLE_MASTER", "value": "my-master:1"}])
    obj = job("PaddleJob", {"Worker": replica("PaddleJob", 2, containers=[mine])}, name="pd", namespace="ml")
    defaulted = default_job(obj).obj
    assert any("PADDLE_MASTER is also set by kubetrain" in w for w in validate_job(defaulted).warnings)
    pods = [c for c in render_job(defaulted)[0] if c["kind"] == "Pod"]
    for pod in pods:
        values = [e.get("value") for e in pod["spec"]["containers"][0]["env"] if e["name"] == "PADDLE_MASTER"]
        assert values == ["my-master:1"]


def counts(succeeded: set[int]) -> ReplicaCounts:
    return ReplicaCounts(succeeded=len(succeeded), succeeded_indices=frozenset(succeeded))


def test_success_rules() -> None:
    """UpdateJobStatus: with a Master spec every Master succeeded, else every Worker."""
    ps_job = laid_out(ps(2, 3), PADDLE)
    assert not PADDLE.succeeded(ps_job, {"Master": counts({0}), "Worker": counts({0, 1, 2})})
    assert PADDLE.succeeded(ps_job, {"Master": counts({0, 1}), "Worker": counts(set())})
    coll = laid_out(collective(3), PADDLE)
    assert not PADDLE.succeeded(coll, {"Worker": counts({0, 1})})
    assert PADDLE.succeeded(coll, {"Worker": counts({0, 1, 2})})
    # Elastic is no exception (Kubeflow has no "any Worker" rule for Paddle).
    elastic = laid_out(collective(3, elasticPolicy={"minReplicas": 1, "maxReplicas": 3}), PADDLE)
    assert not PADDLE.succeeded(elastic, {"Worker": counts({0})})


def test_defaults_port_restart_policy_and_elastic_bounds() -> None:
    """SetDefaults_PaddleJob: replicas 1, restartPolicy OnFailure, port master/36543;
    setPaddleElasticPolicy: one bound from the other, else both from the Worker count."""
    obj = job("PaddleJob", {"worker": {"template": {"spec": {"containers": [container("paddle")]}}}})
    spec = default_job(obj).obj["spec"]
    worker = spec["paddleReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (1, "OnFailure")
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "master", "containerPort": 36543}
    ]
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"

    def bounds(policy: dict[str, Any], workers: int = 3) -> tuple[Any, Any]:
        out = default_job(collective(workers, elasticPolicy=policy)).obj["spec"]["elasticPolicy"]
        return out.get("minReplicas"), out.get("maxReplicas")

    assert bounds({"maxReplicas": 4}) == (4, 4)
    assert bounds({"minReplicas": 2}) == (2, 2)
    assert bounds({}) == (3, 3)
    assert bounds({"minReplicas": 1, "maxReplicas": 5}) == (1, 5)
    assert "elasticPolicy" not in default_job(collective(3)).obj["spec"]


def errors_of(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_job(default_job(obj).obj).errors]


def test_kubeflow_examples_shape_is_valid() -> None:
    assert errors_of(collective(2)) == []
    assert errors_of(ps(1, 2)) == []
    assert errors_of(collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4})) == []


def test_every_error_at_once_with_field_paths() -> None:
    bad_container = {"name": "paddle"}  # no image
    obj = job(
        "PaddleJob",
        {
            "Master": replica("PaddleJob", 0),
            "Worker": replica("PaddleJob", 2, containers=[bad_container]),
            "Scheduler": replica("PaddleJob", 1),
        },
        name="pd",
        elasticPolicy={"minReplicas": 3, "maxReplicas": 2, "maxRestarts": -1},
    )
    errors = errors_of(obj)
    expected = [
        "spec.paddleReplicaSpecs[Scheduler]: NotSupported:",  # validateSpec: NotSupported type
        "spec.paddleReplicaSpecs[Worker].template.spec.containers[0].image: Required:",
        "spec.paddleReplicaSpecs[Master].replicas: Invalid: must be at least 1",
        "spec.elasticPolicy.maxReplicas: Invalid: must be greater than or equal to minReplicas (3), got 2",
        "spec.elasticPolicy.maxRestarts: Invalid: must be greater than or equal to 0, got -1",
    ]
    for prefix in expected:
        assert any(e.startswith(prefix) for e in errors), (prefix, errors)


def test_collective_job_needs_a_worker_to_rendezvous_at() -> None:
    errors = errors_of(collective(0))
    assert errors == [
        "spec.paddleReplicaSpecs[Worker].replicas: Invalid: must be at least 1 in a collective "
        "PaddleJob (no Master): Worker 0 is its rendezvous endpoint"
    ]


def test_elastic_rules() -> None:
    master_only = job(
        "PaddleJob", {"Master": replica("PaddleJob", 1)}, name="pd", elasticPolicy={"minReplicas": 1}
    )
    assert any(e.startswith("spec.paddleReplicaSpecs[Worker]: Required:") for e in errors_of(master_only))
    outside = collective(5, elasticPolicy={"minReplicas": 1, "maxReplicas": 4})
    assert errors_of(outside) == [
        "spec.paddleReplicaSpecs[Worker].replicas: Invalid: 5 is outside elasticPolicy "
        "minReplicas..maxReplicas (1..4)"
    ]
    assert any(
        e.startswith("spec.elasticPolicy.minReplicas: Invalid")
        for e in errors_of(collective(1, elasticPolicy={"minReplicas": 0, "maxReplicas": 2}))
    )


def test_names_must_leave_room_for_the_largest_elastic_pod() -> None:
    """Pod `<job>-worker-<maxReplicas-1>` must fit in 63 characters (Kubeflow accepted such jobs)."""
    name = "p" * 54  # + "-worker-9" is 63 characters, + "-worker-10" 64
    fits = collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 10})
    fits["metadata"]["name"] = name
    assert errors_of(fits) == []
    too_long = copy.deepcopy(fits)
    too_long["spec"]["elasticPolicy"]["maxReplicas"] = 11
    assert any(e.startswith("metadata.name: Invalid") for e in errors_of(too_long))


def test_workers_scale_within_bounds_like_elastic_pytorch() -> None:
    scale = job_crd(PADDLE)["spec"]["versions"][0]["subresources"]["scale"]
    assert scale == {
        "specReplicasPath": ".spec.paddleReplicaSpecs.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }
    old = default_job(collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4})).obj
    resized = copy.deepcopy(old)
    resized["spec"]["paddleReplicaSpecs"]["Worker"]["replicas"] = 4
    assert validate_job(resized, old).errors == []  # elastic Workers resize while running
    fixed_old = default_job(collective(2)).obj
    fixed = copy.deepcopy(fixed_old)
    fixed["spec"]["paddleReplicaSpecs"]["Worker"]["replicas"] = 3
    assert [e.path for e in validate_job(fixed, fixed_old).errors] == [
        "spec.paddleReplicaSpecs[Worker].replicas"
    ]
    # `kubectl scale` past maxReplicas (no webhook sees it): the controller runs the bound.
    scaled = copy.deepcopy(old)
    scaled["spec"]["paddleReplicaSpecs"]["Worker"]["replicas"] = 9
    prepared = prepare_job(scaled)
    assert prepared.layout is not None and prepared.layout.count("Worker") == 4
    nnodes = [
        e["value"] for e in PADDLE.cluster_env(prepared.layout, "Worker", 1) if e["name"] == "PADDLE_NNODES"
    ]
    assert nnodes == ["4"]


def test_metrics_ask_for_an_hpa_within_the_bounds() -> None:
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    obj = default_job(
        collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "metrics": metrics})
    ).obj
    (hpa,) = rendered(obj, "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PaddleJob",
        "name": "pd",
    }
    assert hpa["spec"]["metrics"] == metrics
    no_metrics = default_job(collective(2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4})).obj
    assert not [c for c in render_job(no_metrics)[0] if c["kind"] == "HorizontalPodAutoscaler"]
