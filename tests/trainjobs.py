"""Builders for Trainer v2 TrainJob planner tests: the default torch runtime (Trainer's
`torch-distributed`, as `kubetrain dev` installs it), and a TrainJob's pod as the informer shows
it, and the runtime Trainer's own tests build (`trainer_test_runtime`). Import with
`from trainjobs import RUNTIME, UID, trainjob_pod`, `torchtune_runtime`, `tune_command` (the node
command a Llama torchtune TrainJob gets; tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kubetrain.jobs.failureorder import FailedJob
from kubetrain.jobs.trainjob import children as ch

Obj = dict[str, Any]

RUNTIME: Obj = yaml.safe_load(
    (
        Path(__file__).resolve().parents[1] / "kubetrain/api/trainer/runtimes/torch_distributed.yaml"
    ).read_text()
)
# Trainer's torchtune ClusterTrainingRuntimes as Trainer ships them (<family>/<model>.yaml).
TORCHTUNE_RUNTIMES = Path(__file__).resolve().parent / "data/trainer/runtimes/torchtune"
UID = "tj-uid"  # the uid of the TrainJob "tj" in namespace "ns" the planner tests plan


PLANNED_CREATED = "2026-11-25T11:59:00Z"


def planned_trainjob(nodes: int = 2, **spec: Any) -> Obj:
    """The TrainJob "tj" in namespace "ns" (uid `UID`) the planner tests plan: the
    torch-distributed runtime, `nodes` nodes, and `spec`'s further fields."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ns", "uid": UID, "creationTimestamp": PLANNED_CREATED},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": nodes}, **spec},
    }


def stored_snapshot(job: Obj, runtime: Obj = RUNTIME, state: Obj | None = None) -> Obj:
    """The runtime snapshot ConfigMap of `job` as the planner reads it back stored: owned by the
    TrainJob's uid, with a resourceVersion."""
    cm = ch.build_snapshot(job, runtime, state or {})
    cm["metadata"]["ownerReferences"][0]["uid"] = UID
    cm["metadata"]["resourceVersion"] = "7"
    return cm


def warmup_first_runtime() -> Obj:
    """Trainer's torch runtime with a one-pod step `warmup` the nodes wait for (`Complete`), as
    an initializer is."""
    runtime = copy.deepcopy(RUNTIME)
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs.insert(0, copy.deepcopy(rjobs[0]))
    rjobs[0]["name"] = "warmup"
    rjobs[0]["template"]["metadata"] = {}
    rjobs[1]["dependsOn"] = [{"name": "warmup", "status": "Complete"}]
    return runtime


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


# The overrides Trainer's Llama torchtune runtimes add after the recipe's config (their model and
# output paths under /workspace).
LLAMA_OVERRIDES = [
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]


def tune_command(recipe: str, config: str, rendezvous: str | None = None) -> list[str]:
    """The node command of a Llama torchtune TrainJob: `tune run` (with `--rdzv_endpoint=` when
    given) of `recipe` with `config`, then LLAMA_OVERRIDES."""
    endpoint = [] if rendezvous is None else [f"--rdzv_endpoint={rendezvous}"]
    return ["tune", "run", *endpoint, recipe, "--config", config, *LLAMA_OVERRIDES]


def torchtune_runtime(path: str = "llama3_2/llama3_2_1B.yaml") -> Obj:
    """One of Trainer's torchtune runtimes (a fresh copy), by its path under TORCHTUNE_RUNTIMES."""
    loaded: Obj = yaml.safe_load((TORCHTUNE_RUNTIMES / path).read_text())
    return loaded


def replicated_jobs(pods: Mapping[str, Obj]) -> Obj:
    """A JobSet template's spec with one replicated job per name, each with the pod spec given:
    `{"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod}}}}]}`
    (a runtime's `spec.template.spec`, a runtime patch's `trainingRuntimeSpec.template.spec`)."""
    return {
        "replicatedJobs": [
            {"name": name, "template": {"spec": {"template": {"spec": pod}}}} for name, pod in pods.items()
        ]
    }


def trainer_test_runtime(
    name: str = "alpha",
    *,
    kind: str = "TrainingRuntime",
    ml_policy: Obj | None = None,
    steps: tuple[str, ...] = ("dataset-initializer", "model-initializer", "node"),
) -> Obj:
    """The runtime Trainer's own integration tests build (MakeTrainingRuntimeWrapper): one
    replicated job per step of `steps`, each with a container of its name (image `test:runtime`,
    command and args `runtime`, 1 CPU and 4Gi requested) and the ancestor label of its step
    (`node`: the trainer's; another step: none)."""
    ancestors = {"dataset-initializer": "dataset-initializer", "model-initializer": "model-initializer"}
    ancestors["node"] = "trainer"
    rjobs = []
    for step in steps:
        labels = {"trainer.kubeflow.org/trainjob-ancestor-step": ancestors[step]} if step in ancestors else {}
        container = {
            "name": step,
            "image": "test:runtime",
            "command": ["runtime"],
            "args": ["runtime"],
            "resources": {"requests": {"cpu": "1", "memory": "4Gi"}},
        }
        rjobs.append(
            {
                "name": step,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"template": {"spec": {"containers": [container]}}},
                },
            }
        )
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": ml_policy if ml_policy is not None else {"numNodes": 1},
            "template": {"spec": {"replicatedJobs": rjobs}},
        },
    }


FAILED_AT = datetime(2026, 1, 1, tzinfo=UTC)  # when `failed_jobs` says every Job failed


def failed_jobs(*steps: str, jobs: Mapping[str, int] | None = None) -> list[FailedJob]:
    """One failed Job per step (its index `jobs[step]`, else 0), all failed at the same time: the
    runtime's order decides between them, as JobSet's tie-break does."""
    return [FailedJob(step, (jobs or {}).get(step, 0), FAILED_AT) for step in steps]


# --- reading a TrainJob's plan ---------------------------------------------------------------------
def record_of(p: Any) -> Obj:
    """The run's record the plan writes into the snapshot ConfigMap (`data.state`)."""
    [snap] = p.update_children
    return dict(json.loads(snap["data"]["state"]))


def failed_condition(p: Any) -> Obj | None:
    """The Failed condition the plan's status holds, None without one."""
    return next((c for c in (p.status or {}).get("conditions") or [] if c["type"] == "Failed"), None)


def warnings(p: Any) -> list[tuple[str, str]]:
    """The plan's Warning events, (reason, message) each."""
    return [(e.reason, e.message) for e in p.events if e.type == "Warning"]
