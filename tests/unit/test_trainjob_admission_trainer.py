"""TrainJob admission held to Kubeflow Trainer 2.3's own webhook integration tests
(test/integration/webhooks/trainjob_test.go): each test names the Trainer cases it answers.
Trainer refuses some of these in its CRD (422) and some in its webhook (403); kubetrain's
webhook refuses all of them, naming the field (docs/behaviour.md, "Admission")."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from admission import patched, review_of
from trainjobs import trainer_test_runtime

from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob
from kubetrain.webhook.trainer import mutate_trainer

Obj = dict[str, Any]
RUNTIME = trainer_test_runtime("testing")
NODE_POD = "trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"


def trainjob(name: str = "train-job", **spec: Any) -> Obj:
    return default_trainjob(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"runtimeRef": {"name": "testing", "kind": "TrainingRuntime"}, **spec},
        }
    )


def paths(job: Obj, runtime: Obj | None = RUNTIME, old: Obj | None = None) -> list[str]:
    return [e.path for e in validate_trainjob(job, old, runtime)]


def messages(job: Obj, runtime: Obj | None = RUNTIME, old: Obj | None = None) -> str:
    return "\n".join(str(e) for e in validate_trainjob(job, old, runtime))


def node_patch(manager: str = "acme.io/manager", **pod_spec: Any) -> Obj:
    return {
        "manager": manager,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
                    ]
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("source", "uri", "ok"),
    [
        ("dataset", "invalid-uri", False),  # Should fail with invalid dataset storageUri
        ("dataset", "", True),  # Should succeed with empty dataset storageUri
        ("dataset", "s3://", False),  # Should fail with dataset storageUri missing path
        ("dataset", "s3://bucket/path", True),  # Should succeed with valid dataset storageUri
        ("model", "invalid-uri", False),  # Should fail with invalid model storageUri
        ("model", "gs://bucket/model", True),  # Should succeed with valid model storageUri
    ],
)
def test_a_storage_uri_is_empty_or_scheme_colon_slash_slash_something(
    source: str, uri: str, ok: bool
) -> None:
    """Trainer: "Should fail with invalid dataset storageUri", "Should succeed with empty dataset
    storageUri", "Should fail with dataset storageUri missing path", "Should succeed with valid
    dataset storageUri", "Should fail with invalid model storageUri", "Should succeed with valid
    model storageUri"."""
    job = trainjob(initializer={source: {"storageUri": uri}})
    path = f"spec.initializer.{source}.storageUri"
    if ok:
        assert paths(job) == []
    else:
        assert paths(job) == [path]
        assert "storageUri may be empty, or it must be a valid URI (scheme://...)" in messages(job)


@pytest.mark.parametrize("key", ["command", "args"])
def test_a_trainer_command_or_args_item_is_at_most_1mib(key: str) -> None:
    """Trainer: "Should succeed to create TrainJob with trainer command item at the max length",
    "Should fail to create TrainJob with trainer command item exceeding the max length", and the
    same two for args."""
    assert paths(trainjob(trainer={key: ["a" * 1048576]})) == []
    long = trainjob(trainer={key: ["ok", "a" * 1048577]})
    assert paths(long) == [f"spec.trainer.{key}[1]"]
    assert "must be at most 1048576 characters, not 1048577" in messages(long)


@pytest.mark.parametrize(
    ("source", "step", "message"),
    [
        # Should fail in creating trainJob with pre-trained model config when referencing a
        # trainingRuntime without an initializer
        (
            "model",
            "model-initializer",
            "must have container with name - model-initializer in the model-initializer job",
        ),
        # Should fail in creating trainJob with dataset initializer when referencing a
        # trainingRuntime without an initializer
        ("dataset", "dataset-initializer", "must have container with name - dataset-initializer in the "),
    ],
)
def test_an_initializer_needs_its_container_in_the_runtime(source: str, step: str, message: str) -> None:
    """Trainer: "Should fail in creating trainJob with pre-trained model config when referencing a
    trainingRuntime without an initializer", "Should fail in creating trainJob with dataset
    initializer when referencing a trainingRuntime without an initializer", "Should succeed in
    creating trainJob with dataset initializer when referencing a ClusterTrainingRuntime with an
    initializer"."""
    job = trainjob(initializer={source: {"storageUri": "hf://trainjob-model"}})
    assert paths(job) == []  # the runtime has the initializer
    runtime = copy.deepcopy(RUNTIME)
    rjob = next(r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == step)
    rjob["template"]["spec"]["template"]["spec"]["containers"] = [{"name": "other", "image": "x"}]
    assert paths(job, runtime) == ["spec.runtimeRef"]
    assert message in messages(job, runtime)
    without = trainer_test_runtime("testing", steps=("node",))
    assert f"must have {step} job when trainJob is configured with input {source}Config" in messages(
        job, without
    )
    # an update that leaves the initializer alone is not refused for a runtime changed since
    stored = copy.deepcopy(job)
    assert "spec.runtimeRef" not in paths({**job, "metadata": {**job["metadata"]}}, without, old=stored)


