"""What `kubetrain dev` applies: the example or file read into manifests (`load_jobs`), each
created as `kubectl create -f` creates it (`apply_manifest`: its resource by kind and group, its
namespace made when missing, a job group the cluster does not serve named with the flag that
serves it, the server's warnings printed), and `DevError` for input it cannot use.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.errors import QUOTE
from kubetrain.api.groups import JOB_GROUP_VERSIONS, JOB_GROUPS, KUBETRAIN_GROUP, TRAINER_GROUP, group_of
from kubetrain.api.manifests import load_all, yaml_problem
from kubetrain.commands.devcron import cron_ref, is_cron
from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    NAMESPACES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    ResourceRef,
    job_resource_id,
    job_resources_in,
)

# Kubeflow Trainer v2's kinds (applied as they are; `kubetrain dev` serves the group when a
# manifest is of it).
TRAINER_REFS = {ref.kind: ref for ref in (TRAINJOBS, TRAINING_RUNTIMES, CLUSTER_TRAINING_RUNTIMES)}

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def example_names() -> list[str]:
    if not EXAMPLES_DIR.is_dir():
        return []
    names = [p.stem for p in sorted(EXAMPLES_DIR.glob("*.yaml"))]
    names += [f"trainer/{p.stem}" for p in sorted((EXAMPLES_DIR / "trainer").glob("*.yaml"))]
    names += [f"invalid/{p.stem}" for p in sorted((EXAMPLES_DIR / "invalid").glob("*.yaml"))]
    return names


class DevError(Exception):
    """Bad input to `kubetrain dev`; the message says what is valid. `code` is the exit code:
    2 for a bad flag value (as argparse), 1 for a manifest that cannot be read (as `kubetrain
    validate` and `render` exit for one, and as `dev` exits for a refused job)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def load_jobs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The manifests to apply: every document of the example or file, in order."""
    if args.file:
        path = Path(args.file)
    else:
        path = EXAMPLES_DIR / f"{args.example}.yaml"
        if not path.is_file():
            valid = ", ".join(example_names()) or f"none found in {EXAMPLES_DIR}"
            raise DevError(
                f"--example {QUOTE.encode(args.example)}: no such example (valid: {valid})", code=2
            )
    try:
        docs = [d for d in load_all(path.read_text()) if d is not None]
    except FileNotFoundError:
        raise DevError(f"{path}: cannot read: no such file") from None
    except IsADirectoryError:
        raise DevError(f"{path}: cannot read: is a directory") from None
    except UnicodeDecodeError:
        raise DevError(f"{path}: cannot read: not UTF-8 text") from None
    except OSError as err:
        raise DevError(f"{path}: cannot read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise DevError(f"{path}: not valid YAML: {yaml_problem(err)}") from None
    if not docs:
        raise DevError(f"{path}: no manifest in it (expected a job as a YAML mapping)")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise DevError(
                f"{path}: document {i + 1} is a {type(doc).__name__}, not a manifest (a YAML mapping)"
            )
    return docs


def job_ref(job: dict[str, Any]) -> ResourceRef:
    """The API resource of a job manifest, by its kind and its apiVersion's group (kubetrain.io/v1,
    kubeflow.org/v1 or training.kubedl.io/v1alpha1); KeyError says what is valid."""
    kind = str(job.get("kind"))
    api_version = str(job.get("apiVersion") or "")
    group = api_version.split("/")[0] if "/" in api_version else KUBETRAIN_GROUP
    if group == TRAINER_GROUP and kind in TRAINER_REFS:
        return TRAINER_REFS[kind]
    if is_cron(job):
        ref: ResourceRef = cron_ref(job)
        return ref
    refs = job_resources_in(JOB_GROUPS)
    try:
        return refs[job_resource_id(kind, group)]
    except KeyError:
        kinds = sorted({ref.kind for ref in refs.values()})
        raise KeyError(
            f"unknown job {QUOTE.encode(kind)} of {api_version or 'no apiVersion'}; known kinds: "
            f"{', '.join(kinds)} "
            f"of {', '.join(JOB_GROUP_VERSIONS)}"
        ) from None


def manifest_label(job: dict[str, Any], namespaced: bool = True) -> str:
    """`PyTorchJob kubeflow/mnist`, `PyTorchJob kubeflow/mnist-*` for a generateName, or
    `ClusterTrainingRuntime flux-distributed` for a cluster-scoped object."""
    raw = job.get("metadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else "(no name)")
    return (
        f"{job.get('kind')} {meta.get('namespace') or 'default'}/{name}"
        if namespaced
        else f"{job.get('kind')} {name}"
    )


async def ensure_namespace(stack: DevStack, namespace: str, out: Any) -> None:
    """Create the manifest's namespace when it is missing, as a user would with
    `kubectl create namespace` before `kubectl apply` (Kubeflow's examples use `kubeflow`)."""
    try:
        await stack.kube.get(NAMESPACES, None, namespace)
    except ApiError as err:
        if err.status != 404:
            raise
        await stack.kube.create(NAMESPACES, {"metadata": {"name": namespace}})
        print(
            f"created namespace {namespace} (as `kubectl create namespace {namespace}` would)",
            file=out,
            flush=True,
        )


def unserved_group(job: dict[str, Any], served: tuple[str, ...]) -> str:
    """Why a job of a job group the cluster does not serve cannot be created (the API server
    would only say "the server could not find the requested resource"), naming the flag that
    serves it; empty when its group is served."""
    group = group_of(job.get("apiVersion"))
    if group not in JOB_GROUPS or group in served:
        return ""
    flag = ",".join((*served, group))
    return f"{group} is not served: add it with `--api-groups {flag}` (the chart's apiGroups)"


async def apply_manifest(stack: DevStack, job: dict[str, Any], out: Any) -> dict[str, Any] | None:
    """Create one manifest as `kubectl create -f` does: unknown fields are an error
    (fieldValidation=Strict) and the server's warnings are printed. The created job, or None
    when it is refused."""
    metadata = job.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        print(f"{job.get('kind')}: metadata must be a mapping (name, namespace, …)", file=out, flush=True)
        return None
    warnings: list[str] = []
    refusal = ""
    try:
        ref = job_ref(job)
    except KeyError as err:
        print(f"cannot apply: {err.args[0]}", file=out, flush=True)
        return None
    unserved = unserved_group(job, stack.options.api_groups)
    if unserved:
        print(f"{manifest_label(job, ref.namespaced)} refused: {unserved}", file=out, flush=True)
        return None
    namespace = metadata.setdefault("namespace", "default") if ref.namespaced else None
    try:
        if namespace is not None:
            await ensure_namespace(stack, str(namespace), out)
        created: dict[str, Any] = await stack.kube.create(
            ref, job, namespace=namespace, field_validation="Strict", warnings=warnings
        )
    except ApiError as err:
        created = {}
        refusal = f"{manifest_label(job, ref.namespaced)} refused: {err.message}"
    for warning in warnings:
        print(f"Warning: {warning}", file=out, flush=True)
    if not created:
        print(refusal, file=out, flush=True)
        return None
    print(f"applied {manifest_label(created, ref.namespaced)}", file=out, flush=True)
    return created
