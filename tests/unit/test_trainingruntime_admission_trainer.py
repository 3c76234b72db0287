"""TrainingRuntime / ClusterTrainingRuntime admission held to Kubeflow Trainer 2.3's own tests
(test/integration/webhooks/trainingruntime_webhook_test.go and
clustertrainingruntime_webhook_test.go): each test names the Trainer cases it answers. Trainer's
CRD defaults of the ML policy sources are in kubetrain's CRDs (the API server sets them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from admission import review_of
from trainjobs import trainer_test_runtime

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.devcluster.apiserver.kinds.schema import apply_defaults
from kubetrain.jobs.trainercrds import trainer_crds
from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.webhook.trainer import validate_trainer

Obj = dict[str, Any]


def unlabelled(kind: str = "TrainingRuntime") -> Obj:
    """Trainer's MakeTrainingRuntimeWrapper runtime: no framework label."""
    runtime = trainer_test_runtime("runtime", kind=kind)
    del runtime["metadata"]["labels"]
    return runtime


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_trainers_test_runtime_is_admitted_with_a_warning_for_the_sdk(kind: str) -> None:
    """Trainer: "Should succeed to create TrainingRuntime", "Should succeed to create
    trainingRuntime", "Should succeed to create ClusterTrainingRuntime": admitted without the
    framework label, with a warning (the Kubeflow SDK lists only labelled runtimes)."""
    runtime = unlabelled(kind)
    runtime["apiVersion"] = "trainer.kubeflow.org/v1alpha1"
    runtime["metadata"]["namespace"] = "ns"
    assert validate_runtime(runtime) == []
    response = validate_trainer(review_of(runtime))
    assert response.allowed
    assert any("trainer.kubeflow.org/framework" in w for w in response.warnings)
    assert runtime_warnings(trainer_test_runtime("labelled")) == []


@pytest.mark.parametrize(
    ("subdomain", "ok"),
    [
        ("shared-net", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("Shared", False),
        ("1net", False),
        ("a.b", False),
    ],
)
def test_the_network_subdomain_is_an_rfc1035_label(subdomain: str, ok: bool) -> None:
    """JobSet's webhook (validateJobSet): the subdomain names the pods' headless Service and is
    every pod's `spec.subdomain`, a DNS label; a runtime with another would give TrainJobs whose
    every pod create is refused."""
    runtime = trainer_test_runtime("labelled")
    runtime["spec"]["template"]["spec"]["network"] = {"subdomain": subdomain}
    assert [e.path for e in validate_runtime(runtime)] == (
        [] if ok else ["spec.template.spec.network.subdomain"]
    )


def test_job_fields_kubetrain_does_not_apply_are_a_warning_naming_each() -> None:
    """No Job object exists: of a replicated job's Job spec only parallelism, backoffLimit,
    podFailurePolicy, activeDeadlineSeconds, backoffLimitPerIndex, maxFailedIndexes, successPolicy
    and the pod template are used (completions: Trainer
    writes the parallelism there). Trainer (with JobSet) would apply the others, so a runtime
    setting one is admitted with a warning per field rather than silently."""
    runtime = trainer_test_runtime("labelled")
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]
    job_spec.update(
        backoffLimit=3,
        completions=1,
        parallelism=1,
        podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        activeDeadlineSeconds=600,
        backoffLimitPerIndex=1,
        maxFailedIndexes=1,
        successPolicy={"rules": [{"succeededCount": 1}]},
        ttlSecondsAfterFinished=60,
    )
    job_spec["template"]["spec"]["restartPolicy"] = "Never"
    assert validate_runtime(runtime) == []
    assert runtime_warnings(runtime) == [
        f"spec.template.spec.replicatedJobs[2].template.spec.{key}: not applied: kubetrain creates "
        "the replicated job's pods itself, without a Job; of the Job spec it applies parallelism, "
        "backoffLimit, podFailurePolicy, activeDeadlineSeconds, backoffLimitPerIndex, maxFailedIndexes, "
        "successPolicy and template"
        for key in ("ttlSecondsAfterFinished",)
    ]
    # Trainer's own runtimes set none
    for trainer_runtime in default_runtimes():
        assert runtime_warnings(trainer_runtime) == []