def test_the_trainer_env_may_not_set_a_variable_of_the_ml_policy() -> None:
    """Trainer: "Should succeed in creating trainJob with valid trainer config for torch runtime",
    "Should fail in creating trainJob with trainer config having envs with reserved env names"."""
    torch = trainer_test_runtime("testing", ml_policy={"torch": {}})
    assert paths(trainjob(trainer={"numProcPerNode": 4}), torch) == []
    reserved = trainjob(trainer={"env": [{"name": "PET_NODE_RANK", "value": "1"}]})
    assert paths(reserved, torch) == ["spec.trainer.env[0].name"]


@pytest.mark.parametrize(
    ("trainer", "expected"),
    [
        # Trainer #3809: "… with positive numNodes and numProcPerNode"
        ({"numNodes": 1, "numProcPerNode": 1}, []),
        # "… with negative numNodes": Trainer's `Minimum=0`, in apimachinery's words
        (
            {"numNodes": -1},
            [
                "spec.trainer.numNodes: Invalid: spec.trainer.numNodes in body should be greater than "
                "or equal to 0, not -1"
            ],
        ),
        # "… with zero numNodes" Trainer admits (a JobSet without trainer pods); kubetrain refuses
        (
            {"numNodes": 0},
            [
                "spec.trainer.numNodes: Invalid: 0 training nodes: kubetrain runs a TrainJob on at least "
                "1 node; omit it for the runtime's"
            ],
        ),
        # "… with negative numProcPerNode", "… with zero numProcPerNode": Trainer's CEL message
        (
            {"numProcPerNode": -5},
            [
                "spec.trainer.numProcPerNode: Invalid: numProcPerNode must be greater than or equal to 1, "
                "not -5"
            ],
        ),
        (
            {"numProcPerNode": 0},
            [
                "spec.trainer.numProcPerNode: Invalid: numProcPerNode must be greater than or equal to 1, "
                "not 0"
            ],
        ),
    ],
)
def test_num_nodes_and_num_proc_per_node_bounds(trainer: Obj, expected: list[str]) -> None:
    """Trainer: the numNodes/numProcPerNode cases of #3809 (after 2.3), each refused value named
    once with Trainer's message — for a torch runtime and a Flux one alike (Trainer dropped the
    Flux webhook's own numProcPerNode check for the CRD rule)."""
    torch = trainer_test_runtime("testing", ml_policy={"torch": {}})
    assert [str(e) for e in validate_trainjob(trainjob(trainer=trainer), None, torch)] == expected
    if "numProcPerNode" in trainer:
        flux = trainer_test_runtime("testing", ml_policy={"flux": {"numProcPerNode": 1}})
        assert [str(e) for e in validate_trainjob(trainjob(trainer=trainer), None, flux)] == expected


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("valid-job-name", True),
        ("abcdefghijklmnopqrstuvwxyzabcdefghijklm", True),  # 39: see the next test for 63
        ("Invalid-job-name", False),
        ("1jobname", False),
        ("jobname-", False),
        ("this-name-is-way-too-long-for-a-rfc1035-label-and-should-fail-validation", False),
    ],
)
def test_the_name_is_an_rfc1035_label(name: str, ok: bool) -> None:
    """Trainer: "RFC1035-compliant TrainJob name validation" (its six entries)."""
    assert paths(trainjob(name)) == ([] if ok else ["metadata.name"])


