"""Contract audit (docs/behaviour.md §1-§3): Kubeflow manifests, elastic and gang edge cases, the
update rules one by one, the structural-schema rules kube-apiserver applies to the CRDs, and the
`State` printer column."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import jobs
import jsonpatch
import pytest
import yaml
from admission import review_of

from kubetrain.api.errors import ErrorKind
from kubetrain.jobs.crdgen import all_crds, job_crds
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.status import set_condition, set_not_running, set_restarting, set_running
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.review import AdmissionRequest
from kubetrain.webhook.validate import validate

Job = dict[str, Any]

# Manifests in the shape of the Kubeflow training-operator examples (kubeflow.org/v1): the
# TF parameter-server and single-worker jobs, PyTorch DDP, elastic torchrun with HPA metrics,
# MXNet distributed training with its own named port, and MXNet tuning.
KUBEFLOW_MANIFESTS: dict[str, str] = {
    "tf-ps-worker": """
apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata: {name: "dist-mnist"}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: example.com/tf-dist-mnist:1.0
    Worker:
      replicas: 4
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: example.com/tf-dist-mnist:1.0
""",
    "tf-summaries-volume": """
apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata: {name: "mnist", namespace: kubeflow}
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          annotations:
            scheduling.k8s.io/group-name: "mnist"
        spec:
          containers:
            - name: tensorflow
              image: example.com/tf-mnist-with-summaries:1.0
              command: ["python", "/var/tf_mnist/mnist_with_summaries.py", "--log_dir=/train/logs"]
              volumeMounts:
                - {mountPath: "/train", name: "training"}
              resources:
                limits: {nvidia.com/gpu: 1}
          volumes:
            - name: "training"
              persistentVolumeClaim: {claimName: "tfevent-volume"}
""",
    "pytorch-ddp": """
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata: {name: pytorch-simple, namespace: kubeflow}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: example.com/pytorch-mnist:1.0
              imagePullPolicy: Always
              args: ["--backend", "gloo"]
              resources:
                limits: {nvidia.com/gpu: 1}
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: example.com/pytorch-mnist:1.0
              imagePullPolicy: Always
              args: ["--backend", "gloo"]
""",
    "pytorch-elastic-hpa": """
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata: {name: elastic-example-imagenet}
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: 1
    maxReplicas: 3
    maxRestarts: 100
    metrics:
      - type: Resource
        resource:
          name: cpu
          target: {type: Utilization, averageUtilization: 80}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: example.com/pytorch-elastic-imagenet:0.1
              imagePullPolicy: IfNotPresent
              resources:
                requests: {cpu: 4}
              env:
                - {name: LOGLEVEL, value: DEBUG}
              command: [python, -m, torch.distributed.run, /workspace/imagenet.py]
""",
    "mxnet-dist-own-port": """
apiVersion: "kubeflow.org/v1"
kind: "MXJob"
metadata: {name: "mxnet-job"}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    Scheduler:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: mxnet
              image: example.com/mxnet:gpu
              ports: [{containerPort: 9991, name: mxjob-port}]
    Server:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: mxnet
              image: example.com/mxnet:gpu
              ports: [{containerPort: 9991, name: mxjob-port}]
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: mxnet
              image: example.com/mxnet:gpu
              command: ["python"]
              args: ["train_mnist.py", "--kv-store", "dist_device_sync"]
              resources:
                limits: {nvidia.com/gpu: 1}
              ports: [{containerPort: 9991, name: mxjob-port}]
""",
    "mxnet-tune": """
apiVersion: "kubeflow.org/v1"
kind: "MXJob"
metadata: {name: "auto-tuning-job"}
spec:
  jobMode: MXTune
  mxReplicaSpecs:
    TunerTracker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - {name: mxnet, image: example.com/auto-tuning:gpu, command: ["python3"]}
    TunerServer:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: mxnet
              image: example.com/auto-tuning:gpu
              resources:
                limits: {nvidia.com/gpu: 1}
    Tuner:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - {name: mxnet, image: example.com/auto-tuning:gpu}
