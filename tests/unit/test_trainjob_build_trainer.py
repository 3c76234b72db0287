"""What a TrainJob's first reconcile creates, held to Kubeflow Trainer 2.3's controller
integration tests (test/integration/controller/trainjob_controller_test.go), which compare the
JobSet Trainer builds: here the pods, PodGroup, ConfigMaps and Secret kubetrain makes instead
(docs/behaviour.md, "What a TrainJob becomes"), through `kubetrain render`, which prints exactly
those. Each test names the Trainer cases it answers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainjobs import replicated_jobs, trainer_test_runtime

from .test_render_trainjob import render

Obj = dict[str, Any]
RESOURCES = {"requests": {"cpu": "1", "memory": "4Gi"}}
COMPLETION_INDEX = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}


def trainjob(**spec: Any) -> Obj:
    """Trainer's `alpha` TrainJob: the trainer container `test:trainjob`, command and args
    `trainjob`, 1 CPU and 4Gi per node."""
    trainer = {
        "image": "test:trainjob",
        "command": ["trainjob"],
        "args": ["trainjob"],
        "resourcesPerNode": RESOURCES,
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "alpha"},
        "spec": {
            "runtimeRef": {"name": "alpha", "kind": "TrainingRuntime"},
            "trainer": {**trainer, **spec.pop("trainer", {})},
            **spec,
        },
    }


def pods(docs: list[Obj]) -> dict[str, Obj]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}


def container(pod: Obj, name: str = "node", field: str = "containers") -> Obj:
    found: Obj = next(x for x in pod["spec"].get(field) or [] if x["name"] == name)
    return found


def env(pod: Obj, name: str = "node", field: str = "containers") -> list[tuple[str, Any]]:
    """The container's env in order, without the progress endpoint's (KUBEFLOW_TRAINER_*)."""
    return [
        (e["name"], e.get("value", e.get("valueFrom")))
        for e in container(pod, name, field).get("env") or []
        if not e["name"].startswith("KUBEFLOW_TRAINER_")
    ]


def test_a_plain_runtime_runs_its_initializers_and_nodes_under_one_podgroup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trainer: "Should succeed to create TrainJob with TrainingRuntime" (PlainML): 100 nodes from
    the runtime's mlPolicy, the initializers' STORAGE_URI, the trainer's container on `node`, and
    a coscheduling PodGroup of 102 pods, 102 CPUs, 408Gi, timeout 100."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 100})
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 100}}
    job = trainjob(
        initializer={
            "dataset": {"storageUri": "hf://trainjob-dataset"},
            "model": {"storageUri": "hf://trainjob-model"},
        }
    )
    code, docs, err = render(tmp_path, capsys, runtime, job, args=("--gang-scheduler", "scheduler-plugins"))
    assert code == 0, err
    made = pods(docs)
    assert len(made) == 102 and {f"alpha-node-0-{i}" for i in range(100)} <= set(made)
    [group] = [d for d in docs if d["kind"] == "PodGroup"]
    assert group["spec"] == {
        "minMember": 102,
        "minResources": {"cpu": "102", "memory": "408Gi"},
        "scheduleTimeoutSeconds": 100,
    }
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in made.values()} == {"alpha"}
    for step, uri in (
        ("dataset-initializer", "hf://trainjob-dataset"),
        ("model-initializer", "hf://trainjob-model"),
    ):
        init = made[f"alpha-{step}-0-0"]
        assert container(init, step)["image"] == "test:runtime"
        assert env(init, step) == [("STORAGE_URI", uri)]
    node = container(made["alpha-node-0-99"])
    assert (node["image"], node["command"], node["args"]) == ("test:trainjob", ["trainjob"], ["trainjob"])
    assert node["resources"] == RESOURCES
    assert env(made["alpha-node-0-99"]) == []  # no ML policy: nothing added


def test_runtime_patches_reach_the_node_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Trainer: "Should succeed to create TrainJob with RuntimePatches" (serviceAccountName, pod
    labels and annotations, an init container's env merged in the strategic merge patch's order),
    "Should propagate terminationGracePeriodSeconds from RuntimePatches to JobSet pods", and
    "Should succeed to create TrainJob with Torch TrainingRuntime" (the trainer's env, then
    Trainer's torch variables, and port 29500)."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 100, "torch": {}}, steps=("node",))
    node_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]
    node_spec["initContainers"] = [
        {
            "name": "override-init-container",
            "image": "test:runtime",
            "env": [
                {"name": "INIT_ENV", "value": "original_init"},
                {"name": "DATASET_PATH", "value": "runtime"},
            ],
        }
    ]
    pod_patch = {
        "metadata": {
            "labels": {"override-label-key": "override-label-value", "custom-label": "custom-value"},
            "annotations": {"override-annotation-key": "override-annotation-value"},
        },
        "spec": {
            "serviceAccountName": "override-sa",
            "terminationGracePeriodSeconds": 300,
            "initContainers": [
                {
                    "name": "override-init-container",
                    "env": [
                        {"name": "INIT_ENV", "value": "override_init"},
                        {"name": "NEW_VALUE", "value": "from_overrides"},
                    ],
                }
            ],
        },
    }
    patch = {
        "manager": "test.io/manager",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod_patch}}}]}
            }
        },
    }
    job = trainjob(runtimePatches=[patch], trainer={"env": [{"name": "TRAIN_JOB", "value": "value"}]})
    code, docs, err = render(tmp_path, capsys, runtime, job)
    assert code == 0, err
    pod = pods(docs)["alpha-node-0-0"]
    assert pod["spec"]["serviceAccountName"] == "override-sa"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 300
    assert pod["metadata"]["labels"]["override-label-key"] == "override-label-value"
    assert pod["metadata"]["labels"]["custom-label"] == "custom-value"
    assert pod["metadata"]["annotations"]["override-annotation-key"] == "override-annotation-value"
    assert env(pod, "override-init-container", "initContainers") == [
        ("INIT_ENV", "override_init"),
        ("NEW_VALUE", "from_overrides"),
        ("DATASET_PATH", "runtime"),
    ]
    assert env(pod) == [
        ("TRAIN_JOB", "value"),
        ("PET_NNODES", "100"),
        ("PET_NPROC_PER_NODE", "1"),  # auto, no GPU: the CPU request
        ("PET_NODE_RANK", COMPLETION_INDEX),
        ("PET_MASTER_ADDR", "alpha-node-0-0.alpha"),
        ("PET_MASTER_PORT", "29500"),
    ]
    assert [p["containerPort"] for p in container(pod).get("ports") or []] == [29500]


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        (
            # Should succeed to create TrainJob with Jax TrainingRuntime
            {"jax": {}},
            [
                ("JAX_NUM_PROCESSES", "2"),
                ("JAX_PROCESS_ID", COMPLETION_INDEX),
                ("JAX_COORDINATOR_ADDRESS", "alpha-node-0-0.alpha:29500"),
            ],
        ),
        (
            # Should succeed to create TrainJob with XGBoost TrainingRuntime
            {"xgboost": {}},
            [
                ("DMLC_TRACKER_URI", "alpha-node-0-0.alpha"),
                ("DMLC_TRACKER_PORT", "29500"),
                ("DMLC_TASK_ID", COMPLETION_INDEX),
                ("DMLC_NUM_WORKER", "2"),
            ],
        ),
    ],
)
def test_the_jax_and_xgboost_policies_give_each_node_its_variables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: Obj, want: list[tuple[str, Any]]
) -> None:
    """Trainer: "Should succeed to create TrainJob with Jax TrainingRuntime", "Should succeed to
    create TrainJob with XGBoost TrainingRuntime"."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 1, **policy})
    code, docs, err = render(tmp_path, capsys, runtime, trainjob(trainer={"numNodes": 2}))
    assert code == 0, err
    made = pods(docs)
    assert {"alpha-node-0-0", "alpha-node-0-1"} <= set(made)
    for name in ("alpha-node-0-0", "alpha-node-0-1"):
        assert env(made[name]) == want
        assert [p["containerPort"] for p in container(made[name]).get("ports") or []] == [29500]