def test_the_name_leaves_every_pod_hostname_a_dns_label() -> None:
    """A pod's hostname is its name `<tj>-<step>-<jobIndex>-<index>`, which the API server holds
    to 63 characters: Trainer's webhook admits a TrainJob of 63 characters (its case "63"), but
    JobSet's webhook refuses the JobSet and no pod of it ever runs. kubetrain refuses it at once,
    saying how long the name may be for this runtime and numNodes."""
    name = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"  # 63
    assert paths(trainjob(name)) == ["metadata.name"]
    assert (
        "metadata.name: Invalid: must be no more than 39 characters for this runtime and numNodes: "
        f'the pod hostname "{name}-dataset-initializer-0-0" (87 characters) must be a DNS label of at '
        "most 63 characters"
    ) in messages(trainjob(name))
    assert paths(trainjob("n" * 39)) == []
    # more nodes, longer hostnames: `<tj>-node-0-10` with 11 nodes
    only_node = trainer_test_runtime("testing", steps=("node",))
    assert paths(trainjob("n" * 54, trainer={"numNodes": 10}), only_node) == []
    assert paths(trainjob("n" * 54, trainer={"numNodes": 11}), only_node) == ["metadata.name"]
    # also when a suspended TrainJob is given more nodes
    old = trainjob("n" * 54, suspend=True, trainer={"numNodes": 10})
    new = trainjob("n" * 54, suspend=True, trainer={"numNodes": 11})
    assert paths(new, only_node, old=old) == ["metadata.name"]


@pytest.mark.parametrize(
    ("managed_by", "ok"),
    [
        ("trainer.kubeflow.org/trainjob-controller", True),
        ("kueue.x-k8s.io/multikueue", True),
        ("invalid", False),
    ],
)
def test_managed_by_is_trainers_controller_or_multikueue(managed_by: str, ok: bool) -> None:
    """Trainer: "Should succeed to create TrainJob with 'managedBy:
    trainer.kubeflow.org/trainjob-controller'", "… 'managedBy: kueue.x-k8s.io/multukueue'",
    "Should fail to create TrainJob with invalid managedBy"."""
    assert paths(trainjob(managedBy=managed_by)) == ([] if ok else ["spec.managedBy"])


@pytest.mark.parametrize(
    ("manager", "ok"),
    [("kueue.k8s.io/manager", True), ("kueue.k8s.io/", False), ("no-slash", False), ("Bad_Host/x", False)],
)
def test_a_runtime_patch_manager_is_a_domain_prefixed_path(manager: str, ok: bool) -> None:
    """Trainer: "Should succeed to create trainJob with valid RuntimePatches manager", "Should fail
    to create trainJob with invalid RuntimePatches manager"."""
    job = trainjob(runtimePatches=[{"manager": manager}])
    assert paths(job) == ([] if ok else ["spec.runtimePatches[0].manager"])
    if not ok:
        assert "domain-prefixed path" in messages(job) or "RFC 1123 subdomain" in messages(job)


def test_two_managers_may_patch_the_same_replicated_job() -> None:
    """Trainer: "Should succeed to create trainJob with runtimePatches containing two replicated
    job patches"."""
    job = trainjob(
        runtimePatches=[
            node_patch("acme.io/manager-one", serviceAccountName="custom-sa"),
            node_patch("acme.io/manager-two", serviceAccountName="custom-sa-two"),
        ]
    )
    assert paths(job) == []


@pytest.mark.parametrize(("grace", "ok"), [(300, True), (-1, False), (0, True)])
def test_a_patched_termination_grace_period_is_not_negative(grace: int, ok: bool) -> None:
    """Trainer: "Should succeed to create TrainJob with valid terminationGracePeriodSeconds in
    RuntimePatches", "Should fail to create TrainJob with negative terminationGracePeriodSeconds",
    "Should succeed to create TrainJob with zero terminationGracePeriodSeconds"."""
    job = trainjob(runtimePatches=[node_patch(terminationGracePeriodSeconds=grace)])
    assert paths(job) == ([] if ok else [f"spec.runtimePatches[0].{NODE_POD}.terminationGracePeriodSeconds"])


