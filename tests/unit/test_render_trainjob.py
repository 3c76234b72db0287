"""`kubetrain render` for Kubeflow Trainer TrainJobs: against a runtime of an earlier document or
one of Trainer's defaults, exactly the children the TrainJob's first reconcile creates (snapshot,
PVCs, Service, PodGroup, the ML policy's ConfigMaps and Secrets, pods) — then every pod of every
step; clear errors naming the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.cli import main
from kubetrain.commands._trainervalidate import known_runtimes
from kubetrain.commands.render import render_trainjob
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_planner_render import planner_now

Obj = dict[str, Any]
FLUX = Path(__file__).resolve().parents[1] / "data/trainer/examples/flux"


def render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: Obj | str, args: tuple[str, ...] = ()
) -> tuple[int, list[Obj], str]:
    path = tmp_path / "in.yaml"
    path.write_text("\n---\n".join(d if isinstance(d, str) else yaml.safe_dump(d) for d in docs))
    code = main(["render", str(path), *args])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None], err


def trainjob(name: str = "tj", runtime: str = "torch-distributed", **trainer: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
    }


def names(docs: list[Obj]) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in docs]


def test_a_default_runtimes_trainjob_renders_its_pods_with_trainers_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = render(tmp_path, capsys, trainjob(numNodes=2), args=("-n", "ml"))
    assert code == 0, err
    assert names(docs) == [
        ("ConfigMap", "tj-runtime-snapshot"),
        ("Service", "tj"),
        ("Pod", "tj-node-0-0"),
        ("Pod", "tj-node-0-1"),
    ]
    env = {e["name"]: e.get("value") for e in docs[3]["spec"]["containers"][0]["env"]}
    assert (env["PET_NNODES"], env["PET_MASTER_ADDR"]) == ("2", "tj-node-0-0.tj")
    assert all(d["metadata"]["namespace"] == "ml" for d in docs)
    assert "uid" not in docs[2]["metadata"]["ownerReferences"][0]


def test_the_flux_example_renders_its_configmap_secret_and_wrapped_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime, job = (FLUX / "flux-runtime.yaml").read_text(), (FLUX / "lammps-train-job.yaml").read_text()
    code, docs, err = render(tmp_path, capsys, runtime, job)
    assert code == 0, err
    assert names(docs) == [
        ("ConfigMap", "lammps-flux-runtime-snapshot"),
        ("Service", "lammps-flux"),
        ("ConfigMap", "lammps-flux-flux-entrypoint"),
        ("Secret", "lammps-flux-flux-curve"),
        ("Pod", "lammps-flux-node-0-0"),
        ("Pod", "lammps-flux-node-0-1"),
    ]
    assert "data" not in docs[3]  # its key pair is made when the operator creates it
    assert docs[4]["spec"]["initContainers"][0]["name"] == "flux-installer"


def test_a_torchtune_trainjob_renders_its_pvc_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = trainjob("tune", "torchtune-llama3.2-1b", command=["tune", "run"])
    code, docs, err = render(tmp_path, capsys, job)
    assert code == 0, err
    assert names(docs)[:3] == [
        ("ConfigMap", "tune-runtime-snapshot"),
        ("PersistentVolumeClaim", "initializer-tune"),
        ("Service", "tune"),
    ]
    pods = [n for k, n in names(docs) if k == "Pod"]
    assert pods == ["tune-dataset-initializer-0-0", "tune-model-initializer-0-0", "tune-node-0-0"]


def test_a_volcano_pod_group_policy_renders_its_podgroup_with_the_matching_gang_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = copy.deepcopy(known_runtimes()[("ClusterTrainingRuntime", "torch-distributed")])
    runtime["metadata"] = {"name": "gang", "labels": runtime["metadata"]["labels"]}
    runtime["spec"]["podGroupPolicy"] = {"volcano": {}}
    code, docs, err = render(
        tmp_path, capsys, runtime, trainjob(runtime="gang", numNodes=2), args=("--gang-scheduler", "volcano")
    )
    assert code == 0, err
    assert ("PodGroup", "tj") in names(docs)
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    # the operator's scheduler does not serve the policy: no PodGroup, said on stderr
    code, docs, err = render(tmp_path, capsys, runtime, trainjob(runtime="gang", numNodes=2))
    assert code == 0 and "PodGroup" not in {d["kind"] for d in docs}
    assert "podGroupPolicy.volcano needs the operator's --gang-scheduler volcano" in err


def test_errors_name_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = render(tmp_path, capsys, trainjob(runtime="nope"))
    assert code == 1 and docs == []
    assert (
        'spec.runtimeRef.name: Invalid: ClusterTrainingRuntime "nope" is neither one of Trainer\'s default'
        in err
    )
    code, docs, err = render(tmp_path, capsys, trainjob(numNodes=0))
    assert code == 1 and "spec.trainer.numNodes" in err
    bad_runtime = yaml.safe_load((FLUX / "flux-runtime.yaml").read_text())
    bad_runtime["spec"]["mlPolicy"]["flux"]["numProcPerNode"] = 0
    code, docs, err = render(tmp_path, capsys, bad_runtime, (FLUX / "lammps-train-job.yaml").read_text())
    assert code == 1 and "spec.mlPolicy.flux.numProcPerNode" in err
    assert '"flux-distributed" is neither one of Trainer\'s default runtimes' in err  # not kept


@pytest.mark.parametrize("command", ["render", "validate"])
def test_a_typo_in_a_trainer_document_is_an_unknown_field_naming_the_closest_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    job = trainjob(numNodes=2, numProcPerNod=4)
    job["spec"]["trainer"]["env"] = [{"name": "A", "value": "1"}]  # preserved as written: not walked
    runtime = yaml.safe_load((FLUX / "flux-runtime.yaml").read_text())
    runtime["spec"]["mlPolicy"]["fluxx"] = {}
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([job, runtime]))
    assert main([command, str(path)]) == 1
    err = capsys.readouterr()
    lines = (err.err + err.out).splitlines()
    assert (
        f'{path}#1 (TrainJob/tj): spec.trainer.numProcPerNod: Invalid: unknown field "numProcPerNod" '
        '(did you mean "numProcPerNode"?)' in lines
    )
    assert (
        f"{path}#2 (ClusterTrainingRuntime/flux-distributed): spec.mlPolicy.fluxx: Invalid: "
        'unknown field "fluxx" (did you mean "flux"?)' in lines
    )
    assert not any("env" in line for line in lines)


@pytest.mark.parametrize(
    ("runtime_key", "job"),
    [
        (("ClusterTrainingRuntime", "torch-distributed"), trainjob(numNodes=3)),
        (
            ("ClusterTrainingRuntime", "deepspeed-distributed"),
            trainjob(runtime="deepspeed-distributed", numNodes=2),
        ),
        (
            ("ClusterTrainingRuntime", "torchtune-llama3.2-1b"),
            trainjob(runtime="torchtune-llama3.2-1b", command=["tune", "run"]),
        ),
    ],
)
def test_render_prints_what_the_trainjobs_first_reconcile_creates(
    runtime_key: tuple[str, str], job: Obj
) -> None:
    """One desired_children(...) serves both: the first reconcile creates the snapshot, the
    PVCs, the Service, the policy's objects and the pods it may start now — render prints those,
    then the pods of the steps that wait (dependsOn)."""
    job = copy.deepcopy(job)
    job["metadata"].update(namespace="ml", uid="uid-9", creationTimestamp="2026-11-25T11:59:00Z")
    job["spec"]["runtimeRef"].update(kind="ClusterTrainingRuntime", apiGroup="trainer.kubeflow.org")
    job["spec"]["managedBy"] = "trainer.kubeflow.org/trainjob-controller"
    runtime = known_runtimes()[runtime_key]
    rendered, errors = render_trainjob(job, known_runtimes())
    assert errors == []
    first = plan_trainjob(job, Observed(pods=[]), runtime, planner_now(), PlannerConfig())
    created = [
        *first.create_children[:1],
        *[c for c in first.create_children[1:] if c["kind"] == "PersistentVolumeClaim"],
    ]
    created += [
        first.create_service,
        *[c for c in first.create_children[1:] if c["kind"] != "PersistentVolumeClaim"],
    ]
    created += first.create_pods
    # the snapshot's run record (the attempt's start) is the reconcile's own: not rendered
    assert created[0]["data"].pop("state") and "state" not in rendered[0]["data"]
    assert rendered[: len(created)] == created
    assert all(d["kind"] == "Pod" for d in rendered[len(created) :])  # the steps that wait
