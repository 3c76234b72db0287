"""The ClusterTrainingRuntimes Trainer 2.3 ships (manifests/base/runtimes: torch-distributed,
deepspeed-distributed, mlx-distributed, jax-distributed, xgboost-distributed and the torchtune
runtimes torchtune-llama3.2-1b, torchtune-llama3.2-3b, torchtune-qwen2.5-1.5b — copied unchanged,
Apache-2.0, in `runtimes/`, the torchtune ones from `torchtune/<family>/` as `torchtune_<file>`),
and the `kubeflow-trainer-public` ConfigMap the Kubeflow SDK reads the Trainer version from.
`kubetrain dev` installs both when trainer.kubeflow.org is served; the chart installs them with
`trainer.defaultRuntimes` (default true). Pure (reads package data)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from kubetrain.api.trainer import constants as c

RUNTIME_FILES = (
    "torch_distributed.yaml",
    "deepspeed_distributed.yaml",
    "mlx_distributed.yaml",
    "jax_distributed.yaml",
    "xgboost_distributed.yaml",
    "torchtune_llama3_2_1B.yaml",
    "torchtune_llama3_2_3B.yaml",
    "torchtune_qwen2_5_1.5B.yaml",
)


def default_runtimes() -> list[dict[str, Any]]:
    """The default ClusterTrainingRuntimes, in Trainer's kustomization order."""
    folder = resources.files("kubetrain.api.trainer").joinpath("runtimes")
    out: list[dict[str, Any]] = []
    for name in RUNTIME_FILES:
        doc = yaml.safe_load(folder.joinpath(name).read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            out.append(doc)
    return out


def public_configmap(namespace: str = c.SYSTEM_NAMESPACE) -> dict[str, Any]:
    """`kubeflow-trainer-public`: the Trainer API version kubetrain serves (the SDK warns without it)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": c.PUBLIC_CONFIGMAP,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "kubetrain", "app.kubernetes.io/part-of": "kubetrain"},
        },
        "data": {c.PUBLIC_CONFIGMAP_VERSION_KEY: c.TRAINER_VERSION},
    }
