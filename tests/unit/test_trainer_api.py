"""Kubeflow Trainer v2's API (trainer.kubeflow.org/v1alpha1): the models have exactly the field
names of the Kubeflow SDK's own API models (kubeflow-trainer-api, generated from Trainer 2.3's
OpenAPI), Trainer's own runtimes and example TrainJobs parse unchanged, and the generated CRDs are
structural with the printer columns `kubectl get trainjobs` shows."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import kubeflow_trainer_api.models as sdk
import pytest
import yaml
from pydantic import BaseModel

from kubetrain.api.trainer import jobset, runtime, trainjob
from kubetrain.cli import main
from kubetrain.jobs.trainercrds import group_crds, trainer_crds

DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"

# kubetrain model -> the SDK model with the same wire shape
PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (trainjob.TrainJob, sdk.TrainerV1alpha1TrainJob),
    (trainjob.TrainJobSpec, sdk.TrainerV1alpha1TrainJobSpec),
    (trainjob.RuntimeRef, sdk.TrainerV1alpha1RuntimeRef),
    (trainjob.Initializer, sdk.TrainerV1alpha1Initializer),
    (trainjob.DatasetInitializer, sdk.TrainerV1alpha1DatasetInitializer),
    (trainjob.ModelInitializer, sdk.TrainerV1alpha1ModelInitializer),
    (trainjob.Trainer, sdk.TrainerV1alpha1Trainer),
    (trainjob.RuntimePatch, sdk.TrainerV1alpha1RuntimePatch),
    (trainjob.TrainingRuntimeSpecPatch, sdk.TrainerV1alpha1TrainingRuntimeSpecPatch),
    (trainjob.JobSetTemplatePatch, sdk.TrainerV1alpha1JobSetTemplatePatch),
    (trainjob.JobSetSpecPatch, sdk.TrainerV1alpha1JobSetSpecPatch),
    (trainjob.ReplicatedJobPatch, sdk.TrainerV1alpha1ReplicatedJobPatch),
    (trainjob.JobTemplatePatch, sdk.TrainerV1alpha1JobTemplatePatch),
    (trainjob.JobSpecPatch, sdk.TrainerV1alpha1JobSpecPatch),
    (trainjob.PodTemplatePatch, sdk.TrainerV1alpha1PodTemplatePatch),
    (trainjob.PodSpecPatch, sdk.TrainerV1alpha1PodSpecPatch),
    (trainjob.ContainerPatch, sdk.TrainerV1alpha1ContainerPatch),
    (trainjob.TrainJobStatus, sdk.TrainerV1alpha1TrainJobStatus),
    (trainjob.JobStatus, sdk.TrainerV1alpha1JobStatus),
    (trainjob.TrainerStatus, sdk.TrainerV1alpha1TrainerStatus),
    (trainjob.Metric, sdk.TrainerV1alpha1Metric),
    (runtime.TrainingRuntime, sdk.TrainerV1alpha1TrainingRuntime),
    (runtime.ClusterTrainingRuntime, sdk.TrainerV1alpha1ClusterTrainingRuntime),
    (runtime.TrainingRuntimeSpec, sdk.TrainerV1alpha1TrainingRuntimeSpec),
    (runtime.MLPolicy, sdk.TrainerV1alpha1MLPolicy),
    (runtime.TorchMLPolicySource, sdk.TrainerV1alpha1TorchMLPolicySource),
    (runtime.EnvInjection, sdk.TrainerV1alpha1EnvInjection),
    (runtime.EnvInjectionTarget, sdk.TrainerV1alpha1EnvInjectionTarget),
    (runtime.MPIMLPolicySource, sdk.TrainerV1alpha1MPIMLPolicySource),
    (runtime.FluxMLPolicySource, sdk.TrainerV1alpha1FluxMLPolicySource),
    (runtime.PodGroupPolicy, sdk.TrainerV1alpha1PodGroupPolicy),
    (runtime.CoschedulingPodGroupPolicySource, sdk.TrainerV1alpha1CoschedulingPodGroupPolicySource),
    (runtime.VolcanoPodGroupPolicySource, sdk.TrainerV1alpha1VolcanoPodGroupPolicySource),
    (runtime.JobSetTemplateSpec, sdk.TrainerV1alpha1JobSetTemplateSpec),
    (jobset.JobSetSpec, sdk.JobsetV1alpha2JobSetSpec),
    (jobset.ReplicatedJob, sdk.JobsetV1alpha2ReplicatedJob),
    (jobset.DependsOn, sdk.JobsetV1alpha2DependsOn),
    (jobset.Network, sdk.JobsetV1alpha2Network),
    (jobset.SuccessPolicy, sdk.JobsetV1alpha2SuccessPolicy),
    (jobset.FailurePolicy, sdk.JobsetV1alpha2FailurePolicy),
    (jobset.FailurePolicyRule, sdk.JobsetV1alpha2FailurePolicyRule),
    (jobset.StartupPolicy, sdk.JobsetV1alpha2StartupPolicy),
    (jobset.Coordinator, sdk.JobsetV1alpha2Coordinator),
]


def wire_names(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_field_names_are_trainers(ours: type[BaseModel], theirs: type[BaseModel]) -> None:
    assert wire_names(ours) == wire_names(theirs)


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(DATA.rglob("*.yaml")):  # runtimes/torchtune/<family>/ too
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def test_trainers_runtimes_and_examples_parse_unchanged() -> None:
    models = {
        "TrainJob": trainjob.TrainJob,
        "TrainingRuntime": runtime.TrainingRuntime,
        "ClusterTrainingRuntime": runtime.ClusterTrainingRuntime,
    }
    docs = documents()
    assert {d["kind"] for d in docs} == set(models)
    for doc in docs:
        parsed = models[doc["kind"]].model_validate(doc)
        # nothing dropped: the wire form round-trips
        assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == doc


def test_crds_are_the_three_kinds_with_their_scopes_and_columns() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in trainer_crds()}
    assert set(crds) == {"TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"}
    assert crds["ClusterTrainingRuntime"]["spec"]["scope"] == "Cluster"
    assert crds["TrainJob"]["metadata"]["name"] == "trainjobs.trainer.kubeflow.org"
    tj = crds["TrainJob"]["spec"]["versions"][0]
    assert tj["name"] == "v1alpha1" and tj["subresources"] == {"status": {}}
    columns = {col["name"]: col["jsonPath"] for col in tj["additionalPrinterColumns"]}
    assert columns["State"] == '.status.conditions[?(@.status=="True")].type'
    assert columns["Nodes"] == ".spec.trainer.numNodes"
    assert columns["Runtime"] == ".spec.runtimeRef.name"
    assert columns["Progress"] == ".status.trainerStatus.progressPercentage"
    for crd in crds.values():
        assert crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubetrain"
    assert group_crds("trainer.kubeflow.org") == trainer_crds()


def test_crds_command_prints_the_group() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["crds", "--group", "trainer.kubeflow.org"]) == 0
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out.getvalue())]
    assert names == [
        "trainjobs.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "clustertrainingruntimes.trainer.kubeflow.org",
    ]


def test_validate_checks_trainer_documents_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = sorted(str(p) for p in DATA.glob("examples/*.yaml"))
    assert main(["validate", *examples]) == 0
    assert capsys.readouterr().out.count(": valid") == 7  # 5 files: 5 TrainJobs, 2 runtimes
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": "bad"},
                    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 0}},
                },
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": "lost"},
                    "spec": {"runtimeRef": {"name": "nowhere"}},
                },
            ]
        )
    )
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "bad.yaml#1 (TrainJob/bad): spec.trainer.numNodes: Invalid" in out
    lost = 'bad.yaml#2 (TrainJob/lost): spec.runtimeRef.name: Invalid: ClusterTrainingRuntime "nowhere"'
    assert lost in out
