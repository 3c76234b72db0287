"""The Framework hooks are the only seam between shared code and a framework.

A framework plugged into the registry gets defaulting, validation, the CRD's scale subresource,
the controller's clamp, the gang default and TrainingPolicy counts from its hooks alone; and no
shared module names a job kind or a framework's own field.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from jobs import job

from kubetrain.frameworks import registry
from kubetrain.frameworks.base import Framework, ReplicaBounds
from kubetrain.frameworks.tensorflow import TensorFlow
from kubetrain.jobs.crdgen import job_crd
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.prepare import prepare_job
from kubetrain.policy.resources import replica_groups

ROOT = Path(__file__).resolve().parents[2]


class ScalableTensorFlow(TensorFlow):
    """TensorFlow whose Workers of a `spec.enableDynamicWorker` job scale within 1..4, and whose
    successPolicy defaults to AllWorkers: a framework defined by its hooks alone."""

    scalable_replica_type = "Worker"
    scale_hint = "dynamic Workers can change within 1..4"
    bounds_name = "the dynamic Worker range"

    def default_spec(self, spec: dict[str, Any], counts: Mapping[Any, int | None]) -> list[str]:
        if spec.get("successPolicy") is None:
            spec["successPolicy"] = "AllWorkers"
            return ["spec.successPolicy defaulted to AllWorkers"]
        return []

    def replica_bounds(self, spec: Mapping[str, Any]) -> ReplicaBounds | None:
        return (1, 4) if spec.get("enableDynamicWorker") else None


@pytest.fixture
def scalable_tf(monkeypatch: pytest.MonkeyPatch) -> Framework:
    framework = ScalableTensorFlow()
    monkeypatch.setitem(registry.FRAMEWORKS, "TFJob", framework)
    return framework


def tfjob(workers: int, *, dynamic: bool = True) -> dict[str, Any]:
    return job(
        "TFJob",
        "dyn",
        {"Chief": 1, "Worker": workers},
        namespace="ml",
        image="example.com/tf:1",
        spec_extra={"enableDynamicWorker": dynamic},
    )


def test_a_plugged_in_framework_drives_shared_code_through_its_hooks(scalable_tf: Framework) -> None:
    defaulted = default_job(tfjob(3), gang_scheduling=True)
    assert defaulted.warnings == ["spec.successPolicy defaulted to AllWorkers"]
    spec = defaulted.obj["spec"]
    assert spec["successPolicy"] == "AllWorkers"
    # The gang default counts the scalable type at its minimum: Chief + 1 Worker.
    assert spec["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2

    scale = job_crd(scalable_tf)["spec"]["versions"][0]["subresources"]["scale"]
    assert scale["specReplicasPath"] == ".spec.tfReplicaSpecs.Worker.replicas"

    # Scaled past the bound without the webhook: the controller runs the nearest bound.
    prepared = prepare_job(tfjob(7))
    assert prepared.valid, prepared.errors
    assert prepared.layout is not None and prepared.layout.count("Worker") == 4
    assert prepared.adjustments == [
        "spec.tfReplicaSpecs[Worker].replicas 7 is outside the dynamic Worker range (1..4): running 4 Workers"
    ]

    # A TrainingPolicy counts the Workers at their maximum.
    counts = {g.replica_type: g.replicas for g in replica_groups(tfjob(2))}
    assert counts == {"Chief": 1, "Worker": 4}

    # The scalable type may change on update; any other replica count may not.
    old = default_job(tfjob(2)).obj
    resized = default_job(tfjob(3)).obj
    assert validate_job(resized, old=old).errors == []
    fixed_old, fixed_new = default_job(tfjob(2, dynamic=False)).obj, default_job(tfjob(3, dynamic=False)).obj
    (error,) = validate_job(fixed_new, old=fixed_old).errors
    assert error.path == "spec.tfReplicaSpecs[Worker].replicas"
    assert "dynamic Workers" not in error.message


def test_registered_frameworks_without_scaling_get_no_scale_subresource() -> None:
    for framework in registry.FRAMEWORKS.values():
        subresources = job_crd(framework)["spec"]["versions"][0]["subresources"]
        assert ("scale" in subresources) == (framework.scalable_replica_type is not None), framework.kind


def _code_strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """String constants of the code, docstrings left out."""
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_shared_module_names_a_job_kind_or_a_framework_field() -> None:
    # Kinds, replica map fields and each framework's own spec fields belong to frameworks/ and
    # the kind's model module; shared code reaches them through the registry and the hooks.
    names = set(registry.FRAMEWORKS) | {f.replica_field for f in registry.FRAMEWORKS.values()}
    names |= {"elasticPolicy", "jobMode", "nprocPerNode", "successPolicy"}
    models = {f"{f.job_model.__module__.replace('.', '/')}.py" for f in registry.FRAMEWORKS.values()}
    # batch/v1 JobSpec's successPolicy (a Job's field, named once there): no framework's
    models.add("kubetrain/jobs/jobsuccess.py")
    found = []
    for path in sorted((ROOT / "kubetrain").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("kubetrain/frameworks/", "kubetrain/devcluster/")) or rel in models:
            continue
        for line, value in _code_strings(ast.parse(path.read_text())):
            if value in names:
                found.append(f"{rel}:{line}: {value!r}")
    assert found == []
