"""Kubeflow Trainer v2 complaints held against kubetrain (docs/behaviour.md §12), each through
`kubetrain render` (what a cluster would run) or the TrainJob webhook's validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trainjobs import trainer_test_runtime

from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob

from .test_render_trainjob import render

Obj = dict[str, Any]


def _pods(docs: list[Obj]) -> dict[str, Obj]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}


def _node(pod: Obj) -> Obj:
    found: Obj = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
    return found


def _without_trainer(name: str = "alpha") -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "alpha", "kind": "TrainingRuntime"}},
    }


INDEX = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}


@pytest.mark.parametrize(
    "policy,want",
    [
        (
            {"torch": {}},
            [
                ("PET_NNODES", "2"),
                ("PET_NPROC_PER_NODE", "1"),
                ("PET_NODE_RANK", INDEX),
                ("PET_MASTER_ADDR", "alpha-node-0-0.alpha"),
                ("PET_MASTER_PORT", "29500"),
            ],
        ),
        (
            {"jax": {}},
            [
                ("JAX_NUM_PROCESSES", "2"),
                ("JAX_PROCESS_ID", INDEX),
                ("JAX_COORDINATOR_ADDRESS", "alpha-node-0-0.alpha:29500"),
            ],
        ),
        (
            {"xgboost": {}},
            [
                ("DMLC_TRACKER_URI", "alpha-node-0-0.alpha"),
                ("DMLC_TRACKER_PORT", "29500"),
                ("DMLC_TASK_ID", INDEX),
                ("DMLC_NUM_WORKER", "2"),
            ],
        ),
    ],
)
def test_a_trainjob_without_spec_trainer_gets_its_ml_policys_env_and_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: Obj, want: list[tuple[str, Any]]
) -> None:
    """Kubeflow Trainer issue 4076 (pull request 4082): `spec.trainer` is optional, but Trainer's
    torch, JAX and XGBoost plug-ins gave a TrainJob without it no distributed variables and no
    port, so a job running on its runtime's defaults never met at rendezvous."""
    runtime = trainer_test_runtime("alpha", ml_policy={"numNodes": 2, **policy}, steps=("node",))
    code, docs, err = render(tmp_path, capsys, runtime, _without_trainer())
    assert code == 0, err
    pods = _pods(docs)
    assert set(pods) == {"alpha-node-0-0", "alpha-node-0-1"}
    for pod in pods.values():
        node = _node(pod)
        env = [
            (e["name"], e.get("value", e.get("valueFrom")))
            for e in node.get("env") or []
            if not e["name"].startswith("KUBEFLOW_TRAINER_")
        ]
        assert env == want
        assert node["ports"] == [{"containerPort": 29500}]
        # the runtime's own container otherwise, as the TrainJob changes nothing
        assert (node["image"], node["command"], node["args"]) == ("test:runtime", ["runtime"], ["runtime"])


def _patched(*rjob_patches: Obj) -> Obj:
    job = _without_trainer()
    job["metadata"]["namespace"] = "default"
    job["spec"]["runtimePatches"] = [
        {
            "manager": "acme.io/platform",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": list(rjob_patches)}}},
        }
    ]
    return default_trainjob(job)


def _pod_patch(step: str, **pod_spec: Any) -> Obj:
    return {"name": step, "template": {"spec": {"template": {"spec": pod_spec}}}}


PATCH = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
POD = f"{PATCH}.template.spec.template.spec"
NO = "Invalid: the replicated job has no"
ENV = [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}]


@pytest.mark.parametrize(
    "patch,want",
    [
        (
            {"name": "nodes"},
            f'{PATCH}.name: Invalid: the runtime has no replicated job "nodes" (it has: node)',
        ),
        (
            _pod_patch("node", containers=[{"name": "sidecar", "env": ENV}]),
            f'{POD}.containers[0].name: {NO} container "sidecar" (it has: node)',
        ),
        (  # an init container's name, addressed as a container
            _pod_patch("node", containers=[{"name": "prepare", "env": ENV}]),
            f'{POD}.containers[0].name: {NO} container "prepare" (it has: node)',
        ),
        (  # a container's name, addressed as an init container
            _pod_patch(
                "node", initContainers=[{"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]
            ),
            f'{POD}.initContainers[0].name: {NO} initContainer "node" (it has: prepare)',
        ),
    ],
)
def test_a_runtime_patch_naming_what_the_runtime_lacks_is_refused_at_admission(patch: Obj, want: str) -> None:
    """Kubeflow Trainer pull request 3948: Trainer validates runtimePatches after merging them
    into the runtime, so a patch naming a replicated job, container or init container the runtime
    does not declare (or a container by an init container's name) was added rather than refused,
    and the TrainJob failed long after admission with a pod that could never run."""
    runtime = trainer_test_runtime("alpha", steps=("node",))
    [rjob] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjob["template"]["spec"]["template"]["spec"]["initContainers"] = [{"name": "prepare", "image": "busybox"}]
    assert [str(e) for e in validate_trainjob(_patched(patch), None, runtime)] == [want]
    # the same patches of what the runtime declares are admitted
    ok = _pod_patch("node", containers=[{"name": "node"}], initContainers=[{"name": "prepare", "env": ENV}])
    assert validate_trainjob(_patched(ok), None, runtime) == []