""",
}

PORTS = {
    "TFJob": ("tfjob-port", 2222),
    "PyTorchJob": ("pytorchjob-port", 23456),
    "MXJob": ("mxjob-port", 9091),
}


def migrated(name: str) -> Job:
    obj: Job = yaml.safe_load(KUBEFLOW_MANIFESTS[name])
    assert obj["apiVersion"] == "kubeflow.org/v1"
    obj["apiVersion"] = "kubetrain.io/v1"
    return obj


@pytest.mark.parametrize("name", sorted(KUBEFLOW_MANIFESTS))
def test_kubeflow_manifest_is_accepted_after_changing_only_api_version(name: str) -> None:
    obj = migrated(name)
    defaulted = default_job(obj)
    result = validate_job(defaulted.obj)
    assert result.errors == []
    assert defaulted.warnings == [] and result.warnings == []
    # Refused under its Kubeflow apiVersion where only kubetrain.io is served, with the hint to
    # change it; accepted as it is where kubeflow.org is served.
    assert validate_job(default_job(yaml.safe_load(KUBEFLOW_MANIFESTS[name])).obj).errors == []
    kubeflow = validate_job(yaml.safe_load(KUBEFLOW_MANIFESTS[name]), groups=("kubetrain.io",))
    assert [(e.path, e.kind) for e in kubeflow.errors] == [("apiVersion", ErrorKind.NOT_SUPPORTED)]
    assert 'changing apiVersion to "kubetrain.io/v1"' in kubeflow.errors[0].message
    # Every framework container has exactly one port of the kind's port name.
    port_name, port = PORTS[obj["kind"]]
    spec = defaulted.obj["spec"]
    field = next(k for k in spec if k.endswith("ReplicaSpecs"))
    for rspec in spec[field].values():
        named = [p for p in rspec["template"]["spec"]["containers"][0]["ports"] if p["name"] == port_name]
        assert len(named) == 1
        if name != "mxnet-dist-own-port":
            assert named[0]["containerPort"] == port
        else:
            assert named[0]["containerPort"] == 9991  # the user's port of that name is kept


def test_kubeflow_manifest_with_lower_case_replica_keys() -> None:
    obj = migrated("pytorch-ddp")
    field = obj["spec"]["pytorchReplicaSpecs"]
    obj["spec"]["pytorchReplicaSpecs"] = {"master": field["Master"], "worker": field["Worker"]}
    defaulted = default_job(obj).obj
    assert list(defaulted["spec"]["pytorchReplicaSpecs"]) == ["Master", "Worker"]
    assert validate_job(defaulted).ok


def test_field_unknown_to_kubeflow_too_is_refused_offline() -> None:
    # Kubeflow's own MXTune example carries `label:` on a replica spec, a field neither API has
    # (kubectl's default --validate=strict refuses it against Kubeflow's CRD as well).
    obj = migrated("mxnet-tune")
    obj["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] = "2080ti"
    (error,) = validate_job(default_job(obj).obj).errors
    assert (error.path, error.kind) == ("spec.mxReplicaSpecs[TunerServer].label", ErrorKind.INVALID)
    assert error.message.startswith('unknown field "label"') and "restartPolicy, template" in error.message


# --- elastic PyTorch: pod names and gang size ---------------------------------------------------


def elastic(workers: int, min_r: int | None, max_r: int | None, name: str = "train") -> Job:
    policy = {k: v for k, v in (("minReplicas", min_r), ("maxReplicas", max_r)) if v is not None}
    return jobs.job(
        "PyTorchJob",
        name,
        {"Master": 1, "Worker": workers},
        namespace=None,
        image="x",
        spec_extra={"elasticPolicy": policy},
    )


@pytest.mark.parametrize(
    ("length", "max_r", "ok"),
    [(54, 10, True), (54, 11, False), (53, 100, True), (53, 101, False)],
)
def test_elastic_pod_names_are_checked_at_max_replicas(length: int, max_r: int, ok: bool) -> None:
    # <name>-worker-<maxReplicas-1> must fit in 63 characters: Workers scale up to maxReplicas.
    obj = default_job(elastic(2, 1, max_r, name="a" * length)).obj
    errors = validate_job(obj).errors
    assert ok == (errors == [])
    if not ok:
        (error,) = errors
        assert (error.path, error.kind) == ("metadata.name", ErrorKind.INVALID)
        assert f'-worker-{max_r - 1}" would be 64 characters' in error.message
        assert f"use at most {length - 1} characters" in error.message


@pytest.mark.parametrize(
    ("workers", "min_r", "max_r", "expected"),
    [(4, 2, 6, 3), (8, None, 8, 9), (3, 3, None, 4), (4, None, None, 5)],
)
def test_gang_min_available_of_elastic_job_counts_workers_at_min_replicas(
    workers: int, min_r: int | None, max_r: int | None, expected: int
) -> None:
    # Master 1 + Workers at minReplicas (after the min/max defaulting).
    obj = default_job(elastic(workers, min_r, max_r), gang_scheduling=True).obj
    assert obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == expected
    assert validate_job(obj).ok


def test_gang_elastic_workers_scale_within_min_max_while_running() -> None:
    old = default_job(elastic(4, 2, 6), gang_scheduling=True).obj
    for workers in (2, 6):
        new = copy.deepcopy(old)
        new["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
        new = default_job(new, gang_scheduling=True, old=old).obj
        assert new["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 3
        assert validate_job(new, old).ok


def test_gang_default_min_available_follows_replicas_changed_while_suspended() -> None:
    job = elastic(4, 2, 6)
    del job["spec"]["elasticPolicy"]
    job["spec"]["runPolicy"] = {"suspend": True}
    old = default_job(job, gang_scheduling=True).obj
    assert old["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 5
    new = copy.deepcopy(old)
    new["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
    defaulted = default_job(new, gang_scheduling=True, old=old).obj
    assert defaulted["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 3
    assert validate_job(defaulted, old).ok
    assert default_job(defaulted, gang_scheduling=True, old=old).obj == defaulted  # idempotent
    # A minAvailable the user chose is kept (and validated).
    chosen = copy.deepcopy(new)
    chosen["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = 2
    assert (
        default_job(chosen, gang_scheduling=True, old=old).obj["spec"]["runPolicy"]["schedulingPolicy"][
            "minAvailable"
        ]
        == 2
    )


# --- numeric bounds not covered elsewhere --------------------------------------------------------


def pt(**spec: Any) -> Job:
    job = elastic(2, None, None)
    job["spec"].pop("elasticPolicy")
    job["spec"].update(spec)
    return job


BOUNDS: list[tuple[str, Job, Job, str, ErrorKind]] = [
    (
        "scheduleTimeoutSeconds >= 0",
        pt(runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": 0}}),
        pt(runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": -1}}),
        "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
        ErrorKind.INVALID,
    ),
    (
        "maxRestarts >= 0",
        pt(elasticPolicy={"maxRestarts": 0}),
        pt(elasticPolicy={"maxRestarts": -1}),
        "spec.elasticPolicy.maxRestarts",
        ErrorKind.INVALID,
    ),
    (
        "rdzvPort >= 1",
        pt(elasticPolicy={"rdzvPort": 1}),
        pt(elasticPolicy={"rdzvPort": 0}),
        "spec.elasticPolicy.rdzvPort",
        ErrorKind.INVALID,
    ),
    (
        "deprecated nProcPerNode >= 1 (moved to nprocPerNode)",
        pt(elasticPolicy={"nProcPerNode": 1}),
        pt(elasticPolicy={"nProcPerNode": 0}),
        "spec.nprocPerNode",
        ErrorKind.INVALID,
    ),
    (
        "minAvailable is an integer",
        pt(runPolicy={"schedulingPolicy": {"minAvailable": 2}}),
        pt(runPolicy={"schedulingPolicy": {"minAvailable": "2"}}),
        "spec.runPolicy.schedulingPolicy.minAvailable",
        ErrorKind.INVALID,
    ),
]


@pytest.mark.parametrize(("rule", "valid", "bad", "path", "kind"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_numeric_bound(rule: str, valid: Job, bad: Job, path: str, kind: ErrorKind) -> None:
    assert validate_job(default_job(valid).obj).errors == [], rule
    errors = validate_job(default_job(bad).obj).errors
    assert [(e.path, e.kind) for e in errors] == [(path, kind)], rule
    assert str(errors[0]).startswith(f"{path}: {kind.value}: ")


# --- env overlap warning, every kind -------------------------------------------------------------


@pytest.mark.parametrize(
    ("manifest", "rtype", "var"),
    [
        ("tf-ps-worker", "Worker", "TF_CONFIG"),
        ("pytorch-ddp", "Master", "WORLD_SIZE"),
        ("mxnet-tune", "Tuner", "DMLC_ROLE"),
    ],
)
def test_user_env_var_the_operator_sets_is_a_warning(manifest: str, rtype: str, var: str) -> None:
    obj = migrated(manifest)
    field = next(k for k in obj["spec"] if k.endswith("ReplicaSpecs"))
    obj["spec"][field][rtype]["template"]["spec"]["containers"][0]["env"] = [{"name": var, "value": "mine"}]
    result = validate_job(default_job(obj).obj)
    assert result.ok
    assert result.warnings == [
        f"spec.{field}[{rtype}].template.spec.containers[0].env[0]: {var} is also set by kubetrain for "
        f"{obj['kind']} pods; your value is used instead of the operator's"
    ]


# --- update rules, one field at a time -----------------------------------------------------------

RUNNING_ELASTIC = default_job(elastic(2, 1, 4)).obj
RUNNING_ELASTIC["spec"]["elasticPolicy"].update(
    rdzvBackend="c10d", rdzvHost="h", rdzvPort=29400, rdzvId="a", rdzvConf=[{"key": "k", "value": "v"}]
)

IMMUTABLE: list[tuple[str, Any]] = [
    ("rdzvBackend", "etcd"),
    ("rdzvHost", "other"),
    ("rdzvPort", 29500),
    ("rdzvId", "b"),
    ("rdzvConf", [{"key": "k", "value": "w"}]),
]


@pytest.mark.parametrize(("name", "value"), IMMUTABLE, ids=[i[0] for i in IMMUTABLE])
def test_rendezvous_fields_are_immutable(name: str, value: Any) -> None:
    new = copy.deepcopy(RUNNING_ELASTIC)
    new["spec"]["elasticPolicy"][name] = value
    (error,) = validate_job(new, RUNNING_ELASTIC).errors
    assert (error.path, error.kind) == (f"spec.elasticPolicy.{name}", ErrorKind.FORBIDDEN)
    assert error.message.endswith("delete and recreate the job to change it")


def test_elastic_policy_cannot_be_added_or_removed() -> None:
    without = copy.deepcopy(RUNNING_ELASTIC)
    del without["spec"]["elasticPolicy"]
    for new, old in ((without, RUNNING_ELASTIC), (RUNNING_ELASTIC, without)):
        errors = [(e.path, e.kind) for e in validate_job(new, old).errors]
        assert ("spec.elasticPolicy", ErrorKind.FORBIDDEN) in errors


MUTABLE_WHILE_RUNNING: list[tuple[str, tuple[str, ...], Any]] = [
    ("suspend", ("spec", "runPolicy", "suspend"), True),
    ("ttlSecondsAfterFinished", ("spec", "runPolicy", "ttlSecondsAfterFinished"), 60),
    ("activeDeadlineSeconds", ("spec", "runPolicy", "activeDeadlineSeconds"), 3600),
    ("backoffLimit", ("spec", "runPolicy", "backoffLimit"), 7),
    ("elastic Worker replicas (max)", ("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 4),
    ("elastic Worker replicas (min)", ("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 1),
]


@pytest.mark.parametrize(
    ("rule", "path", "value"), MUTABLE_WHILE_RUNNING, ids=[m[0] for m in MUTABLE_WHILE_RUNNING]
)
def test_mutable_fields_change_while_running(rule: str, path: tuple[str, ...], value: Any) -> None:
    assert RUNNING_ELASTIC["spec"]["runPolicy"]["suspend"] is False
    new = copy.deepcopy(RUNNING_ELASTIC)
    target = new
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    assert validate_job(default_job(new).obj, RUNNING_ELASTIC).errors == [], rule


def test_elastic_workers_outside_min_max_are_refused_on_update() -> None:
    new = copy.deepcopy(RUNNING_ELASTIC)
    new["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 5
    (error,) = validate_job(new, RUNNING_ELASTIC).errors
    assert str(error) == (
        "spec.pytorchReplicaSpecs[Worker].replicas: Invalid: 5 is outside elasticPolicy "
        "minReplicas..maxReplicas (1..4)"
    )


def test_non_elastic_replicas_change_only_while_suspended() -> None:
    old = default_job(pt()).obj
    new = copy.deepcopy(old)
    new["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    (error,) = validate_job(new, old).errors
    assert str(error) == (
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: can only change while the job is "
        "suspended (spec.runPolicy.suspend: true)"
    )
    suspended = copy.deepcopy(old)
    suspended["spec"]["runPolicy"]["suspend"] = True
    new["spec"]["runPolicy"]["suspend"] = False  # resume and resize in one update (Decision)
    assert validate_job(new, suspended).ok


# --- CRDs: the rules kube-apiserver applies -------------------------------------------------------

# Fields allowed at the root of a schema when the status subresource is enabled
# (apiextensions validation: "only ... fields are allowed at the root of the schema").
ROOT_KEYS = {"type", "properties", "required", "description", "x-kubernetes-preserve-unknown-fields"}
COLUMN_TYPES = {"integer", "number", "string", "boolean", "date"}
TYPE_OF = {"string": str, "integer": int, "boolean": bool, "number": (int, float)}


def walk(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        out += walk(sub, f"{path}.{name}")
    for key in ("additionalProperties", "items"):
        if isinstance(node.get(key), dict):
            out += walk(node[key], f"{path}[]")
    return out


@pytest.mark.parametrize("crd", all_crds(), ids=[c["metadata"]["name"] for c in all_crds()])
def test_crd_passes_apiserver_schema_rules(crd: dict[str, Any]) -> None:
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    assert "status" in version["subresources"]
    assert set(schema) <= ROOT_KEYS and schema["type"] == "object"
    for path, node in walk(schema):
        for name in node.get("required", []):
            assert name in node.get("properties", {}), path
        if "enum" in node:
            assert all(isinstance(v, TYPE_OF[node["type"]]) for v in node["enum"]), path
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node and set(node) <= {"anyOf", "x-kubernetes-int-or-string"}, path
        if node.get("x-kubernetes-preserve-unknown-fields"):
            # open objects may describe some of their properties (a pod template's list keys)
            assert node.get("type") == "object" and "additionalProperties" not in node, path
    for column in version["additionalPrinterColumns"]:
        assert column["type"] in COLUMN_TYPES and column["jsonPath"].startswith(".")
        assert column["name"] and " " not in column["jsonPath"]


def test_scale_subresource_paths() -> None:
    for crd in job_crds():
        scale = crd["spec"]["versions"][0]["subresources"].get("scale")
        if scale is None:
            continue
        assert scale["specReplicasPath"].startswith(".spec.") and "[" not in scale["specReplicasPath"]
        assert scale["statusReplicasPath"].startswith(".status.") and "[" not in scale["statusReplicasPath"]
        assert scale["labelSelectorPath"].startswith((".spec.", ".status."))
        # the paths exist in the schema (the replica map's values / replicaStatuses' values)
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        field = scale["specReplicasPath"].split(".")[2]
        replicas = schema["spec"]["properties"][field]["additionalProperties"]["properties"]["replicas"]
        assert {k: v for k, v in replicas.items() if k != "description"} == {
            "type": "integer",
            "format": "int32",  # the Scale subresource's replicas are int32
        }
        statuses = schema["status"]["properties"]["replicaStatuses"]["additionalProperties"]["properties"]
        assert (statuses["active"]["type"], statuses["active"]["format"]) == ("integer", "int32")
        assert statuses["selector"]["type"] == "string"


def test_training_policy_is_not_in_the_job_category() -> None:
    (policy,) = [c for c in all_crds() if c["spec"]["names"]["kind"] == "TrainingPolicy"]
    assert policy["spec"]["scope"] == "Cluster" and "categories" not in policy["spec"]["names"]
    assert policy["spec"]["names"]["shortNames"] == ["tpol"]


# --- the State column: the latest condition that became True is last -----------------------------

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def state(status: dict[str, Any]) -> str:
    last: str = status["conditions"][-1]["type"]
    return last


def test_state_column_follows_the_latest_true_condition() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Created", True, "JobCreated", "", T0)
    set_not_running(status, "Pending", "waiting for pods", T0)
    assert state(status) == "Created"
    set_running(status, "JobRunning", "", T0)
    assert state(status) == "Running"
    set_restarting(status, "pod failed", T0)
    assert state(status) == "Restarting"
    set_running(status, "JobRunning", "", T0)  # recovered: Restarting goes False
    assert state(status) == "Running"
    set_condition(status, "Suspended", True, "JobSuspended", "", T0)
    set_condition(status, "Running", False, "JobSuspended", "", T0)
    assert state(status) == "Suspended"
    set_condition(status, "Suspended", False, "JobResumed", "", T0)  # resumed, pods not yet running
    assert state(status) == "Created"
    assert [c["status"] for c in status["conditions"]] == ["False", "False", "False", "True"]


# --- through the webhooks: a suspended resize with the gang default ------------------------------


def review(obj: Job, operation: str, old: Job | None = None) -> AdmissionRequest:
    return review_of(obj, operation, old, namespace="ns", group="kubetrain.io")


def test_webhooks_let_a_suspended_gang_job_be_resized() -> None:
    job = pt(runPolicy={"suspend": True})
    response = mutate(review(job, "CREATE"), gang_scheduling=True)
    stored: Job = jsonpatch.apply_patch(job, response.patch or [])
    assert stored["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 3
    edited = copy.deepcopy(stored)
    edited["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 5
    response = mutate(review(edited, "UPDATE", stored), gang_scheduling=True)
    updated: Job = jsonpatch.apply_patch(edited, response.patch or [])
    assert updated["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 6
    assert validate(review(updated, "UPDATE", stored)).allowed