@pytest.mark.parametrize(
    ("given", "want"),
    [
        # Should succeed to default suspend=false
        ({"managedBy": "kueue.x-k8s.io/multikueue", "runtimeRef": {"name": "testing"}}, {"suspend": False}),
        # Should succeed to default managedBy=trainer.kubeflow.org/trainjob-controller
        (
            {"suspend": True, "runtimeRef": {"name": "testing", "kind": "TrainingRuntime"}},
            {"managedBy": "trainer.kubeflow.org/trainjob-controller", "suspend": True},
        ),
        # Should succeed to default runtimeRef.apiGroup
        (
            {"runtimeRef": {"name": "testing", "kind": "TrainingRuntime"}},
            {
                "runtimeRef": {
                    "name": "testing",
                    "kind": "TrainingRuntime",
                    "apiGroup": "trainer.kubeflow.org",
                }
            },
        ),
        # Should succeed to default runtimeRef.kind
        (
            {"runtimeRef": {"name": "testing", "apiGroup": "trainer.kubeflow.org"}},
            {
                "runtimeRef": {
                    "name": "testing",
                    "kind": "ClusterTrainingRuntime",
                    "apiGroup": "trainer.kubeflow.org",
                }
            },
        ),
    ],
)
def test_trainers_defaults(given: Obj, want: Obj) -> None:
    """Trainer: "Defaulting TrainJob on creation" (its four entries)."""
    spec = default_trainjob({"kind": "TrainJob", "metadata": {"name": "x"}, "spec": given})["spec"]
    for key, value in want.items():
        assert spec[key] == value


def mutated(obj: Obj, operation: str = "CREATE", old: Obj | None = None, at: int = 0) -> Obj:
    now = datetime(2026, 11, 26, 9, 0, at, tzinfo=UTC)
    return patched(obj, mutate_trainer(review_of(obj, operation, old), now=now))


def test_each_runtime_patch_gets_a_time() -> None:
    """Trainer: "Should set Time on each RuntimePatch when creating a TrainJob"; and its
    defaulter on update: an unchanged patch keeps its time, a changed one gets the new time."""
    job = trainjob(runtimePatches=[{"manager": "acme.io/manager-one"}, {"manager": "acme.io/manager-two"}])
    created = mutated(job)
    assert [p["time"] for p in created["spec"]["runtimePatches"]] == ["2026-11-26T09:00:00Z"] * 2
    changed = copy.deepcopy(created)
    changed["spec"]["runtimePatches"][1] = node_patch("acme.io/manager-two", nodeSelector={"a": "b"})
    changed["spec"]["runtimePatches"].append({"manager": "acme.io/manager-three"})
    updated = mutated(changed, "UPDATE", created, at=5)
    assert [p["time"] for p in updated["spec"]["runtimePatches"]] == [
        "2026-11-26T09:00:00Z",
        "2026-11-26T09:00:05Z",
        "2026-11-26T09:00:05Z",
    ]


def test_runtime_patches_change_only_while_suspended_and_their_pod_identity_never() -> None:
    """Trainer: "Should succeed to update runtimePatches when suspend is true", "Should fail to
    update TrainJob terminationGracePeriodSeconds after creation"; and its JobSet plug-in's rule:
    RuntimePatches can only be modified when the TrainJob is suspended before or after the update."""
    old = trainjob(
        suspend=True, runtimePatches=[node_patch("test.io/manager", nodeSelector={"test": "test"})]
    )
    new = copy.deepcopy(old)
    new["spec"]["runtimePatches"][0] = node_patch("test.io/manager", nodeSelector={"allow": "update"})
    assert paths(new, old=old) == []
    running = copy.deepcopy(old)
    running["spec"]["suspend"] = False
    moved = copy.deepcopy(new)
    moved["spec"]["suspend"] = False
    assert paths(moved, old=running) == ["spec.runtimePatches"]
    assert "can only be modified when the TrainJob is suspended" in messages(moved, old=running)
    moved["spec"]["suspend"] = True  # suspended by the same update: allowed
    assert paths(moved, old=running) == []
    graceful = trainjob(runtimePatches=[node_patch(terminationGracePeriodSeconds=300)])
    longer = copy.deepcopy(graceful)
    longer["spec"]["runtimePatches"][0] = node_patch(terminationGracePeriodSeconds=600)
    assert f"spec.runtimePatches[0].{NODE_POD}.terminationGracePeriodSeconds" in paths(longer, old=graceful)
    # immutable even while suspended (Trainer's CRD: self == oldSelf)
    graceful["spec"]["suspend"] = longer["spec"]["suspend"] = True
    assert paths(longer, old=graceful) == [f"spec.runtimePatches[0].{NODE_POD}.terminationGracePeriodSeconds"]
    # a container list in another order is the same list map
    two = trainjob(suspend=True, runtimePatches=[node_patch(containers=[{"name": "a"}, {"name": "b"}])])
    swapped = copy.deepcopy(two)
    swapped["spec"]["runtimePatches"][0] = node_patch(containers=[{"name": "b"}, {"name": "a"}])
    assert paths(swapped, old=two) == []


