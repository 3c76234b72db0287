"""Validation (docs/behaviour.md §3): for every rule a valid case and an invalid case with its exact path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.api.errors import ErrorKind
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

Job = dict[str, Any]


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "docker.io/library/python:3.11", **extra}


def rspec(replicas: int | None, name: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"template": {"spec": {"containers": [container(name)]}}, **extra}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def job(kind: str, types: dict[str, int | None], **spec: Any) -> Job:
    field, cname = {
        "TFJob": ("tfReplicaSpecs", "tensorflow"),
        "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
        "MXJob": ("mxReplicaSpecs", "mxnet"),
    }[kind]
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": kind,
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {field: {t: rspec(n, cname) for t, n in types.items()}, **spec},
    }


def tf(**types: int | None) -> Job:
    return job("TFJob", types)


def pt(types: dict[str, int | None], **spec: Any) -> Job:
    return job("PyTorchJob", types, **spec)


def mx(types: dict[str, int | None], mode: str | None = None) -> Job:
    return job("MXJob", types, **({"jobMode": mode} if mode else {}))


def with_(obj: Job, fn: Callable[[Job], Any]) -> Job:
    out = copy.deepcopy(obj)
    fn(out)
    return out


def tpl(obj: Job, rtype: str = "Worker") -> dict[str, Any]:
    spec = obj["spec"]
    field = next(k for k in spec if k.endswith("ReplicaSpecs"))
    template: dict[str, Any] = spec[field][rtype]["template"]
    return template


def c0(obj: Job, rtype: str = "Worker") -> dict[str, Any]:
    first: dict[str, Any] = tpl(obj, rtype)["spec"]["containers"][0]
    return first


def errors_of(obj: Job, old: Job | None = None) -> list[tuple[str, ErrorKind]]:
    result = validate_job(default_job(obj).obj, None if old is None else default_job(old).obj)
    return [(e.path, e.kind) for e in result.errors]


BASE = pt({"Master": 1, "Worker": 2})
W = "spec.pytorchReplicaSpecs[Worker]"

# (rule id, valid job, invalid job, expected path, expected kind)
CREATE_RULES: list[tuple[str, Job, Job, str, ErrorKind]] = [
    (
        "name is a DNS-1035 label",
        BASE,
        with_(BASE, lambda j: j["metadata"].update(name="Train_1")),
        "metadata.name",
        ErrorKind.INVALID,
    ),
    (
        "name must not start with a digit",
        with_(BASE, lambda j: j["metadata"].update(name="a1")),
        with_(BASE, lambda j: j["metadata"].update(name="1a")),
        "metadata.name",
        ErrorKind.INVALID,
    ),
    (
        "name is required",
        with_(BASE, lambda j: j["metadata"].update(name=None, generateName="train-")),
        with_(BASE, lambda j: j["metadata"].pop("name")),
        "metadata.name",
        ErrorKind.REQUIRED,
    ),
    (
        "longest pod name fits 63 characters",
        with_(BASE, lambda j: j["metadata"].update(name="a" * 54)),  # a…-worker-1 = 63
        with_(BASE, lambda j: j["metadata"].update(name="a" * 55)),
        "metadata.name",
        ErrorKind.INVALID,
    ),
    (
        "replica map exists",
        BASE,
        with_(BASE, lambda j: j["spec"].pop("pytorchReplicaSpecs")),
        "spec.pytorchReplicaSpecs",
        ErrorKind.REQUIRED,
    ),
    (
        "replica map non-empty",
        BASE,
        with_(BASE, lambda j: j["spec"].update(pytorchReplicaSpecs={})),
        "spec.pytorchReplicaSpecs",
        ErrorKind.REQUIRED,
    ),
    (
        "replica type is known",
        BASE,
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"].update(Chief=rspec(1, "pytorch"))),
        "spec.pytorchReplicaSpecs[Chief]",
        ErrorKind.NOT_SUPPORTED,
    ),
    (
        "replica types are unique ignoring case",
        BASE,
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"].update(worker=rspec(1, "pytorch"))),
        "spec.pytorchReplicaSpecs[worker]",
        ErrorKind.DUPLICATE,
    ),
    (
        "template has a container",
        BASE,
        with_(BASE, lambda j: tpl(j)["spec"].update(containers=[])),
        f"{W}.template.spec.containers",
        ErrorKind.REQUIRED,
    ),
    (
        "template is given",
        BASE,
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].pop("template")),
        f"{W}.template.spec.containers",
        ErrorKind.REQUIRED,
    ),
    (
        "container has an image",
        BASE,
        with_(BASE, lambda j: c0(j).pop("image")),
        f"{W}.template.spec.containers[0].image",
        ErrorKind.REQUIRED,
    ),
    (
        "container names are unique",
        BASE,
        with_(BASE, lambda j: tpl(j)["spec"]["containers"].append(container("pytorch"))),
        f"{W}.template.spec.containers[1].name",
        ErrorKind.DUPLICATE,
    ),
    (
        "template: unknown field",
        BASE,
        with_(BASE, lambda j: c0(j).update(imagePullPolcy="Always")),
        f"{W}.template.spec.containers[0].imagePullPolcy",
        ErrorKind.INVALID,
    ),
    (
        "template: wrong type",
        with_(BASE, lambda j: c0(j).update(args=["--epochs", "3"])),
        with_(BASE, lambda j: c0(j).update(args="--epochs 3")),
        f"{W}.template.spec.containers[0].args",
        ErrorKind.INVALID,
    ),
    (
        "template: invalid enum",
        with_(BASE, lambda j: c0(j).update(imagePullPolicy="IfNotPresent")),
        with_(BASE, lambda j: c0(j).update(imagePullPolicy="Sometimes")),
        f"{W}.template.spec.containers[0].imagePullPolicy",
        ErrorKind.NOT_SUPPORTED,
    ),
    (
        "template: invalid quantity",
        with_(BASE, lambda j: c0(j).update(resources={"limits": {"cpu": "500m", "nvidia.com/gpu": 1}})),
        with_(BASE, lambda j: c0(j).update(resources={"limits": {"cpu": "half"}})),
        f"{W}.template.spec.containers[0].resources.limits[cpu]",
        ErrorKind.INVALID,
    ),
    (
        "template: labels are strings",
        with_(BASE, lambda j: tpl(j).update(metadata={"labels": {"team": "vision"}})),
        with_(BASE, lambda j: tpl(j).update(metadata={"labels": {"team": 7}})),
        f"{W}.template.metadata.labels[team]",
        ErrorKind.INVALID,
    ),
    (
        "replicas >= 0",
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=0)),
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=-1)),
        f"{W}.replicas",
        ErrorKind.INVALID,
    ),
    (
        "replicas is an integer",
        BASE,
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas="2")),
        f"{W}.replicas",
        ErrorKind.INVALID,
    ),
    (
        "restartPolicy is a known value",
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(restartPolicy="ExitCode")),
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes")),
        f"{W}.restartPolicy",
        ErrorKind.NOT_SUPPORTED,
    ),
    (
        "backoffLimit >= 0",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"backoffLimit": 0})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"backoffLimit": -1})),
        "spec.runPolicy.backoffLimit",
        ErrorKind.INVALID,
    ),
    (
        "activeDeadlineSeconds >= 1",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"activeDeadlineSeconds": 1})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"activeDeadlineSeconds": 0})),
        "spec.runPolicy.activeDeadlineSeconds",
        ErrorKind.INVALID,
    ),
    (
        "ttlSecondsAfterFinished >= 0",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"ttlSecondsAfterFinished": 0})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"ttlSecondsAfterFinished": -5})),
        "spec.runPolicy.ttlSecondsAfterFinished",
        ErrorKind.INVALID,
    ),
    (
        "cleanPodPolicy is a known value",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"cleanPodPolicy": "All"})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"cleanPodPolicy": "Some"})),
        "spec.runPolicy.cleanPodPolicy",
        ErrorKind.NOT_SUPPORTED,
    ),
    (
        "minAvailable <= total replicas",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 3}})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 4}})),
        "spec.runPolicy.schedulingPolicy.minAvailable",
        ErrorKind.INVALID,
    ),
    (
        "minAvailable >= 1",
        with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 1}})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 0}})),
        "spec.runPolicy.schedulingPolicy.minAvailable",
        ErrorKind.INVALID,
    ),
    (
        "minResources are quantities",
        with_(
            BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minResources": {"cpu": "4"}}})
        ),
        with_(
            BASE,
            lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minResources": {"cpu": "4 cores"}}}),
        ),
        "spec.runPolicy.schedulingPolicy.minResources[cpu]",
        ErrorKind.INVALID,
    ),
    (
        "unknown spec field",
        BASE,
        with_(BASE, lambda j: j["spec"].update(replicaSpecs={})),
        "spec.replicaSpecs",
        ErrorKind.INVALID,
    ),
    # --- TFJob
    (
        "TF: Chief and Master not both",
        tf(Chief=1, Worker=2),
        tf(Chief=1, Master=1, Worker=2),
        "spec.tfReplicaSpecs[Master]",
        ErrorKind.FORBIDDEN,
    ),
    (
        "TF: Chief replicas <= 1",
        tf(Chief=1, Worker=2),
        tf(Chief=2, Worker=2),
        "spec.tfReplicaSpecs[Chief].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        "TF: Master replicas <= 1",
        tf(Master=0, Worker=2),
        tf(Master=3),
        "spec.tfReplicaSpecs[Master].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        "TF: successPolicy is a known value",
        with_(tf(Worker=2), lambda j: j["spec"].update(successPolicy="AllWorkers")),
        with_(tf(Worker=2), lambda j: j["spec"].update(successPolicy="AnyWorker")),
        "spec.successPolicy",
        ErrorKind.NOT_SUPPORTED,
    ),
    # --- PyTorchJob
    (
        "PT: exactly one Master",
        pt({"Master": 1, "Worker": 1}),
        pt({"Master": 2, "Worker": 1}),
        "spec.pytorchReplicaSpecs[Master].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        "PT: Master not 0",
        pt({"Master": 1}),
        pt({"Master": 0, "Worker": 1}),
        "spec.pytorchReplicaSpecs[Master].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        "PT: elastic needs Workers",
        pt({"Worker": 2}, elasticPolicy={"maxReplicas": 2}),
        pt({"Master": 1}, elasticPolicy={"minReplicas": 1, "maxReplicas": 2}),
        "spec.pytorchReplicaSpecs[Worker]",
        ErrorKind.REQUIRED,
    ),
    (
        "PT: elastic Worker replicas >= 1",
        pt({"Worker": 1}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3}),
        pt({"Worker": 0}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3}),
        "spec.pytorchReplicaSpecs[Worker].replicas",
        ErrorKind.INVALID,
    ),
    (
        "PT: minReplicas >= 1",
        pt({"Worker": 1}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3}),
        pt({"Worker": 1}, elasticPolicy={"minReplicas": 0, "maxReplicas": 3}),
        "spec.elasticPolicy.minReplicas",
        ErrorKind.INVALID,
    ),
    (
        "PT: minReplicas <= maxReplicas",
        pt({"Worker": 2}, elasticPolicy={"minReplicas": 2, "maxReplicas": 2}),
        pt({"Worker": 2}, elasticPolicy={"minReplicas": 3, "maxReplicas": 2}),
        "spec.elasticPolicy.maxReplicas",
        ErrorKind.INVALID,
    ),
    (
        "PT: elastic Workers within min..max",
        pt({"Worker": 4}, elasticPolicy={"minReplicas": 2, "maxReplicas": 4}),
        pt({"Worker": 5}, elasticPolicy={"minReplicas": 2, "maxReplicas": 4}),
        "spec.pytorchReplicaSpecs[Worker].replicas",
        ErrorKind.INVALID,
    ),
    (
        "PT: nprocPerNode positive integer",
        pt({"Worker": 2}, nprocPerNode="8"),
        pt({"Worker": 2}, nprocPerNode="0"),
        "spec.nprocPerNode",
        ErrorKind.INVALID,
    ),
    (
        "PT: nprocPerNode keyword",
        pt({"Worker": 2}, nprocPerNode="gpu"),
        pt({"Worker": 2}, nprocPerNode="tpu"),
        "spec.nprocPerNode",
        ErrorKind.INVALID,
    ),
    (
        "PT: deprecated and new nprocPerNode not both",
        pt({"Worker": 2}, elasticPolicy={"nProcPerNode": 2}),
        pt({"Worker": 2}, nprocPerNode="2", elasticPolicy={"nProcPerNode": 2}),
        "spec.elasticPolicy.nProcPerNode",
        ErrorKind.FORBIDDEN,
    ),
    (
        "PT: rdzvPort is a port",
        pt({"Worker": 2}, elasticPolicy={"rdzvPort": 29400}),
        pt({"Worker": 2}, elasticPolicy={"rdzvPort": 70000}),
        "spec.elasticPolicy.rdzvPort",
        ErrorKind.INVALID,
    ),
    # --- MXJob
    (
        "MX: local has one Worker",
        mx({"Worker": 1}),
        mx({"Worker": 2}),
        "spec.mxReplicaSpecs[Worker].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        "MX: MXTrain needs a Worker",
        mx({"Worker": 1}),
        mx({"Tuner": 1}),
        "spec.mxReplicaSpecs[Worker]",
        ErrorKind.REQUIRED,
    ),
    (
        "MX: distributed needs a Scheduler",
        mx({"Scheduler": 1, "Server": 1, "Worker": 2}),
        mx({"Server": 1, "Worker": 2}),
        "spec.mxReplicaSpecs[Scheduler]",
        ErrorKind.REQUIRED,
    ),
    (
        "MX: distributed has exactly one Scheduler",
        mx({"Scheduler": 1, "Server": 1, "Worker": 2}),
        mx({"Scheduler": 2, "Server": 1, "Worker": 2}),
        "spec.mxReplicaSpecs[Scheduler].replicas",
        ErrorKind.FORBIDDEN,
    ),
    (
        # Servers are optional (training-operator runs a Scheduler and Workers alone); Workers are not.
        "MX: distributed needs a Worker",
        mx({"Scheduler": 1, "Worker": 2}),
        mx({"Scheduler": 1, "Server": 1}),
        "spec.mxReplicaSpecs[Worker]",
        ErrorKind.REQUIRED,
    ),
    (
        "MX: distributed needs Workers",
        mx({"Scheduler": 1, "Server": 1, "Worker": 1}),
        mx({"Scheduler": 1, "Server": 1, "Worker": 0}),
        "spec.mxReplicaSpecs[Worker].replicas",
        ErrorKind.INVALID,
    ),
    (
        "MX: MXTune needs the tuner roles",
        mx({"TunerTracker": 1, "TunerServer": 1, "Tuner": 1}, "MXTune"),
        mx({"TunerTracker": 1, "Tuner": 1}, "MXTune"),
        "spec.mxReplicaSpecs[TunerServer]",
        ErrorKind.REQUIRED,
    ),
    (
        "MX: MXTune has no training roles",
        mx({"TunerTracker": 1, "TunerServer": 1, "Tuner": 1}, "MXTune"),
        mx({"TunerTracker": 1, "TunerServer": 1, "Tuner": 1, "Worker": 1}, "MXTune"),
        "spec.mxReplicaSpecs[Worker]",
        ErrorKind.FORBIDDEN,
    ),
    (
        "the job has at least one pod",
        tf(Chief=0, Worker=2),
        tf(Worker=0),
        "spec.tfReplicaSpecs",
        ErrorKind.INVALID,
    ),
    (
        "the job has at least one pod (PS and Workers at 0)",
        tf(PS=1, Worker=0),
        tf(PS=0, Worker=0),
        "spec.tfReplicaSpecs",
        ErrorKind.INVALID,
    ),
    (
        "the job has at least one pod (PyTorch Workers only)",
        pt({"Worker": 1}),
        pt({"Worker": 0}),
        "spec.pytorchReplicaSpecs",
        ErrorKind.INVALID,
    ),
    (
        "the job has at least one pod (MXNet local)",
        mx({"Worker": 1}),
        mx({"Worker": 0}),
        "spec.mxReplicaSpecs",
        ErrorKind.INVALID,
    ),
    (
        "MX: jobMode is a known value",
        mx({"Worker": 1}, "MXTrain"),
        mx({"Worker": 1}, "MXServe"),
        "spec.jobMode",
        ErrorKind.NOT_SUPPORTED,
    ),
]


@pytest.mark.parametrize(
    ("rule", "valid", "bad", "path", "kind"), CREATE_RULES, ids=[r[0] for r in CREATE_RULES]
)
def test_create_rule(rule: str, valid: Job, bad: Job, path: str, kind: ErrorKind) -> None:
    assert errors_of(valid) == [], rule
    assert (path, kind) in errors_of(bad), rule


# (replica map keys in order, expected Duplicate errors as (key, the spelling it duplicates))
CASE_DUPLICATES: list[tuple[list[str], list[tuple[str, str]]]] = [
    (["worker", "Worker"], [("worker", "Worker")]),
    (["Worker", "worker"], [("worker", "Worker")]),
    (["worker", "WORKER"], [("WORKER", "worker")]),
    (["WORKER", "Worker", "worker"], [("WORKER", "Worker"), ("worker", "Worker")]),
    (["Chief", "chief", "PS", "ps"], [("chief", "Chief"), ("ps", "PS")]),
]


@pytest.mark.parametrize(("keys", "expected"), CASE_DUPLICATES, ids=["/".join(c[0]) for c in CASE_DUPLICATES])
def test_replica_types_equal_ignoring_case_are_duplicates(
    keys: list[str], expected: list[tuple[str, str]]
) -> None:
    obj = job("TFJob", {k: i + 1 for i, k in enumerate(keys)})
    for candidate in (obj, default_job(obj).obj):  # the same report before and after defaulting
        dups = [e for e in validate_job(candidate).errors if e.kind is ErrorKind.DUPLICATE]
        assert [e.path for e in dups] == [f"spec.tfReplicaSpecs[{key}]" for key, _ in expected]
        for error, (_, other) in zip(dups, expected, strict=True):
            assert f'same replica type as "{other}"' in error.message
    assert str(dups[0]).startswith(f"spec.tfReplicaSpecs[{expected[0][0]}]: Duplicate: same replica type as")


def test_all_problems_are_reported_at_once() -> None:
    bad = with_(BASE, lambda j: j["spec"].update(runPolicy={"backoffLimit": -1}))
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    c0(bad).pop("image")
    c0(bad, "Master").update(resources={"limits": {"cpu": "x"}})
    paths = {p for p, _ in errors_of(bad)}
    assert {
        "spec.runPolicy.backoffLimit",
        "spec.pytorchReplicaSpecs[Master].replicas",
        f"{W}.template.spec.containers[0].image",
        "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.limits[cpu]",
    } <= paths


def test_messages_say_what_is_valid() -> None:
    result = validate_job(default_job(pt({"Master": 2, "Worker": 1})).obj)
    assert [str(e) for e in result.errors] == [
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: "
        "must be 1 (a PyTorchJob has exactly one Master)"
    ]
    bad = with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"))
    (error,) = validate_job(bad).errors
    assert '"Always", "OnFailure", "Never", "ExitCode"' in error.message


def test_unknown_field_message_names_valid_fields() -> None:
    (error,) = validate_job(default_job(with_(BASE, lambda j: j["spec"].update(replicaSpecs={}))).obj).errors
    assert "pytorchReplicaSpecs" in error.message and "runPolicy" in error.message


def test_wrong_kind_and_api_version() -> None:
    obj = with_(BASE, lambda j: j.update(apiVersion="kubeflow.org/v1", kind="PyTorchJob"))
    assert [(e.path, e.kind) for e in validate_job(obj, groups=("kubetrain.io",)).errors] == [
        ("apiVersion", ErrorKind.NOT_SUPPORTED)
    ]
    assert validate_job(obj).errors == []  # served as kubeflow.org/v1 (kubetrain.api.groups)
    obj = with_(BASE, lambda j: j.update(apiVersion="kubeflow.org/v1beta2", kind="PyTorchJob"))
    assert [(e.path, e.kind) for e in validate_job(obj).errors] == [("apiVersion", ErrorKind.NOT_SUPPORTED)]
    obj = with_(BASE, lambda j: j.update(kind="SparkJob"))
    assert [(e.path, e.kind) for e in validate_job(obj).errors] == [("kind", ErrorKind.NOT_SUPPORTED)]


# --- warnings ----------------------------------------------------------------------------------


def test_operator_env_var_warns() -> None:
    ok = validate_job(default_job(BASE).obj)
    assert ok.ok and ok.warnings == []
    env_job = with_(
        BASE,
        lambda j: c0(j).update(env=[{"name": "LOG", "value": "1"}, {"name": "MASTER_ADDR", "value": "x"}]),
    )
    result = validate_job(default_job(env_job).obj)
    assert result.ok
    assert any(w.startswith(f"{W}.template.spec.containers[0].env[1]: MASTER_ADDR") for w in result.warnings)


def test_default_container_rule_warns() -> None:
    renamed = with_(BASE, lambda j: c0(j).update(name="trainer"))
    result = validate_job(default_job(renamed).obj)
    assert result.ok
    assert any(w.startswith(f"{W}.template.spec.containers:") and '"trainer"' in w for w in result.warnings)


# --- update -------------------------------------------------------------------------------------


def suspended(obj: Job) -> Job:
    return with_(obj, lambda j: j["spec"].setdefault("runPolicy", {}).update(suspend=True))


ELASTIC = pt({"Worker": 2}, elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "rdzvId": "a"})

QUEUED = with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"queue": "a"}}))

# (rule id, old, allowed new, rejected new, path); the rejected update is made from the old job
# with suspend removed (`suspended(X)` → `X`) so "only while suspended" rules apply.
UPDATE_RULES: list[tuple[str, Job, Job, Job, str]] = [
    (
        "replica type set is immutable",
        BASE,
        with_(
            BASE,
            lambda j: j["spec"]["runPolicy"].update(backoffLimit=3) if "runPolicy" in j["spec"] else None,
        ),
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"].pop("Master")),
        "spec.pytorchReplicaSpecs",
    ),
    (
        "template is immutable",
        BASE,
        with_(BASE, lambda j: j["spec"].update(runPolicy={"activeDeadlineSeconds": 60})),
        with_(BASE, lambda j: c0(j).update(image="pytorch/pytorch:2.4")),
        f"{W}.template",
    ),
    (
        "replicas change only while suspended",
        suspended(BASE),
        with_(suspended(BASE), lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=5)),
        with_(BASE, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=5)),
        f"{W}.replicas",
    ),
    (
        "elastic workers change within min..max",
        ELASTIC,
        with_(ELASTIC, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=4)),
        with_(ELASTIC, lambda j: j["spec"]["elasticPolicy"].update(rdzvId="b")),
        "spec.elasticPolicy.rdzvId",
    ),
    (
        "successPolicy is immutable",
        tf(Worker=2),
        with_(tf(Worker=2), lambda j: j["spec"].update(runPolicy={"ttlSecondsAfterFinished": 10})),
        with_(tf(Worker=2), lambda j: j["spec"].update(successPolicy="AllWorkers")),
        "spec.successPolicy",
    ),
    (
        "queue changes only while suspended",
        suspended(with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"queue": "a"}}))),
        with_(
            suspended(
                with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"queue": "a"}}))
            ),
            lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].update(queue="b"),
        ),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"queue": "b"}})),
        "spec.runPolicy.schedulingPolicy.queue",
    ),
    (
        "managedBy is immutable",
        BASE,
        with_(BASE, lambda j: j["spec"].update(runPolicy={"suspend": True})),
        with_(BASE, lambda j: j["spec"].update(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})),
        "spec.runPolicy.managedBy",
    ),
]


@pytest.mark.parametrize(
    ("rule", "old", "allowed", "rejected", "path"), UPDATE_RULES, ids=[r[0] for r in UPDATE_RULES]
)
def test_update_rule(rule: str, old: Job, allowed: Job, rejected: Job, path: str) -> None:
    assert errors_of(allowed, old) == [], rule
    running_old = with_(old, lambda j: j["spec"].get("runPolicy", {}).pop("suspend", None))
    errors = errors_of(rejected, running_old)
    assert (path, ErrorKind.FORBIDDEN) in errors, rule
    result = validate_job(default_job(rejected).obj, default_job(running_old).obj)
    assert any("delete and recreate" in e.message or "suspended" in e.message for e in result.errors)


def test_metadata_and_status_changes_are_never_blocked() -> None:
    # Even a stored job that today's rules reject (too long a name) can get labels and status.
    old = default_job(with_(BASE, lambda j: j["metadata"].update(name="x" * 60))).obj
    assert not validate_job(old).ok
    new = with_(old, lambda j: (j["metadata"].update(labels={"a": "b"}), j.update(status={"conditions": []})))
    assert validate_job(new, old).ok