def test_startup_policy_in_order_and_depends_on_are_mutually_exclusive() -> None:
    """JobSet's CRD rule, which Trainer's runtime CRDs carry on the JobSet template spec: a
    runtime with `startupPolicy.startupPolicyOrder: InOrder` and a replicated job's `dependsOn`
    is refused, with its message; either alone (or AnyOrder with dependsOn) is admitted."""
    runtime = trainer_test_runtime("labelled")
    jobset_spec = runtime["spec"]["template"]["spec"]
    jobset_spec["replicatedJobs"][2]["dependsOn"] = [{"name": "model-initializer", "status": "Complete"}]
    assert validate_runtime(runtime) == []
    jobset_spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    assert validate_runtime(runtime) == []
    jobset_spec["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    assert [(e.path, e.message) for e in validate_runtime(runtime)] == [
        ("spec.template.spec", "StartupPolicy and DependsOn APIs are mutually exclusive")
    ]
    del jobset_spec["replicatedJobs"][2]["dependsOn"]
    assert validate_runtime(runtime) == []


def test_one_pod_group_policy_source() -> None:
    """`podGroupPolicy` is a one-of (Kubeflow Trainer issue 4060: Trainer 2.3 admits both): a
    runtime naming coscheduling and volcano is refused, naming the field and what is valid."""
    runtime = trainer_test_runtime("gangs")
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 30}, "volcano": {}}
    assert [(e.path, e.message) for e in validate_runtime(runtime)] == [
        (
            "spec.podGroupPolicy",
            "Only one of the podGroupPolicy sources can be configured: coscheduling or volcano",
        )
    ]
    for source in ("coscheduling", "volcano"):
        runtime["spec"]["podGroupPolicy"] = {source: {}}
        assert validate_runtime(runtime) == []


