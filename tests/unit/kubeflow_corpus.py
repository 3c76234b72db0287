"""The Kubeflow example corpus under tests/data/kubeflow/ (see its README): where it is, and which
manifests a Kubeflow v1.9 cluster refuses (and so kubetrain must refuse too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubetrain.api.manifests import load_all
from kubetrain.frameworks.registry import known_kinds

CORPUS = Path(__file__).resolve().parents[1] / "data" / "kubeflow"
JOB_KINDS = known_kinds()

# Manifests of the old (pre-runPolicy) v1 layout: kube-apiserver refuses their unknown fields
# against Kubeflow v1.9's CRD schema (`kubectl apply`: strict decoding error), so kubetrain's
# validate and the API server refuse them too, naming the field.
REJECTED: dict[str, list[str]] = {
    "mxnet-operator/examples/train/byteps_dist_gpu_v1.yaml": ["spec.cleanPodPolicy", "spec.successPolicy"],
    "mxnet-operator/examples/tune/mx_job_tune_gpu_v1.yaml": ["spec.mxReplicaSpecs[TunerServer].label"],
    "pytorch-operator/examples/bert/pytorch_job_bert.yaml": [
        "spec.pytorchReplicaSpecs[Master].imagePullPolicy",
        "spec.pytorchReplicaSpecs[Worker].imagePullPolicy",
    ],
    "tf-operator/examples/v1/distribution_strategy/distributed_tfjob.yaml": ["spec.cleanPodPolicy"],
    "tf-operator/examples/v1/distribution_strategy/estimator-API/distributed_tfjob.yaml": [
        "spec.cleanPodPolicy"
    ],
    "tf-operator/examples/v1/distribution_strategy/keras-API/multi_worker_tfjob.yaml": [
        "spec.cleanPodPolicy"
    ],
    "tf-operator/examples/v1/mnist_with_summaries/tf_job_mnist.yaml": ["spec.cleanPodPolicy"],
    "website/content/en/docs/components/training/user-guides/pytorch-1.yaml": ["spec.cleanPodPolicy"],
    # A PodTemplateSpec has no apiVersion or kind (Kubeflow's CRD expands it: strict decoding).
    "training-operator/examples/xgboost/smoke-dist/xgboostjob_v1alpha1_rabit_test.yaml": [
        f"spec.xgbReplicaSpecs[{rtype}].template.{field}"
        for rtype in ("Master", "Worker")
        for field in ("apiVersion", "kind")
    ],
}

# `kubectl get -o yaml` output: accepted by validate and render; a real API server refuses to
# create it while it carries metadata.resourceVersion, so it is not run.
NOT_CREATABLE = {"website/content/en/docs/components/training/user-guides/tensorflow-3.yaml"}


def corpus_files() -> list[str]:
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml"))


def accepted_files() -> list[str]:
    return [f for f in corpus_files() if f not in REJECTED]


def jobs_of(relpath: str) -> list[dict[str, Any]]:
    """The job documents of a corpus file (other documents — a PVC, a Service — left out)."""
    docs = load_all((CORPUS / relpath).read_text())
    return [d for d in docs if isinstance(d, dict) and d.get("kind") in JOB_KINDS]
