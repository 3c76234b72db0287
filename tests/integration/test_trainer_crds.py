"""Trainer v2's CRDs on devcluster: installed by `DevStack` when `trainer.kubeflow.org` is among
the served groups, structural (devcluster checks as kube-apiserver does), and Trainer's own
runtimes and example TrainJobs are stored unchanged (nothing pruned)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.jobs.trainercrds import trainer_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
)

pytestmark = pytest.mark.asyncio

DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"
REFS = {
    "TrainJob": TRAINJOBS,
    "TrainingRuntime": TRAINING_RUNTIMES,
    "ClusterTrainingRuntime": CLUSTER_TRAINING_RUNTIMES,
}


def strip(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


async def test_trainers_objects_are_stored_unchanged(kube: KubeClient) -> None:
    await install_trainer_crds(kube)
    for path in sorted(DATA.glob("*/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            ref = REFS[doc["kind"]]
            ns = "default" if ref.namespaced else None
            stored = await kube.create(ref, doc, namespace=ns, field_validation="Strict")
            assert strip(stored) == strip(doc), path.name
            labels = doc["metadata"].get("labels") or {}
            assert stored["metadata"].get("labels", {}) == labels


async def test_the_operator_refuses_trainers_own_crds(kube: KubeClient) -> None:
    from kubetrain.operator.apigroups import ApiGroupRefused, check_api_groups

    groups = ("kubetrain.io", "trainer.kubeflow.org")
    with pytest.raises(
        ApiGroupRefused, match=r"install them with `kubetrain crds --group trainer.kubeflow.org"
    ):
        await check_api_groups(kube, groups)
    crds = trainer_crds()
    foreign = {
        **crds[0],
        "metadata": {"name": crds[0]["metadata"]["name"]},
    }  # as Trainer's manifests install it
    for crd in [foreign, *crds[1:]]:
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    with pytest.raises(ApiGroupRefused) as refused:
        await check_api_groups(kube, groups)
    message = str(refused.value)
    assert "trainjobs.trainer.kubeflow.org exists and was not installed by kubetrain" in message
    assert "Kubeflow Trainer's controller" in message and "trainingruntimes" not in message
    current = await kube.get(CUSTOM_RESOURCE_DEFINITIONS, None, crds[0]["metadata"]["name"])
    await kube.replace(
        CUSTOM_RESOURCE_DEFINITIONS,
        {
            **crds[0],
            "metadata": {**crds[0]["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        },
    )
    await check_api_groups(kube, groups)  # kubetrain's own: served


async def install_trainer_crds(kube: KubeClient) -> None:
    for crd in trainer_crds():
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    for crd in trainer_crds():
        spec = crd["spec"]
        for _ in range(200):
            if await kube.has_api(spec["group"], "v1alpha1", spec["names"]["plural"]):
                break
            await asyncio.sleep(0.01)


async def test_the_crds_cel_rule_refuses_zero_procs_per_node_without_the_webhook(kube: KubeClient) -> None:
    """No kubetrain webhook is installed here: devcluster itself evaluates the TrainJob CRD's
    `self >= 1` rule, on create and on a patch, with the answer kube-apiserver gives (422 Invalid,
    the cause at the field with the rule's message); a valid TrainJob is stored."""
    await install_trainer_crds(kube)
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "zero"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numProcPerNode": 0}},
    }
    message = (
        'TrainJob.trainer.kubeflow.org "zero" is invalid: spec.trainer.numProcPerNode: Invalid value: 0: '
        "numProcPerNode must be greater than or equal to 1"
    )
    with pytest.raises(ApiError) as refused:
        await kube.create(TRAINJOBS, job, namespace="default")
    assert refused.value.status == 422 and refused.value.reason == "Invalid"
    assert refused.value.message == message
    assert refused.value.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: numProcPerNode must be greater than or equal to 1",
            "field": "spec.trainer.numProcPerNode",
        }
    ]
    job["spec"]["trainer"]["numProcPerNode"] = 2
    await kube.create(TRAINJOBS, job, namespace="default")
    patch = {"spec": {"trainer": {"numProcPerNode": 0}}}
    with pytest.raises(ApiError) as refused:
        await kube.patch(TRAINJOBS, "default", "zero", patch)
    assert refused.value.status == 422 and refused.value.message == message
    stored = await kube.get(TRAINJOBS, "default", "zero")
    assert stored["spec"]["trainer"]["numProcPerNode"] == 2


