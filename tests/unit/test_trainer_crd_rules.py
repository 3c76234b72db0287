"""The CEL rules kubetrain's Trainer CRDs carry: each of Trainer's (its generated CRDs at 8c0f505,
written out here rule by rule), at the same schema node, except the ones docs/behaviour.md names
as not carried; and devcluster compiles every one of them (none skipped)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds.crds.celrules import compile_schema
from kubetrain.jobs.listkeys import node
from kubetrain.jobs.trainercrds import trainer_crds

IMMUTABLE = ("self == oldSelf", "field is immutable")
JOBSET_IMMUTABLE = ("self == oldSelf", "Value is immutable")
URI = (
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "storageUri may be empty, or it must be a valid URI (scheme://...)",
)
TRAINJOB = [
    (
        "",
        "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        "metadata.name must match RFC 1035 DNS label format",
    ),
    ("", "size(self.metadata.name) <= 63", "metadata.name must be no more than 63 characters"),
    ("spec.activeDeadlineSeconds", *IMMUTABLE),
    ("spec.initializer.dataset.storageUri", *URI),
    ("spec.initializer.model.storageUri", *URI),
    (
        "spec.managedBy",
        "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
    ),
    ("spec.managedBy", *IMMUTABLE),
    ("spec.runtimeRef", *IMMUTABLE),
    ("spec.trainer.numProcPerNode", "self >= 1", "numProcPerNode must be greater than or equal to 1"),
    (
        "status.trainerStatus",
        "has(self.lastUpdatedTime)",
        "lastUpdatedTime is required when trainerStatus is present",
    ),
]
RUNTIME = [
    (
        "spec.mlPolicy",
        "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
        ".filter(x, x).size() <= 1",
        "Only one of the policy can be configured",
    ),
    ("spec.mlPolicy.flux.numProcPerNode", "self >= 1", "NumProcPerNode in fluxPolicy must be >= 1"),
    ("spec.mlPolicy.mpi.numProcPerNode", "self >= 1", "NumProcPerNode in mpiPolicy must be >= 1"),
    (
        "spec.mlPolicy.torch.envInjection.targets[].containerNames",
        "!self.exists(c, c == 'node')",
        "containerNames must not include the main node container because PET_* envs are always "
        "injected into it",
    ),
    (
        "spec.template.spec",
        "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
        "self.replicatedJobs.exists(x, has(x.dependsOn)))",
        "StartupPolicy and DependsOn APIs are mutually exclusive",
    ),
    ("spec.template.spec.failurePolicy", *JOBSET_IMMUTABLE),
    ("spec.template.spec.replicatedJobs[].dependsOn", *JOBSET_IMMUTABLE),
    ("spec.template.spec.network", *JOBSET_IMMUTABLE),
    ("spec.template.spec.startupPolicy", *JOBSET_IMMUTABLE),
    ("spec.template.spec.successPolicy", *JOBSET_IMMUTABLE),
    ("spec.template.spec.volumeClaimPolicies", *JOBSET_IMMUTABLE),
]
# kubetrain's own rules beside Trainer's: InPlaceRestart refused with why (trainerrules.IN_PLACE_RESTART),
# the JobSet template's managedBy (trainerrules.JOBSET_MANAGED_BY),
# and one podGroupPolicy source (trainerrules.ONE_POD_GROUP_POLICY).
KUBETRAIN_RUNTIME = [
    (
        "spec.template.spec.failurePolicy.restartStrategy",
        "self != 'InPlaceRestart'",
        'InPlaceRestart is not supported, supported values: "Recreate", "BlockingRecreate": JobSet\'s '
        "in-place restart needs its restart agent sidecar, which reads the JobSet object's status, and "
        "kubetrain runs a TrainJob's pods without a JobSet object",
    ),
    # The JobSet object Trainer makes handed to another controller: kubetrain makes none.
    (
        "spec.template.spec.managedBy",
        "self == 'jobset.sigs.k8s.io/jobset-controller'",
        'only "jobset.sigs.k8s.io/jobset-controller" (or unset): kubetrain runs a TrainJob\'s pods itself, '
        "with no JobSet object for another controller to manage; a TrainJob's own spec.managedBy hands "
        "it to another controller (kueue.x-k8s.io/multikueue)",
    ),
    # A one-of Trainer 2.3 does not enforce (Kubeflow Trainer issue 4060).
    (
        "spec.podGroupPolicy",
        "[has(self.coscheduling), has(self.volcano)].filter(x, x).size() <= 1",
        "Only one of the podGroupPolicy sources can be configured: coscheduling or volcano",
    ),
]


def rules(schema: dict[str, Any], at: str = "") -> list[tuple[str, str, str]]:
    """Every (path, rule, message) of a schema, paths as `listkeys.node` takes them."""
    out = [(at, r["rule"], r["message"]) for r in schema.get("x-kubernetes-validations", [])]
    for name, sub in (schema.get("properties") or {}).items():
        out += rules(sub, f"{at}.{name}" if at else name)
    if isinstance(schema.get("items"), dict):
        out += rules(schema["items"], f"{at}[]")
    return out


@pytest.mark.parametrize("kind", ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"])
def test_the_crds_carry_trainers_rules_and_devcluster_evaluates_them(kind: str) -> None:
    (crd,) = [c for c in trainer_crds() if c["spec"]["names"]["kind"] == kind]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    expected = TRAINJOB if kind == "TrainJob" else RUNTIME + KUBETRAIN_RUNTIME
    assert sorted(rules(schema)) == sorted(expected)
    skipped: list[str] = []
    compiled = compile_schema(schema, skipped)
    assert compiled.root is not None and skipped == []


def test_managed_by_rules_keep_trainers_order() -> None:
    """The API server reports a field's failed rules in the order the CRD lists them."""
    schema = trainer_crds()[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert [r["rule"] for r in node(schema, "spec.managedBy")["x-kubernetes-validations"]] == [
        TRAINJOB[5][1],
        "self == oldSelf",
    ]


def test_a_rule_path_the_schema_lacks_is_an_error() -> None:
    with pytest.raises(KeyError):
        node({"type": "object", "properties": {"spec": {"type": "object"}}}, "spec.nothing")


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_runtime_enums_and_defaults_are_jobsets_and_trainers(kind: str) -> None:
    """restartStrategy: JobSet v0.12's enum (InPlaceRestart included, so its rule can explain the
    refusal) and default; mpiImplementation: Trainer's enum, "" included."""
    (crd,) = [c for c in trainer_crds() if c["spec"]["names"]["kind"] == kind]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    strategy = node(schema, "spec.template.spec.failurePolicy.restartStrategy")
    assert strategy["enum"] == ["Recreate", "BlockingRecreate", "InPlaceRestart"]
    assert strategy["default"] == "Recreate"
    assert node(schema, "spec.mlPolicy.mpi.mpiImplementation")["enum"] == ["OpenMPI", ""]
