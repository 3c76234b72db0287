"""Builders for Trainer v2 TrainJob planner tests: the default torch runtime (Trainer's
`torch-distributed`, as `kubetrain dev` installs it), and a TrainJob's pod as the informer shows
it. Import with `from trainjobs import RUNTIME, UID, trainjob_pod`, `torchtune_runtime` (tests/ is on pytest's
`pythonpath`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

RUNTIME: Obj = yaml.safe_load(
    (
        Path(__file__).resolve().parents[1] / "kubetrain/api/trainer/runtimes/torch_distributed.yaml"
    ).read_text()
)
# Trainer's torchtune ClusterTrainingRuntimes as Trainer ships them (<family>/<model>.yaml).
TORCHTUNE_RUNTIMES = Path(__file__).resolve().parent / "data/trainer/runtimes/torchtune"
UID = "tj-uid"  # the uid of the TrainJob "tj" in namespace "ns" the planner tests plan


def trainjob_pod(name: str, phase: str = "Running", attempt: int = 0, ready: bool = True) -> Obj:
    """Pod `name` of TrainJob ns/tj in JobSet restart attempt `attempt`."""
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"jobset.sigs.k8s.io/restart-attempt": str(attempt)},
            "ownerReferences": [{"controller": True, "uid": UID, "kind": "TrainJob", "name": "tj"}],
        },
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def torchtune_runtime(path: str = "llama3_2/llama3_2_1B.yaml") -> Obj:
    """One of Trainer's torchtune runtimes (a fresh copy), by its path under TORCHTUNE_RUNTIMES."""
    loaded: Obj = yaml.safe_load((TORCHTUNE_RUNTIMES / path).read_text())
    return loaded
