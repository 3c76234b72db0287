"""Defaulting (docs/behaviour.md §2): one case where a default applies and one where it must not."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import job

from kubetrain.jobs.defaulting import default_job


def container(name: str = "pytorch", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "docker.io/library/python:3.11", **extra}


def rspec(
    replicas: int | None = None, containers: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"template": {"spec": {"containers": containers or [container()]}}, **extra}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def pytorch(replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return job("PyTorchJob", "job", replica_specs, spec_extra=spec)


def tfjob(replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return job("TFJob", "job", replica_specs, namespace=None, spec_extra=spec)


def mxjob(replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return job("MXJob", "job", replica_specs, namespace=None, spec_extra=spec)


def tf_container(name: str = "tensorflow") -> dict[str, Any]:
    return container(name)


def get(obj: Any, *path: str | int) -> Any:
    for part in path:
        obj = obj[part]
    return obj


# --- replica type keys ------------------------------------------------------------------------


def test_replica_type_keys_are_renamed_to_canonical_spelling_keeping_order() -> None:
    job = tfjob({"ps": rspec(2, [tf_container()]), "WORKER": rspec(3, [tf_container()])})
    out = default_job(job).obj
    assert list(out["spec"]["tfReplicaSpecs"]) == ["PS", "Worker"]
    assert out["spec"]["tfReplicaSpecs"]["PS"]["replicas"] == 2


def test_canonical_keys_are_left_alone_and_unknown_keys_kept() -> None:
    job = tfjob({"Worker": rspec(1, [tf_container()]), "Bogus": rspec(1, [tf_container()])})
    assert list(default_job(job).obj["spec"]["tfReplicaSpecs"]) == ["Worker", "Bogus"]


def test_case_duplicate_is_not_merged_silently() -> None:
    job = tfjob({"Worker": rspec(1, [tf_container()]), "worker": rspec(2, [tf_container()])})
    assert list(default_job(job).obj["spec"]["tfReplicaSpecs"]) == ["Worker", "worker"]


# (replica map keys in order, keys after defaulting): spellings of one type ignoring case are all
# kept as given, whatever their order; a type spelled once is still renamed.
CASE_DUPLICATE_KEYS: list[tuple[list[str], list[str]]] = [
    (["worker", "Worker"], ["worker", "Worker"]),
    (["Worker", "worker"], ["Worker", "worker"]),
    (["worker", "WORKER"], ["worker", "WORKER"]),
    (["WORKER", "worker", "ps"], ["WORKER", "worker", "PS"]),
    (["chief", "Chief", "evaluator"], ["chief", "Chief", "Evaluator"]),
]


@pytest.mark.parametrize(
    ("keys", "expected"), CASE_DUPLICATE_KEYS, ids=["/".join(c[0]) for c in CASE_DUPLICATE_KEYS]
)
def test_case_duplicates_keep_every_replica_spec_deterministically(
    keys: list[str], expected: list[str]
) -> None:
    job = tfjob({key: rspec(i + 1, [tf_container()]) for i, key in enumerate(keys)})
    out = default_job(job).obj
    replica_map = out["spec"]["tfReplicaSpecs"]
    assert list(replica_map) == expected
    # no replica spec is lost or swapped: each keeps its own replica count, in order
    assert [r["replicas"] for r in replica_map.values()] == list(range(1, len(keys) + 1))
    assert default_job(out).obj == out  # idempotent
    assert default_job(copy.deepcopy(job)).obj == out  # deterministic


# --- replicas and restartPolicy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "path", "expected"),
    [
        (pytorch({"Worker": rspec()}), ("Worker", "replicas"), 1),
        (pytorch({"Worker": rspec(0)}), ("Worker", "replicas"), 0),
        (pytorch({"Worker": rspec(3)}), ("Worker", "restartPolicy"), "OnFailure"),
        (pytorch({"Worker": rspec(3, restartPolicy="ExitCode")}), ("Worker", "restartPolicy"), "ExitCode"),
    ],
)
def test_replicas_and_restart_policy(job: dict[str, Any], path: tuple[str, ...], expected: Any) -> None:
    assert get(default_job(job).obj, "spec", "pytorchReplicaSpecs", *path) == expected


@pytest.mark.parametrize(
    ("build", "field", "expected"), [(tfjob, "tfReplicaSpecs", "Never"), (mxjob, "mxReplicaSpecs", "Never")]
)
def test_restart_policy_default_is_per_kind(build: Any, field: str, expected: str) -> None:
    name = "tensorflow" if build is tfjob else "mxnet"
    out = default_job(build({"Worker": rspec(1, [container(name)])})).obj
    assert out["spec"][field]["Worker"]["restartPolicy"] == expected


# --- framework container and port -------------------------------------------------------------


def test_framework_container_gets_the_named_default_port() -> None:
    out = default_job(pytorch({"Worker": rspec(1, [container("sidecar"), container("pytorch")])})).obj
    containers = out["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert "ports" not in containers[0]
    assert containers[1]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_existing_named_port_is_kept() -> None:
    ports = [{"name": "pytorchjob-port", "containerPort": 30000}]
    out = default_job(pytorch({"Worker": rspec(1, [container("pytorch", ports=ports)])})).obj
    c0 = out["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert c0["ports"] == ports


def test_other_ports_are_kept_and_default_port_appended() -> None:
    ports = [{"name": "metrics", "containerPort": 9090}]
    out = default_job(tfjob({"Worker": rspec(1, [container("tensorflow", ports=ports)])})).obj
    c0 = out["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert c0["ports"] == [*ports, {"name": "tfjob-port", "containerPort": 2222}]


def test_container_zero_is_the_framework_container_when_none_is_named_so_with_warning() -> None:
    result = default_job(mxjob({"Worker": rspec(1, [container("main"), container("side")])}))
    containers = result.obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert containers[0]["ports"] == [{"name": "mxjob-port", "containerPort": 9091}]
    assert "ports" not in containers[1]
    assert containers[0]["name"] == "main"  # not renamed
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("spec.mxReplicaSpecs[Worker].template.spec.containers:")
    assert '"mxnet"' in result.warnings[0]


def test_no_warning_when_framework_container_is_named() -> None:
    assert default_job(mxjob({"Worker": rspec(1, [container("mxnet")])})).warnings == []


# --- runPolicy ---------------------------------------------------------------------------------


def test_run_policy_defaults() -> None:
    out = default_job(pytorch({"Worker": rspec(2)})).obj
    assert out["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "suspend": False}


def test_run_policy_user_values_win() -> None:
    out = default_job(
        pytorch({"Worker": rspec(2)}, runPolicy={"cleanPodPolicy": "None", "suspend": True})
    ).obj
    assert out["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": True}


def test_min_available_only_with_gang_scheduling() -> None:
    job = pytorch({"Master": rspec(1), "Worker": rspec(3)})
    assert "schedulingPolicy" not in default_job(job).obj["spec"]["runPolicy"]
    gang = default_job(job, gang_scheduling=True).obj
    assert gang["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 4}


def test_min_available_user_value_kept() -> None:
    job = pytorch({"Worker": rspec(3)}, runPolicy={"schedulingPolicy": {"minAvailable": 2, "queue": "q"}})
    out = default_job(job, gang_scheduling=True).obj
    assert out["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 2, "queue": "q"}


# --- PyTorch elastic and nprocPerNode ----------------------------------------------------------


@pytest.mark.parametrize(
    ("elastic", "workers", "expected"),
    [
        ({"maxReplicas": 5}, 2, (5, 5)),
        ({"minReplicas": 2}, 3, (2, 2)),
        ({}, 3, (3, 3)),
        ({"minReplicas": 1, "maxReplicas": 4}, 2, (1, 4)),
    ],
)
def test_elastic_min_max(elastic: dict[str, Any], workers: int, expected: tuple[int, int]) -> None:
    out = default_job(pytorch({"Worker": rspec(workers)}, elasticPolicy=elastic)).obj
    ep = out["spec"]["elasticPolicy"]
    assert (ep["minReplicas"], ep["maxReplicas"]) == expected


def test_no_elastic_policy_is_added_to_non_elastic_jobs() -> None:
    assert "elasticPolicy" not in default_job(pytorch({"Worker": rspec(2)})).obj["spec"]


def test_nproc_per_node_defaults_to_auto() -> None:
    assert default_job(pytorch({"Worker": rspec(2)})).obj["spec"]["nprocPerNode"] == "auto"
    assert default_job(pytorch({"Worker": rspec(2)}, nprocPerNode="4")).obj["spec"]["nprocPerNode"] == "4"


def test_deprecated_nproc_per_node_is_moved_with_warning() -> None:
    result = default_job(pytorch({"Worker": rspec(2)}, elasticPolicy={"nProcPerNode": 8}))
    assert result.obj["spec"]["nprocPerNode"] == "8"
    assert "nProcPerNode" not in result.obj["spec"]["elasticPolicy"]
    assert any("deprecated" in w and "spec.nprocPerNode" in w for w in result.warnings)


def test_deprecated_nproc_per_node_is_not_moved_over_a_new_value() -> None:
    result = default_job(pytorch({"Worker": rspec(2)}, nprocPerNode="2", elasticPolicy={"nProcPerNode": 8}))
    assert result.obj["spec"]["nprocPerNode"] == "2"
    assert result.obj["spec"]["elasticPolicy"]["nProcPerNode"] == 8  # validation rejects both


# --- MXJob -------------------------------------------------------------------------------------


def test_mx_job_mode_defaults_to_mxtrain() -> None:
    assert default_job(mxjob({"Worker": rspec(1, [container("mxnet")])})).obj["spec"]["jobMode"] == "MXTrain"
    tune = mxjob({"Tuner": rspec(1, [container("mxnet")])}, jobMode="MXTune")
    assert default_job(tune).obj["spec"]["jobMode"] == "MXTune"


# --- purity, unknown fields, unknown kinds -----------------------------------------------------


def test_input_is_not_mutated() -> None:
    job = pytorch({"worker": rspec()}, elasticPolicy={"nProcPerNode": 2})
    before = copy.deepcopy(job)
    default_job(job, gang_scheduling=True)
    assert job == before


def test_template_shared_between_replica_types_is_not_mutated() -> None:
    # The framework port is added (copy-on-write) to each replica's own copy of the container.
    template = {"spec": {"containers": [tf_container(), container("sidecar")]}}
    job = tfjob({"PS": {"template": template}, "Worker": {"replicas": 2, "template": template}})
    before = copy.deepcopy(job)
    out = default_job(job, gang_scheduling=True).obj
    assert job == before
    for rtype in ("PS", "Worker"):
        containers = out["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]["containers"]
        assert containers[0]["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
        assert "ports" not in containers[1]
    assert out["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3}
    assert default_job(out, gang_scheduling=True).obj == out


def test_unknown_template_fields_are_preserved_in_order() -> None:
    c = container("pytorch", futureField={"x": 1})
    job = pytorch({"Worker": rspec(1, [c])})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["newPodField"] = True
    out = default_job(job).obj
    tspec = out["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert tspec["newPodField"] is True
    assert list(tspec["containers"][0])[:3] == ["name", "image", "futureField"]


def test_unknown_kind_is_returned_unchanged() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}
    result = default_job(obj)
    assert result.obj == obj and result.warnings == []


def test_malformed_spec_is_returned_unchanged() -> None:
    obj = {"apiVersion": "kubetrain.io/v1", "kind": "TFJob", "spec": ["not", "a", "map"]}
    assert default_job(obj).obj == obj


# --- idempotence (hypothesis) ------------------------------------------------------------------

_names = st.sampled_from(["pytorch", "main", "sidecar"])
_types = st.sampled_from(["Master", "master", "Worker", "WORKER", "worker"])
_container = st.builds(
    lambda name, ports: {"name": name, "image": "img", **({"ports": ports} if ports is not None else {})},
    _names,
    st.one_of(
        st.none(),
        st.lists(
            st.builds(
                lambda n, p: {"name": n, "containerPort": p},
                st.sampled_from(["pytorchjob-port", "http"]),
                st.integers(1, 65535),
            ),
            max_size=2,
        ),
    ),
)
_rspec = st.fixed_dictionaries(
    {"template": st.builds(lambda cs: {"spec": {"containers": cs}}, st.lists(_container, max_size=3))},
    optional={
        "replicas": st.integers(0, 5),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"]),
    },
)
_elastic = st.fixed_dictionaries(
    {},
    optional={
        "minReplicas": st.integers(1, 4),
        "maxReplicas": st.integers(1, 8),
        "nProcPerNode": st.integers(1, 8),
        "rdzvBackend": st.just("c10d"),
    },
)
_spec = st.fixed_dictionaries(
    {"pytorchReplicaSpecs": st.dictionaries(_types, _rspec, max_size=3)},
    optional={
        "elasticPolicy": _elastic,
        "nprocPerNode": st.sampled_from(["auto", "2", "gpu"]),
        "runPolicy": st.fixed_dictionaries(
            {},
            optional={
                "cleanPodPolicy": st.sampled_from(["All", "Running", "None"]),
                "suspend": st.booleans(),
                "schedulingPolicy": st.fixed_dictionaries({}, optional={"minAvailable": st.integers(1, 4)}),
            },
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(spec=_spec, gang=st.booleans())
def test_defaulting_is_idempotent(spec: dict[str, Any], gang: bool) -> None:
    job = {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "metadata": {"name": "j"}, "spec": spec}
    once = default_job(job, gang_scheduling=gang).obj
    twice = default_job(once, gang_scheduling=gang).obj
    assert twice == once


@pytest.mark.parametrize(
    ("replica_policy", "template_policy", "told"),
    [
        ("OnFailure", "Never", '"Never" is replaced by "OnFailure" on the pods'),
        ("ExitCode", "OnFailure", '"OnFailure" is replaced by "Never" on the pods'),
        (None, "Always", '"Always" is replaced by "OnFailure" on the pods'),  # PyTorch's default
        ("ExitCode", "Never", None),  # what the pods get anyway
        ("Never", "Never", None),
        ("OnFailure", None, None),
    ],
)
def test_template_restart_policy_replaced_by_the_replicas_is_warned(
    replica_policy: str | None, template_policy: str | None, told: str | None
) -> None:
    """Kubeflow Trainer #2200: the pods take the replica's restartPolicy; a different one in the
    template is replaced, and the user is told at admission, with the way to get pods recreated."""
    extra: dict[str, Any] = {"restartPolicy": replica_policy} if replica_policy else {}
    worker = rspec(2, **extra)
    if template_policy:
        worker["template"]["spec"]["restartPolicy"] = template_policy
    result = default_job(pytorch({"Master": rspec(1), "Worker": worker}))
    tspec = result.obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert tspec.get("restartPolicy") == template_policy  # the job keeps what was written
    if told is None:
        assert result.warnings == []
        return
    assert len(result.warnings) == 1
    field = "spec.pytorchReplicaSpecs[Worker].template.spec.restartPolicy"
    assert result.warnings[0].startswith(f"{field}: {told}")
    assert "podFailurePolicy rule of action Count" in result.warnings[0]
