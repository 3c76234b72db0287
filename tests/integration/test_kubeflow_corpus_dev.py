"""Kubeflow's example manifests (apiVersion changed only) run to success in `kubetrain dev`,
applied as `kubetrain dev -f` applies them; and dev creates jobs as kubectl does."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))

from controller_support import eventually
from kubeflow_corpus import NOT_CREATABLE, accepted_files, jobs_of

from kubetrain.api.manifests import load_all
from kubetrain.commands._devmanifests import apply_manifest, job_ref
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import NAMESPACES, job_resource


def batches() -> list[list[tuple[str, dict[str, Any]]]]:
    """The runnable corpus jobs, split so that no two jobs of one batch share kind/namespace/name
    (several repositories ship the same example under the same name)."""
    out: list[list[tuple[str, dict[str, Any]]]] = []
    keys: list[set[tuple[str, str, str]]] = []
    for relpath in accepted_files():
        if relpath in NOT_CREATABLE:
            continue
        for job in jobs_of(relpath):
            meta = job["metadata"]
            key = (
                job["kind"],
                meta.get("namespace") or "default",
                meta.get("name") or meta.get("generateName"),
            )
            for batch, taken in zip(out, keys, strict=True):
                if key not in taken:
                    batch.append((relpath, job))
                    taken.add(key)
                    break
            else:
                out.append([(relpath, job)])
                keys.append({key})
    return out


def _succeeded(job: dict[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    failed = [c for c in conditions if c.get("type") == "Failed" and c.get("status") == "True"]
    assert not failed, f"{job['metadata']['name']} failed: {failed}"
    return any(c.get("type") == "Succeeded" and c.get("status") == "True" for c in conditions)


@pytest.mark.parametrize("batch", range(len(batches())))
async def test_corpus_jobs_run_to_success(batch: int) -> None:
    jobs = batches()[batch]
    async with DevStack(DevStackOptions(default_run_seconds=0.2)) as stack:
        out = io.StringIO()
        created = []
        for relpath, job in jobs:
            result = await apply_manifest(stack, job, out)
            assert result is not None, f"{relpath}: {out.getvalue()}"
            created.append(result)
        assert "refused" not in out.getvalue()
        for job in created:
            ref, meta = job_resource(job["kind"]), job["metadata"]

            async def done(ref: Any = ref, meta: Any = meta) -> bool:
                return _succeeded(await stack.kube.get(ref, meta["namespace"], meta["name"]))

            await eventually(done, within=60, what=f"{job['kind']} {meta['name']} to succeed")


@pytest.mark.parametrize("batch", range(len(batches())))
async def test_corpus_jobs_run_unchanged_when_serving_kubeflow_org(batch: int) -> None:
    """With `--api-groups kubeflow.org` Kubeflow's manifests apply with no change at all: the
    corpus's apiVersion back to Kubeflow's own `kubeflow.org/v1`, as in its repositories."""
    jobs = [(relpath, {**job, "apiVersion": "kubeflow.org/v1"}) for relpath, job in batches()[batch]]
    async with DevStack(DevStackOptions(default_run_seconds=0.2, api_groups=("kubeflow.org",))) as stack:
        out = io.StringIO()
        created = []
        for relpath, job in jobs:
            result = await apply_manifest(stack, job, out)
            assert result is not None, f"{relpath}: {out.getvalue()}"
            assert result["apiVersion"] == "kubeflow.org/v1"
            created.append(result)
        for job in created:
            ref, meta = job_ref(job), job["metadata"]
            assert ref.group == "kubeflow.org"

            async def done(ref: Any = ref, meta: Any = meta) -> bool:
                return _succeeded(await stack.kube.get(ref, meta["namespace"], meta["name"]))

            await eventually(done, within=60, what=f"{job['kind']}.kubeflow.org {meta['name']} to succeed")


MANIFEST = """
apiVersion: kubetrain.io/v1
kind: PyTorchJob
metadata:
  generateName: mnist-
  namespace: team-a
  annotations:
    build-date: 2024-01-01
spec:
  {extra}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: example.com/train:1
"""


async def test_dev_creates_like_kubectl() -> None:
    """A date-like annotation stays a string; a missing namespace is created (and said so); a
    generateName job is named by the server; an unknown field is refused as kubectl refuses it
    (fieldValidation=Strict); the server's warnings are printed."""
    async with DevStack(DevStackOptions(default_run_seconds=0.2)) as stack:
        out = io.StringIO()
        job = load_all(MANIFEST.format(extra=""))[0]
        created = await apply_manifest(stack, job, out)
        assert created is not None, out.getvalue()
        assert created["metadata"]["annotations"]["build-date"] == "2024-01-01"
        assert created["metadata"]["name"].startswith("mnist-") and len(created["metadata"]["name"]) > 6
        text = out.getvalue()
        assert "created namespace team-a (as `kubectl create namespace team-a` would)" in text
        assert f"applied PyTorchJob team-a/{created['metadata']['name']}" in text
        await stack.kube.get(NAMESPACES, None, "team-a")

        out = io.StringIO()
        unknown = load_all(MANIFEST.format(extra="cleanPodPolicy: All"))[0]
        assert await apply_manifest(stack, unknown, out) is None
        assert out.getvalue().strip() == (
            'PyTorchJob team-a/mnist-* refused: PyTorchJob in version "v1" cannot be handled as a '
            'PyTorchJob: strict decoding error: unknown field "spec.cleanPodPolicy"'
        )
        assert "created namespace" not in out.getvalue()

        out = io.StringIO()
        deprecated = load_all(MANIFEST.format(extra="elasticPolicy: {nProcPerNode: 2}"))[0]
        deprecated["spec"]["pytorchReplicaSpecs"]["Worker"] = {
            "replicas": 1,
            "template": deprecated["spec"]["pytorchReplicaSpecs"].pop("Master")["template"],
        }
        assert await apply_manifest(stack, deprecated, out) is not None, out.getvalue()
        assert "Warning: spec.elasticPolicy.nProcPerNode is deprecated" in out.getvalue()
