"""The required properties of the Kubernetes types inside Trainer's CRDs (an env variable's
`valueFrom` references, volume mounts, volume sources, node affinity, …) are carried by
kubetrain's TrainJob and runtime CRDs (kubetrain.jobs.trainerrequired), so the API server refuses
what Trainer's CRDs refuse, before any webhook — where such a TrainJob used to be admitted and
its pods refused when created. docs/behaviour.md §11, "The CRDs against Trainer's"."""

from __future__ import annotations

import copy
import os
import subprocess
from typing import Any

import pytest
import yaml
from trainjobs import replicated_jobs

from kubetrain.devcluster.apiserver.kinds.schema import validate
from kubetrain.jobs.trainercrds import trainer_crds

Obj = dict[str, Any]
SCHEMAS = {
    crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for crd in trainer_crds()
}
PATCH_POD = (
    "runtimePatches",
    0,
    "trainingRuntimeSpec",
    "template",
    "spec",
    "replicatedJobs",
    0,
    "template",
    "spec",
)
# Trainer's required properties kubetrain's schema leaves to the webhook, which refuses the same
# objects naming the field (docs/behaviour.md §11, Admission), or to the pods' own validation.
LEFT_TO_THE_WEBHOOK = {
    ("TrainJob", "spec"): ["runtimeRef"],
    ("TrainJob", "spec.runtimeRef"): ["name"],
    ("TrainingRuntime", "spec.mlPolicy.torch.envInjection.targets[]"): ["containerNames"],
    ("TrainingRuntime", "spec.template.spec.replicatedJobs[].dependsOn[]"): ["status"],
    ("TrainingRuntime", "spec.template.spec.replicatedJobs[].template.spec"): ["template"],
    ("TrainingRuntime", "spec.template.spec.replicatedJobs[].template.spec.podFailurePolicy"): ["rules"],
    ("TrainingRuntime", "spec.template.spec.replicatedJobs[].template.spec.podFailurePolicy.rules[]"): [
        "action"
    ],
    (
        "TrainingRuntime",
        "spec.template.spec.replicatedJobs[].template.spec.podFailurePolicy.rules[].onExitCodes",
    ): [
        "operator",
        "values",
    ],
    ("TrainingRuntime", "spec.template.spec.replicatedJobs[].template.spec.template.spec"): ["containers"],
}


def trainjob(**spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def causes(obj: Obj) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate(obj, SCHEMAS[obj["kind"]])]


@pytest.mark.parametrize(
    ("value_from", "field"),
    [
        ({"secretKeyRef": {"name": "s"}}, "secretKeyRef.key"),
        ({"configMapKeyRef": {"name": "c"}}, "configMapKeyRef.key"),
        ({"fieldRef": {}}, "fieldRef.fieldPath"),
        ({"resourceFieldRef": {"containerName": "node"}}, "resourceFieldRef.resource"),
    ],
)
def test_an_env_reference_without_its_key_is_refused_by_the_schema(value_from: Obj, field: str) -> None:
    """Trainer's CRD requires them; kubetrain admitted such a TrainJob, whose pods the API server
    then refused (`Required value`), so it never started."""
    env = [{"name": "A", "valueFrom": value_from}]
    got = causes(trainjob(trainer={"env": env}))
    assert got == [f"spec.trainer.env[0].valueFrom.{field}: Required value"]
    for where in ("dataset", "model"):
        got = causes(trainjob(initializer={where: {"env": copy.deepcopy(env)}}))
        assert got == [f"spec.initializer.{where}.env[0].valueFrom.{field}: Required value"]
    full = copy.deepcopy(value_from)
    full[next(iter(full))].update(key="k", fieldPath="metadata.name", resource="limits.cpu")
    assert causes(trainjob(trainer={"env": [{"name": "A", "valueFrom": full}]})) == []


def test_a_runtime_patch_mount_without_a_path_and_a_runtime_mount_without_a_name_are_refused() -> None:
    pod = {"containers": [{"name": "node", "volumeMounts": [{"name": "data"}]}]}
    patch = {
        "manager": "acme.io/m",
        "trainingRuntimeSpec": {"template": {"spec": replicated_jobs({"node": pod})}},
    }
    got = causes(trainjob(runtimePatches=[patch]))
    assert got == [
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec."
        "containers[0].volumeMounts[0].mountPath: Required value"
    ]
    mount = {"containers": [{"name": "node", "volumeMounts": [{"mountPath": "/data"}]}]}
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt", "namespace": "default"},
        "spec": {"template": {"spec": replicated_jobs({"node": mount})}},
    }
    assert causes(runtime) == [
        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].volumeMounts[0]."
        "name: Required value"
    ]


def _required(schema: Obj, at: str = "") -> dict[str, list[str]]:
    """Every node of a schema, by path, with its required properties."""
    out = {at: list(schema.get("required") or [])}
    for name, sub in (schema.get("properties") or {}).items():
        out |= _required(sub, f"{at}.{name}" if at else name)
    if isinstance(schema.get("items"), dict):
        out |= _required(schema["items"], f"{at}[]")
    return out


@pytest.mark.skipif(not os.environ.get("KUBETRAIN_TRAINER_GIT_DIR"), reason="no clone of Trainer given")
@pytest.mark.parametrize(
    ("plural", "kind"), [("trainjobs", "TrainJob"), ("trainingruntimes", "TrainingRuntime")]
)
def test_every_property_trainers_crds_require_is_required_here(plural: str, kind: str) -> None:
    """Against Trainer's newest CRDs: each required property of a node kubetrain's schema
    describes is required here too, but those the webhook answers for. (A node kubetrain's
    schema leaves open is checked by the API server when the pods are created.)"""
    text = subprocess.run(
        [
            "git",
            "-C",
            os.environ["KUBETRAIN_TRAINER_GIT_DIR"],
            "show",
            f"HEAD:manifests/base/crds/trainer.kubeflow.org_{plural}.yaml",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    theirs = _required(yaml.safe_load(text)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    ours = _required(SCHEMAS[kind])
    missing = {
        path: lacking
        for path, names in theirs.items()
        if not path.startswith("status")
        and path in ours
        and (lacking := [n for n in names if n not in ours.get(path, [])])
        and LEFT_TO_THE_WEBHOOK.get((kind, path)) != lacking
    }
    assert missing == {}
