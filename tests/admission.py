"""Builders for admission tests: an AdmissionRequest for a job, a TrainingPolicy, the policy
state the webhook decides with, and the object a mutation's JSONPatch produces. Import with
`from admission import review_of, patched, ...` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
from jobs import job, replica

from kubetrain.policy import PolicyIndex
from kubetrain.webhook.policies import PolicyAdmission
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse, encode_review

Obj = dict[str, Any]
GPU_IMAGE = "registry.example.com/ml/bert:1"


def review_of(
    obj: Obj,
    operation: str = "CREATE",
    old: Obj | None = None,
    *,
    namespace: str | None = None,
    group: str | None = None,
) -> AdmissionRequest:
    """The AdmissionRequest kube-apiserver sends for `operation` on `obj` (its group from the
    apiVersion and its namespace, unless given)."""
    return AdmissionRequest(
        uid="u1",
        group=obj["apiVersion"].split("/")[0] if group is None else group,
        version="v1",
        kind=obj["kind"],
        operation=operation,
        name=obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace", "") if namespace is None else namespace,
        sub_resource="",
        object=obj,
        old_object=old,
        dry_run=False,
        raw={},
    )


def patched(obj: Obj, response: AdmissionResponse) -> Obj:
    """`obj` as stored after the response's JSONPatch (unchanged without one)."""
    review = encode_review(response)["response"]
    ops = json.loads(base64.b64decode(review["patch"])) if "patch" in review else []
    result: Obj = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
    return result


def training_policy(name: str, team: str, **spec: Any) -> Obj:
    """A TrainingPolicy for the namespaces labelled team=`team`."""
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {"matchLabels": {"team": team}}, **spec},
    }


def policy_admission(*policies: Obj, team: str = "vision") -> PolicyAdmission:
    """The webhook's policy state: `policies`, and namespace "vision" labelled team=`team`."""
    index = PolicyIndex()
    for p in policies:
        index.on_policy_add(p)
    index.on_namespace_add({"metadata": {"name": "vision", "labels": {"team": team}}})
    return PolicyAdmission(index)


def gpu_job(workers: int = 2, gpus: int = 8, **run_policy: Any) -> Obj:
    """PyTorchJob "bert" in namespace "vision": a Master and `workers` Workers of `gpus` GPUs."""

    def rep(n: int, g: int) -> Obj:
        return replica(
            "PyTorchJob", n, image=GPU_IMAGE, resources={"limits": {"nvidia.com/gpu": g}} if g else None
        )

    return job(
        "PyTorchJob",
        "bert",
        {"Master": rep(1, 0), "Worker": rep(workers, gpus)},
        namespace="vision",
        run_policy=run_policy or None,
    )