@pytest.mark.parametrize(
    ("field", "old_value", "new_value"),
    [
        ("managedBy", "trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"),
        ("runtimeRef", {"name": "testing"}, {"name": "forbidden-update"}),
        (
            "initializer",
            {"model": {"storageUri": "s3://test/path"}},
            {"model": {"storageUri": "s3://forbidden-update"}},
        ),
        ("trainer", {"image": "test-image"}, {"image": "forbidden-update"}),
    ],
)
def test_fields_that_never_change_while_the_trainjob_runs(
    field: str, old_value: Obj | str, new_value: Obj | str
) -> None:
    """Trainer: "Should fail to update managedBy", "Should fail to update runtimeRef", "Should fail
    to update initializer", "Should fail to update trainer"."""
    old = trainjob(**{field: old_value})
    new = trainjob(**{field: new_value})
    assert f"spec.{field}" in paths(new, old=old)


def test_a_runtime_patch_sets_no_env_of_the_containers_the_trainjob_owns() -> None:
    """Trainer's JobSet plug-in validation (the webhook's): "must not have envs for the
    dataset-initializer, model-initializer, node containers" — their env is the TrainJob's
    `trainer.env` / `initializer.*.env`; an init container's env may be patched ("Should succeed
    to create TrainJob with RuntimePatches")."""
    env = [{"name": "X", "value": "1"}]
    refused = trainjob(runtimePatches=[node_patch(containers=[{"name": "node", "env": env}])])
    assert paths(refused) == [f"spec.runtimePatches[0].{NODE_POD}.containers[0].env"]
    assert "must not have envs for the dataset-initializer, model-initializer, node containers" in messages(
        refused
    )
    runtime = copy.deepcopy(RUNTIME)
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["spec"]
    node["initContainers"] = [{"name": "prepare", "image": "x"}]
    allowed = trainjob(runtimePatches=[node_patch(initContainers=[{"name": "prepare", "env": env}])])
    assert paths(allowed, runtime) == []


def test_a_variable_is_named_once_in_each_env_list() -> None:
    """Trainer's TrainJob CRD keys every env list by `name` (`x-kubernetes-list-type: map`): its
    API server refuses a second variable of one name; the webhook does too, for an API server
    without the CRD's list keys and for `kubetrain validate`. The same name in two lists is fine."""
    env = [{"name": "LR", "value": "1"}, {"name": "EPOCHS", "value": "2"}, {"name": "LR", "value": "3"}]
    job = trainjob(
        trainer={"env": env},
        initializer={"dataset": {"env": env}, "model": {"env": env[:2]}},
        runtimePatches=[node_patch(initContainers=[{"name": "prepare", "env": env}])],
    )
    runtime = copy.deepcopy(RUNTIME)
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["spec"]
    node["initContainers"] = [{"name": "prepare", "image": "x"}]
    assert paths(job, runtime) == [
        "spec.trainer.env[2].name",
        "spec.initializer.dataset.env[2].name",
        f"spec.runtimePatches[0].{NODE_POD}.initContainers[0].env[2].name",
    ]
    assert '"LR": another variable has this name' in messages(job, runtime)
    assert paths(trainjob(trainer={"env": env[:2]}, initializer={"model": {"env": env[:2]}})) == []