@pytest.mark.parametrize(
    ("policy", "variable", "want"),
    [
        ({"torch": {}}, "PET_MASTER_ADDR", "alpha-node-0-0.fleet"),
        ({"jax": {}}, "JAX_COORDINATOR_ADDRESS", "alpha-node-0-0.fleet:29500"),
        ({"xgboost": {}}, "DMLC_TRACKER_URI", "alpha-node-0-0.fleet"),
    ],
)
def test_the_master_address_is_node_0s_hostname_under_the_runtimes_subdomain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: Obj, variable: str, want: str
) -> None:
    """A runtime's `network.subdomain` is every pod's `spec.subdomain` and the headless Service's
    name (JobSet), so node 0 resolves as `<tj>-node-0-0.<subdomain>` only: the address the ML
    policy gives every node — and an envInjection target — is that one (Trainer 2.3 writes
    `<tj>-node-0-0.<tj>`, which under such a runtime names no Service)."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 1, **policy}, steps=("node", "sidecar"))
    runtime["spec"]["template"]["spec"]["network"] = {"subdomain": "fleet"}
    if "torch" in policy:
        policy["torch"]["envInjection"] = {"targets": [{"jobName": "sidecar", "containerNames": ["sidecar"]}]}
    code, docs, err = render(tmp_path, capsys, runtime, trainjob(trainer={"numNodes": 2}))
    assert code == 0, err
    made = pods(docs)
    [service] = [d for d in docs if d["kind"] == "Service"]
    assert service["metadata"]["name"] == "fleet"
    for name in ("alpha-node-0-0", "alpha-node-0-1"):
        assert made[name]["spec"]["subdomain"] == "fleet"
        assert dict(env(made[name]))[variable] == want
    if "torch" in policy:
        assert dict(env(made["alpha-sidecar-0-0"], "sidecar"))[variable] == want


def test_without_dns_hostnames_there_is_no_headless_service_nor_pod_subdomain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JobSet's `network.enableDNSHostnames: false` (default true): no headless Service
    (`createHeadlessSvcIfNecessary`) and no `spec.subdomain` on the pods (`constructJob`); the
    hostname stays the Indexed Job's `<job>-<index>`."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 1, "torch": {}}, steps=("node",))
    runtime["spec"]["template"]["spec"]["network"] = {"enableDNSHostnames": False}
    code, docs, err = render(tmp_path, capsys, runtime, trainjob(trainer={"numNodes": 2}))
    assert code == 0, err
    assert [d for d in docs if d["kind"] == "Service"] == []
    for name, pod in pods(docs).items():
        assert pod["spec"]["hostname"] == name and "subdomain" not in pod["spec"]
    runtime["spec"]["template"]["spec"]["network"] = {"enableDNSHostnames": True}
    code, docs, err = render(tmp_path, capsys, runtime, trainjob(trainer={"numNodes": 2}))
    assert code == 0, err
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Service"] == ["alpha"]
    assert {p["spec"]["subdomain"] for p in pods(docs).values()} == {"alpha"}


def test_an_openmpi_runtime_gets_trainers_secret_hostfile_volumes_and_launcher_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trainer: "Should succeed to create TrainJob with OpenMPI TrainingRuntime": its runtime
    labels `node` as the trainer's and adds an unlabelled `launcher` that waits for it; the
    launcher (found by name) mounts the SSH Secret and the hostfile and gets OpenMPI's variables,
    the nodes only the Secret and the TrainJob's env; the Secret is immutable."""
    runtime = trainer_test_runtime(
        "alpha",
        ml_policy={
            "numNodes": 1,
            "mpi": {
                "numProcPerNode": 8,
                "mpiImplementation": "OpenMPI",
                "sshAuthMountPath": "/root/.ssh",
                "runLauncherAsNode": False,
            },
        },
    )
    launcher = {
        "name": "launcher",
        "dependsOn": [{"name": "node", "status": "Ready"}],
        "template": {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "node", "command": ["mpirun"], "args": ["echo.sh"]}]}
                }
            }
        },
    }
    runtime["spec"]["template"]["spec"]["replicatedJobs"].insert(2, launcher)
    job = trainjob(trainer={"numNodes": 2, "env": [{"name": "TRAIN_JOB", "value": "value"}]})
    code, docs, err = render(tmp_path, capsys, runtime, job)
    assert code == 0, err
    made = pods(docs)
    assert set(made) == {
        "alpha-dataset-initializer-0-0",
        "alpha-model-initializer-0-0",
        "alpha-launcher-0-0",
        "alpha-node-0-0",
        "alpha-node-0-1",
    }
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert by_name[("ConfigMap", "alpha-mpi-hostfile")]["data"] == {
        "hostfile": "alpha-node-0-0.alpha slots=8\nalpha-node-0-1.alpha slots=8\n"
    }
    secret = by_name[("Secret", "alpha-mpi-ssh-auth")]
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    ssh = {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": "alpha-mpi-ssh-auth",
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }
    hostfile = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": "alpha-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }

    def volumes(pod: Obj) -> list[Obj]:
        return [v for v in pod["spec"].get("volumes") or [] if v["name"].startswith("mpi-")]

    def mounts(pod: Obj) -> list[Obj]:
        return [m for m in container(pod).get("volumeMounts") or [] if m["name"].startswith("mpi-")]

    head = made["alpha-launcher-0-0"]
    assert volumes(head) == [ssh, hostfile]
    assert mounts(head) == [
        {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    assert env(head) == [
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_set_default_slots", "8"),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
    ]
    assert container(head)["command"] == ["mpirun"]  # the launcher is not the trainer's job here
    for name in ("alpha-node-0-0", "alpha-node-0-1"):
        node = made[name]
        assert volumes(node) == [ssh]
        assert mounts(node) == [{"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}]
        assert env(node) == [("TRAIN_JOB", "value")]
        assert container(node)["image"] == "test:trainjob"


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_the_snapshot_holds_the_runtime_as_yaml_owned_by_the_trainjob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Trainer: "Should create snapshot ConfigMap with correct structure and ownerReference for a
    TrainingRuntime", "… for a ClusterTrainingRuntime": `data.runtime` is the runtime as YAML
    (as Trainer writes it), the TrainJob its controller, blocking its deletion."""
    runtime = trainer_test_runtime("cluster-training-runtime", kind=kind)
    job = trainjob()
    job["spec"]["runtimeRef"] = {"name": "cluster-training-runtime", "kind": kind}
    code, docs, err = render(tmp_path, capsys, runtime, job)
    assert code == 0, err
    snapshot = docs[0]
    assert snapshot["metadata"]["name"] == "alpha-runtime-snapshot"
    [owner] = snapshot["metadata"]["ownerReferences"]
    assert owner["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and owner["kind"] == "TrainJob"
    assert owner["name"] == "alpha" and owner["controller"] is True and owner["blockOwnerDeletion"] is True
    text = snapshot["data"]["runtime"]
    assert f"kind: {kind}" in text and "name: cluster-training-runtime" in text
    assert yaml.safe_load(text)["spec"] == runtime["spec"]


def test_a_snapshot_an_earlier_kubetrain_wrote_as_json_is_read() -> None:
    """The snapshot's runtime was JSON before it was YAML: a TrainJob started then keeps running
    from it."""
    import json

    from kubetrain.jobs.trainjob.children import SNAPSHOT_KEY, STATE_KEY, read_snapshot

    runtime = trainer_test_runtime("alpha")
    state = {"restarts": 1}
    cm = {"data": {SNAPSHOT_KEY: json.dumps(runtime), STATE_KEY: json.dumps(state)}}
    assert read_snapshot(cm) == (runtime, state)
    cm["data"][SNAPSHOT_KEY] = yaml.safe_dump(copy.deepcopy(runtime))
    assert read_snapshot(cm) == (runtime, state)


def test_runtime_patches_merge_structs_and_volumes_as_a_strategic_merge_patch() -> None:
    """Trainer applies runtime patches as a strategic merge patch (Trainer's "succeeded to build
    JobSet with securityContext overrides from the TrainJob's RuntimePatches"): a securityContext
    or affinity is merged field by field, a volume of the same name keeps only the patch's source
    (`retainKeys`), a container's securityContext is merged too."""
    from kubetrain.jobs.trainjob.patches import apply_runtime_patches

    pod = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1},
        "affinity": {"nodeAffinity": {"x": 1}},
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "other", "emptyDir": {}}],
        "containers": [{"name": "node", "securityContext": {"privileged": False}}],
    }
    template = {"spec": replicated_jobs({"node": pod})}
    pod_patch = {
        "securityContext": {"runAsUser": 1000},
        "affinity": {"podAntiAffinity": {"y": 2}},
        "volumes": [{"name": "data", "configMap": {"name": "cm"}}],
        "containers": [{"name": "node", "securityContext": {"readOnlyRootFilesystem": True}}],
    }
    patch = {
        "manager": "acme.io/x",
        "trainingRuntimeSpec": {"template": {"spec": replicated_jobs({"node": pod_patch})}},
    }
    assert apply_runtime_patches(template, [patch], "spec.runtimePatches") == []
    spec = template["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000}
    assert spec["affinity"] == {"nodeAffinity": {"x": 1}, "podAntiAffinity": {"y": 2}}
    assert spec["volumes"] == [
        {"name": "data", "configMap": {"name": "cm"}},
        {"name": "other", "emptyDir": {}},
    ]
    assert spec["containers"][0]["securityContext"] == {"privileged": False, "readOnlyRootFilesystem": True}


def test_a_runtime_patch_adds_tolerations_to_the_runtimes() -> None:
    """Kueue issue 15161: under Trainer 2.3 (`PodSpecPatch.tolerations` atomic) the toleration of
    a Kueue flavor's runtime patch replaced the runtime's own, so pods lost the toleration of the
    nodes they were meant for and stayed Pending. Here the runtime's tolerations are kept and the
    patch's added after them (docs/behaviour.md §11, the runtime patches' Decision)."""
    from kubetrain.jobs.trainjob.patches import apply_runtime_patches

    own = {
        "key": "user.example.com/dedicated",
        "operator": "Equal",
        "value": "training",
        "effect": "NoSchedule",
    }
    flavor = {"key": "pool.example.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    pod_spec: Obj = {"tolerations": [own], "containers": [{"name": "node"}]}
    template = {
        "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}]}
    }
    node_patch = {"name": "node", "template": {"spec": {"template": {"spec": {"tolerations": [flavor]}}}}}
    patch = {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node_patch]}}},
    }
    assert apply_runtime_patches(template, [patch], "spec.runtimePatches") == []
    spec = template["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert spec["tolerations"] == [own, flavor]
