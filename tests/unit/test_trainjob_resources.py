"""`spec.trainer.resourcesPerNode` over the runtime's `node` container resources, as Kubeflow
Trainer 2.3 merges them (MergeResourceRequirements: a strategic merge patch, resource by
resource), and the resources the ML policies count GPUs and CPUs in: the merged ones the pod
gets (Kubeflow Trainer pull request 3974: Trainer 2.3 counted the TrainJob's alone)."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from trainjobs import RUNTIME

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.jobs.trainjob.patches import merge_resources, runtime_resources
from kubetrain.jobs.trainjob.resolve import resolve

from .test_trainjob_torchtune import node_of
from .test_trainplan import trainjob

Obj = dict[str, Any]


def _runtime(resources: Obj) -> Obj:
    """Trainer's torch-distributed with `resources` on its `node` container."""
    runtime = copy.deepcopy(RUNTIME)
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        for container in rjob["template"]["spec"]["template"]["spec"]["containers"]:
            if container["name"] == "node":
                container["resources"] = resources
    return runtime


def _node(trainer: Obj, runtime: Obj) -> tuple[Obj, dict[str, str]]:
    """The trainer step's `node` container and the torch env it gets, by name."""
    node, env = node_of(trainjob(trainer=trainer), runtime)
    return node, {e["name"]: e.get("value") for e in env}


def test_resources_per_node_is_merged_into_the_runtimes_resource_by_resource() -> None:
    runtime = _runtime({"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"nvidia.com/gpu": "1"}})
    node, env = _node({"resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}}}, runtime)
    assert node["resources"] == {
        "requests": {"cpu": "4", "memory": "8Gi"},  # kept from the runtime
        "limits": {"nvidia.com/gpu": "2"},  # the TrainJob's quantity wins
    }
    assert env["PET_NPROC_PER_NODE"] == "auto"  # GPUs per node from the TrainJob's resources


def test_the_torch_policy_counts_the_runtimes_gpus_the_pod_still_gets() -> None:
    # Kubeflow Trainer pull request 3974: a TrainJob raising only its CPU request, against a
    # runtime declaring 4 GPUs, runs pods with all 4 GPUs; counting resourcesPerNode alone (as
    # Trainer 2.3 does) made numProcPerNode `auto` the CPU count and left 3 GPUs idle.
    runtime = _runtime({"limits": {"nvidia.com/gpu": "4"}})
    node, env = _node({"resourcesPerNode": {"requests": {"cpu": "3"}}}, runtime)
    assert node["resources"] == {"limits": {"nvidia.com/gpu": "4"}, "requests": {"cpu": "3"}}
    assert env["PET_NPROC_PER_NODE"] == "auto"
    # a TrainJob setting the GPUs to 0 runs on the CPU count
    no_gpu = {"requests": {"cpu": "3"}, "limits": {"nvidia.com/gpu": "0"}}
    node, env = _node({"resourcesPerNode": no_gpu}, runtime)
    assert node["resources"] == {"limits": {"nvidia.com/gpu": "0"}, "requests": {"cpu": "3"}}
    assert env["PET_NPROC_PER_NODE"] == "3"


def test_the_torch_policy_counts_the_runtimes_cpus_under_a_trainjob_memory_override() -> None:
    runtime = _runtime({"requests": {"cpu": "6"}})
    _, env = _node({"resourcesPerNode": {"requests": {"memory": "32Gi"}}}, runtime)
    assert env["PET_NPROC_PER_NODE"] == "6"  # Trainer 2.3 wrote 1


def test_xgboost_counts_the_runtimes_gpus_under_a_trainjob_override() -> None:
    runtime = _runtime({"limits": {"nvidia.com/gpu": "2"}})
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "xgboost": {}}
    job = trainjob(trainer={"numNodes": 3, "resourcesPerNode": {"requests": {"memory": "1Gi"}}})
    resolved, errors = resolve(job, runtime)
    assert not errors and resolved is not None
    [node_env] = [a for a in resolved.env.additions if a.container == "node"]
    assert {e["name"]: e.get("value") for e in node_env.env}["DMLC_NUM_WORKER"] == "6"


def test_env_injection_targets_get_the_node_containers_values() -> None:
    """torch.envInjection's containers get the `node` container's PET_* values, counted in the
    same (merged) resources."""
    runtime = _runtime({"requests": {"memory": "1Gi"}})
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["preflight"]}]}
    }
    [rjob] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjob["template"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "preflight", "image": "busybox"}
    ]
    job = trainjob(trainer={"resourcesPerNode": {"requests": {"cpu": "3"}}})
    resolved, errors = resolve(job, runtime)
    assert not errors and resolved is not None
    nproc = {
        a.container: next(e["value"] for e in a.env if e["name"] == "PET_NPROC_PER_NODE")
        for a in resolved.env.additions
    }
    assert nproc == {"node": "3", "preflight": "3"}


def test_without_resources_per_node_the_runtimes_resources_stay_and_are_counted() -> None:
    runtime = _runtime({"requests": {"cpu": "2"}})
    node, env = _node({"numNodes": 2}, runtime)
    assert node["resources"] == {"requests": {"cpu": "2"}}
    assert env["PET_NPROC_PER_NODE"] == "2"


