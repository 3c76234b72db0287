"""KubeDL's own example manifests (tests/data/kubedl/example), for the unit, integration and e2e
tests of the training.kubedl.io group: the ones kubetrain runs as they are, and one loader.
Import with `from kubedl_examples import RUNNABLE, example_job` (tests/ is on pytest's
`pythonpath`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubetrain.api.manifests import load_all

EXAMPLES = Path(__file__).resolve().parent / "data" / "kubedl" / "example"
HOST_PATH = "tf/tf_job_mnist_volume.yaml"  # mounts a hostPath volume: not on every real cluster
RUNNABLE = [
    "tf/tf_job_mnist.yaml",
    "tf/tf_job_mnist_distributed_simple.yaml",
    HOST_PATH,
    "pytorch/pytorch_job_mnist_mpi.yaml",
    "xgboost/xgboostjob_v1alpha1_iris_train.yaml",
]


def example_job(name: str, namespace: str | None = None) -> dict[str, Any]:
    """The one job in example `name` (its other documents, such as Services, left out), put in
    `namespace` when one is given."""
    (job,) = [d for d in load_all((EXAMPLES / name).read_text()) if str(d.get("kind", "")).endswith("Job")]
    if namespace is not None:
        job["metadata"]["namespace"] = namespace
    return job