def test_jobsets_exclusive_placement_is_admitted_without_a_warning() -> None:
    """JobSet's exclusive placement (`alpha.jobset.sigs.k8s.io/exclusive-topology`, with or
    without `alpha.jobset.sigs.k8s.io/node-selector`), on the JobSet template or a replicated
    job's template, is applied: no warning — a pod template naming a priorityClassName too, the
    operator resolving the class (its PriorityClass informer)."""
    runtime = trainer_test_runtime("labelled")
    template = runtime["spec"]["template"]
    template["metadata"] = {"annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}}
    rjobs = template["spec"]["replicatedJobs"]
    rjobs[2]["template"]["metadata"]["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool",
        "alpha.jobset.sigs.k8s.io/node-selector": "true",
    }
    assert validate_runtime(runtime) == []
    assert runtime_warnings(runtime) == []
    for rjob in rjobs:
        rjob["template"]["spec"]["template"].setdefault("spec", {})["priorityClassName"] = "high"
    assert runtime_warnings(runtime) == []


def test_exclusive_placement_by_affinities_under_a_pod_group_policy_is_a_warning() -> None:
    """A gang scheduler binds no pod before every pod exists, a follower is made only once its
    leader is bound: such a runtime never starts a pod (as under JobSet), which its warning says;
    the node-selector strategy makes every pod at once and is not warned about."""
    runtime = trainer_test_runtime("labelled")
    template = runtime["spec"]["template"]
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 100}}
    assert runtime_warnings(runtime) == []
    template["metadata"] = {"annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}}
    rjobs = template["spec"]["replicatedJobs"]
    assert runtime_warnings(runtime) == [
        f"spec.template.spec.replicatedJobs[{i}].template: placed exclusively "
        "(alpha.jobset.sigs.k8s.io/exclusive-topology) under spec.podGroupPolicy, no pod starts: the gang "
        "scheduler binds no pod before all of them exist, and a follower pod is made only once its leader "
        "is bound; use alpha.jobset.sigs.k8s.io/node-selector or no podGroupPolicy"
        for i in range(len(rjobs))
    ]
    template["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    assert runtime_warnings(runtime) == []


@pytest.mark.parametrize(
    "sources",
    [
        ("mpi", "torch"),  # Should fail to create trainingRuntime with both MPI and Torch runtimes
        ("jax", "torch"),  # … both JAX and Torch runtimes
        ("torch", "flux"),  # … both Torch and Flux runtimes
        ("mpi", "flux"),  # … both MPI and Flux runtimes
        ("jax", "flux"),  # … both JAX and Flux runtimes
        ("jax", "mpi"),  # … both JAX and MPI runtimes
        ("torch", "mpi", "jax", "flux"),  # … with all four runtimes configured
    ],
)
def test_at_most_one_ml_policy_source(sources: tuple[str, ...]) -> None:
    """Trainer: "Should fail to create trainingRuntime with both MPI and Torch runtimes", "… both
    JAX and Torch …", "… both Torch and Flux …", "… both MPI and Flux …", "… both JAX and Flux
    …", "… both JAX and MPI …", "… with all four runtimes configured"."""
    runtime = unlabelled()
    runtime["spec"]["mlPolicy"] = {source: {} for source in sources}
    assert [e.path for e in validate_runtime(runtime)] == ["spec.mlPolicy"]


@pytest.mark.parametrize(("source", "procs"), [("mpi", 0), ("mpi", -2), ("flux", 0)])
def test_a_policys_num_proc_per_node_is_at_least_one(source: str, procs: int) -> None:
    """Trainer: "Should fail to create trainingRuntime with mpi.numProcPerNode < 1" (#3809,
    after 2.3: the MPI hostfile's slots) and the Flux rule it copies, with their CRD messages."""
    runtime = unlabelled()
    runtime["spec"]["mlPolicy"] = {source: {"numProcPerNode": procs}}
    assert [str(e) for e in validate_runtime(runtime)] == [
        f"spec.mlPolicy.{source}.numProcPerNode: Invalid: NumProcPerNode in {source}Policy must be >= 1, "
        f"not {procs}"
    ]
    runtime["spec"]["mlPolicy"] = {source: {"numProcPerNode": 1}}
    assert validate_runtime(runtime) == []


def test_the_crds_carry_trainers_bounds() -> None:
    """Trainer's markers on the counts, so an API server that compiles CEL refuses them too."""
    crds = {crd["spec"]["names"]["kind"]: crd for crd in trainer_crds()}

    def spec_of(kind: str) -> Obj:
        schema: Obj = crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        return schema["properties"]["spec"]["properties"]  # type: ignore[no-any-return]

    trainer = spec_of("TrainJob")["trainer"]["properties"]
    assert trainer["numNodes"]["minimum"] == 0
    assert trainer["numProcPerNode"]["x-kubernetes-validations"] == [
        {"rule": "self >= 1", "message": "numProcPerNode must be greater than or equal to 1"}
    ]
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        policy = spec_of(kind)["mlPolicy"]["properties"]
        for source in ("mpi", "flux"):
            assert policy[source]["properties"]["numProcPerNode"]["x-kubernetes-validations"] == [
                {"rule": "self >= 1", "message": f"NumProcPerNode in {source}Policy must be >= 1"}
            ]


def test_only_openmpi_is_an_mpi_implementation() -> None:
    """Trainer: "Should fail to create trainingRuntime with non-supported mpi.mpiImplementation"."""
    runtime = unlabelled()
    runtime["spec"]["mlPolicy"] = {"mpi": {"mpiImplementation": "invalid"}}
    errors = validate_runtime(runtime)
    assert [e.path for e in errors] == ["spec.mlPolicy.mpi.mpiImplementation"]
    assert '"OpenMPI"' in str(errors[0])
    runtime["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "OpenMPI"
    assert validate_runtime(runtime) == []


@pytest.mark.parametrize(
    ("given", "want"),
    [
        # Should succeed to default mpi.mpiImplementation=OpenMPI (set: kept)
        (
            {"numProcPerNode": 1, "mpiImplementation": "OpenMPI", "sshAuthMountPath": "/usr/dir"},
            {"numProcPerNode": 1, "mpiImplementation": "OpenMPI", "sshAuthMountPath": "/usr/dir"},
        ),
        # Should succeed to default mpi.sshAuthMountPath=/root/.ssh
        ({"numProcPerNode": 1, "mpiImplementation": "OpenMPI"}, {"sshAuthMountPath": "/root/.ssh"}),
        # Should succeed to default mpi.runLauncherAsNode=false
        ({"numProcPerNode": 1}, {"runLauncherAsNode": False}),
        # Should succeed to default mpi.numProcPerNode=1
        ({}, {"numProcPerNode": 1, "mpiImplementation": "OpenMPI"}),
    ],
)
def test_the_mpi_policys_defaults_are_trainers(given: Obj, want: Obj) -> None:
    """Trainer: "Should succeed to default mpi.mpiImplementation=OpenMPI", "… mpi.sshAuthMountPath=
    /root/.ssh", "… mpi.runLauncherAsNode=false", "… mpi.numProcPerNode=1": the CRD's defaults,
    as the API server applies them (devcluster's apply_defaults)."""
    for crd in trainer_crds()[1:]:
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        runtime = unlabelled(crd["spec"]["names"]["kind"])
        runtime["spec"]["mlPolicy"] = {"mpi": copy.deepcopy(given)}
        stored = apply_defaults(runtime, schema)["spec"]["mlPolicy"]["mpi"]
        assert {k: stored[k] for k in want} == want
        assert set(stored) == {"numProcPerNode", "mpiImplementation", "sshAuthMountPath", "runLauncherAsNode"}


def test_an_ancestor_step_runs_one_job_with_its_container() -> None:
    """Trainer's TrainingRuntime webhook (validateReplicatedJobs): a replicated job labelled as
    the trainer's or an initializer's has `replicas` 1 and the step's container."""
    runtime = unlabelled()
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[0]["replicas"] = 2
    rjobs[2]["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    errors = validate_runtime(runtime)
    assert [e.path for e in errors] == [
        "spec.template.spec.replicatedJobs[0].replicas",
        "spec.template.spec.replicatedJobs[2].template.spec.template.spec.containers",
    ]
    assert "always must be 1" in str(errors[0])
    assert "must contain the required container for the ancestor: trainer" in str(errors[1])


def test_a_replicated_job_of_negative_replicas_is_refused() -> None:
    """JobSet's ReplicatedJob `replicas` has minimum 0 (kubernetes-sigs/jobset#1279, after
    v0.12): a runtime whose non-step replicated job asks for -1 is refused naming the field,
    instead of admitting a runtime whose TrainJobs could never make their JobSet; 0 is admitted."""
    runtime = unlabelled()
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    extra = copy.deepcopy(rjobs[-1])
    extra["name"] = "sidecar"
    extra["template"]["metadata"]["labels"].pop("trainer.kubeflow.org/trainjob-ancestor-step", None)
    extra["replicas"] = -1
    rjobs.append(extra)
    errors = validate_runtime(runtime)
    assert [(e.path, str(e)) for e in errors] == [
        (
            f"spec.template.spec.replicatedJobs[{len(rjobs) - 1}].replicas",
            f"spec.template.spec.replicatedJobs[{len(rjobs) - 1}].replicas: Invalid: "
            "should be greater than or equal to 0, not -1",
        )
    ]
    extra["replicas"] = 0
    assert validate_runtime(runtime) == []


def test_pod_replacement_and_completion_mode_as_kubetrain_runs_them() -> None:
    """A TrainJob pod keeps its name, so its replacement is made once the old pod is gone:
    `podReplacementPolicy: Failed` (and `completionMode: Indexed`, every pod having its index)
    is what kubetrain does — no warning; `TerminatingOrFailed` and `NonIndexed` are admitted with
    a warning saying how kubetrain runs them; a value the Job API lacks is refused with its
    supported values (batch/v1 validateJobSpec, validatePodReplacementPolicy)."""
    runtime = trainer_test_runtime("labelled")
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]
    path = "spec.template.spec.replicatedJobs[2].template.spec"
    job_spec.update(podReplacementPolicy="Failed", completionMode="Indexed")
    assert validate_runtime(runtime) == [] and runtime_warnings(runtime) == []
    job_spec.update(podReplacementPolicy="TerminatingOrFailed", completionMode="NonIndexed")
    assert validate_runtime(runtime) == []
    assert runtime_warnings(runtime) == [
        f"{path}.completionMode: NonIndexed not applied: every TrainJob pod has its completion index "
        "(as with Indexed)",
        f"{path}.podReplacementPolicy: TerminatingOrFailed not applied: a TrainJob pod keeps its name, "
        "so its replacement is created once the old pod is gone, never while it terminates (as with "
        "Failed)",
    ]
    job_spec.update(podReplacementPolicy="Never", completionMode="Sequential")
    assert [str(e) for e in validate_runtime(runtime)] == [
        f'{path}.completionMode: NotSupported: "Sequential" is not supported: must be one of '
        '"Indexed", "NonIndexed"',
        f'{path}.podReplacementPolicy: NotSupported: "Never" is not supported: must be one of '
        '"Failed", "TerminatingOrFailed"',
    ]