def test_merge_resources_follows_a_strategic_merge_patch() -> None:
    base = {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "2"},
        "claims": [{"name": "gpu", "request": "a"}, {"name": "nic"}],
    }
    override = {
        "requests": {"memory": None, "ephemeral-storage": "5Gi"},
        "claims": [{"name": "gpu", "request": "b"}],
    }
    assert merge_resources(base, override) == {
        "requests": {"cpu": "1", "ephemeral-storage": "5Gi"},  # null removes a resource
        "limits": {"cpu": "2"},
        "claims": [{"name": "gpu", "request": "b"}, {"name": "nic"}],  # merged by name
    }
    assert merge_resources(None, {"limits": {"cpu": "1"}}) == {"limits": {"cpu": "1"}}
    assert base["requests"] == {"cpu": "1", "memory": "1Gi"}  # the runtime's copy is not changed


def test_runtime_resources_is_the_first_node_container_that_has_any() -> None:
    spec = yaml.safe_load(
        """
        replicatedJobs:
          - name: dataset-initializer
            template:
              spec: {template: {spec: {containers: [{name: node, resources: {limits: {cpu: "9"}}}]}}}
          - name: launcher
            template:
              metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
              spec: {template: {spec: {containers: [{name: node}]}}}
          - name: node
            template:
              spec:
                template: {spec: {containers: [{name: node, resources: {limits: {nvidia.com/gpu: "4"}}}]}}
        """
    )
    assert runtime_resources(spec) == {"limits": {"nvidia.com/gpu": "4"}}
    assert runtime_resources({"replicatedJobs": []}) == {}


def test_mpi_slots_count_the_runtimes_gpus_when_the_trainjob_sets_no_resources() -> None:
    [deepspeed] = [r for r in default_runtimes() if r["metadata"]["name"] == "deepspeed-distributed"]
    runtime = copy.deepcopy(deepspeed)
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if rjob["name"] == "node":
            rjob["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
                "limits": {"nvidia.com/gpu": "4"}
            }
    job = trainjob(trainer={"numNodes": 2})
    job["spec"]["runtimeRef"]["name"] = runtime["metadata"]["name"]
    resolved, errors = resolve(job, runtime)
    assert not errors and resolved is not None
    hostfile = next(o for o in resolved.extra if o["kind"] == "ConfigMap")["data"]["hostfile"]
    assert [line.split()[-1] for line in hostfile.splitlines()] == ["slots=4", "slots=4"]
    # A TrainJob's resourcesPerNode naming no GPU keeps the runtime's 4, in the pods and the slots
    # (Kubeflow Trainer pull request 3974; Trainer 2.3 wrote slots=1).
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "1"}}
    resolved, _ = resolve(job, runtime)
    assert resolved is not None
    hostfile = next(o for o in resolved.extra if o["kind"] == "ConfigMap")["data"]["hostfile"]
    assert [line.split()[-1] for line in hostfile.splitlines()] == ["slots=4", "slots=4"]
    # its own GPU quantity wins
    job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": "2"}}
    resolved, _ = resolve(job, runtime)
    assert resolved is not None
    hostfile = next(o for o in resolved.extra if o["kind"] == "ConfigMap")["data"]["hostfile"]
    assert [line.split()[-1] for line in hostfile.splitlines()] == ["slots=2", "slots=2"]


def test_with_run_launcher_as_node_the_node_pods_get_resources_per_node_too() -> None:
    """Trainer 2.3's newRuntimeInfo (`isMPILauncherAsNode`): under `runLauncherAsNode` the
    `node` job's `node` container gets the merged resourcesPerNode as the launcher's does — the
    hostfile gives every node pod the slots those GPUs make."""
    [deepspeed] = [r for r in default_runtimes() if r["metadata"]["name"] == "deepspeed-distributed"]
    job = trainjob(trainer={"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}}})
    job["spec"]["runtimeRef"]["name"] = "deepspeed-distributed"
    resolved, errors = resolve(job, deepspeed)
    assert not errors and resolved is not None
    resources = {
        (s.name, x["name"]): x.get("resources")
        for s in resolved.steps
        for x in s.pod_template["spec"]["containers"]
    }
    assert resources == {
        ("node", "node"): {"limits": {"nvidia.com/gpu": "2"}},
        ("launcher", "node"): {"limits": {"nvidia.com/gpu": "2"}},
    }
    hostfile = next(o for o in resolved.extra if o["kind"] == "ConfigMap")["data"]["hostfile"]
    assert [line.split()[-1] for line in hostfile.splitlines()] == ["slots=2"] * 3
    # without runLauncherAsNode the node job is not the trainer's: its resources stay the runtime's
    plain = copy.deepcopy(deepspeed)
    plain["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    resolved, errors = resolve(job, plain)
    assert not errors and resolved is not None
    node = next(s for s in resolved.steps if s.name == "node").pod_template["spec"]["containers"][0]
    assert node.get("resources") is None


def test_with_run_launcher_as_node_one_node_is_still_a_launcher_and_a_node_pod() -> None:
    """Trainer's MPI plug-in gives the `node` job `max(numNodes-1, 1)` pods under
    `runLauncherAsNode`: numNodes 1 (the deepspeed runtime's default) runs the launcher and one
    node pod, both hosts of the hostfile (docs/behaviour.md, the `mpi` Limit)."""
    [deepspeed] = [r for r in default_runtimes() if r["metadata"]["name"] == "deepspeed-distributed"]
    job = trainjob(trainer={"numNodes": 1})
    job["spec"]["runtimeRef"]["name"] = "deepspeed-distributed"
    resolved, errors = resolve(job, deepspeed)
    assert not errors and resolved is not None
    assert {s.name: s.pods for s in resolved.steps} == {"node": 1, "launcher": 1}
    hostfile = next(o for o in resolved.extra if o["kind"] == "ConfigMap")["data"]["hostfile"]
    assert hostfile.splitlines() == ["tj-node-0-0.tj slots=1", "tj-launcher-0-0.tj slots=1"]