async def test_the_crds_name_rules_refuse_a_trainjob_name_that_is_no_dns_label(kube: KubeClient) -> None:
    """Trainer's TrainJob CRD rules on `metadata.name` (Trainer #2767: an RFC 1035 label of at
    most 63 characters; names the pods' Service and hostnames), evaluated by the API server itself
    at the schema's root: a DNS subdomain such as `a.b` passes the name check every object gets
    and is refused by the rule, with Trainer's message."""
    await install_trainer_crds(kube)
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "a.b"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    with pytest.raises(ApiError) as refused:
        await kube.create(TRAINJOBS, job, namespace="default")
    assert refused.value.status == 422 and refused.value.reason == "Invalid"
    assert refused.value.message == (
        'TrainJob.trainer.kubeflow.org "a.b" is invalid: <nil>: Invalid value: '
        "metadata.name must match RFC 1035 DNS label format"
    )
    assert refused.value.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: metadata.name must match RFC 1035 DNS label format",
            "field": "<nil>",
        }
    ]
    job["metadata"]["name"] = "a" * 64
    with pytest.raises(ApiError) as refused:
        await kube.create(TRAINJOBS, job, namespace="default")
    assert refused.value.status == 422
    assert "metadata.name must be no more than 63 characters" in refused.value.message
    job["metadata"]["name"] = "a" * 63
    await kube.create(TRAINJOBS, job, namespace="default")


async def test_the_crds_list_keys_refuse_a_duplicate_key_without_the_webhook(kube: KubeClient) -> None:
    """The CRDs key lists as Trainer's do (`x-kubernetes-list-type: map` / `set`): devcluster, as
    kube-apiserver (apiextensions-apiserver `listtype.ValidateListSetsAndMaps`), refuses a second
    item of one key on create and on update with upstream's words (422 Invalid, one cause at the
    second item); no webhook is installed here."""
    await install_trainer_crds(kube)
    env = [{"name": "LR", "value": "1"}, {"name": "LR", "value": "2"}]
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "dup"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"env": env}},
    }
    shown = 'Duplicate value: {"name":"LR"}'
    with pytest.raises(ApiError) as refused:
        await kube.create(TRAINJOBS, job, namespace="default")
    assert refused.value.status == 422 and refused.value.reason == "Invalid"
    assert (
        refused.value.message
        == f'TrainJob.trainer.kubeflow.org "dup" is invalid: spec.trainer.env[1]: {shown}'
    )
    assert refused.value.body["details"]["causes"] == [
        {"reason": "FieldValueDuplicate", "message": shown, "field": "spec.trainer.env[1]"}
    ]
    job["spec"]["trainer"]["env"] = env[:1]
    await kube.create(TRAINJOBS, job, namespace="default")
    with pytest.raises(ApiError) as refused:
        await kube.patch(TRAINJOBS, "default", "dup", {"spec": {"trainer": {"env": env}}})
    assert refused.value.status == 422 and refused.value.message.endswith(f"spec.trainer.env[1]: {shown}")
    patches = {"spec": {"runtimePatches": [{"manager": "acme.io/a"}, {"manager": "acme.io/a"}]}}
    with pytest.raises(ApiError) as refused:
        await kube.patch(TRAINJOBS, "default", "dup", patches)
    assert refused.value.message.endswith('spec.runtimePatches[1]: Duplicate value: {"manager":"acme.io/a"}')

    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "twice"},
        "spec": {
            "mlPolicy": {
                "torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["a", "a"]}]}}
            },
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {}}},
                        {"name": "node", "template": {"spec": {}}},
                    ]
                }
            },
        },
    }
    with pytest.raises(ApiError) as refused:
        await kube.create(TRAINING_RUNTIMES, runtime, namespace="default")
    assert refused.value.status == 422
    assert [(c["field"], c["message"]) for c in refused.value.body["details"]["causes"]] == [
        ("spec.mlPolicy.torch.envInjection.targets[0].containerNames[1]", 'Duplicate value: "a"'),
        ("spec.template.spec.replicatedJobs[1]", 'Duplicate value: {"name":"node"}'),
    ]
