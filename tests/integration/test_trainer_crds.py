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
from kubetrain.kube.client import KubeClient
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
    for crd in trainer_crds():
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    for crd in trainer_crds():
        spec = crd["spec"]
        for _ in range(200):
            if await kube.has_api(spec["group"], "v1alpha1", spec["names"]["plural"]):
                break
            await asyncio.sleep(0.01)
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
