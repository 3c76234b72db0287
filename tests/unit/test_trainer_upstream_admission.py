"""Every manifest Kubeflow Trainer ships — its ClusterTrainingRuntimes (manifests/base/runtimes,
the chart's runtimes are the same objects) and its examples (examples/yaml, examples/flux) —
copied unchanged into tests/data/trainer, is admitted by kubetrain exactly as Trainer admits it
(all of them): the CRD schema keeps every field it sets (nothing pruned: a pruned field would
be silently ignored) and finds nothing invalid, the mutating webhook defaults it, the
validating webhook admits it — a TrainJob against the runtime it names, from its own file or
Trainer's defaults — with no warning. devcluster runs a representative set to completion
(tests/integration/test_trainer_examples.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission import patched, review_of

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.devcluster.apiserver.kinds.schema import apply_defaults, prune, validate
from kubetrain.jobs.trainercrds import trainer_crds
from kubetrain.webhook.trainer import TrainerFacts, mutate_trainer, validate_trainer

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"
FILES = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.yaml"))
SCHEMAS = {
    c["spec"]["names"]["kind"]: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] for c in trainer_crds()
}


def documents(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((DATA / name).read_text()) if d]


def stored(obj: Obj) -> Obj:
    """`obj` as the API server takes it: nothing pruned, nothing invalid, then defaulted."""
    schema = SCHEMAS[obj["kind"]]
    dropped: list[str] = []
    prune(copy.deepcopy(obj), schema, dropped=dropped)
    assert dropped == [], f"{obj['kind']} {obj['metadata']['name']}: fields kubetrain's CRD prunes"
    causes = validate(obj, schema)
    assert causes == [], f"{obj['kind']} {obj['metadata']['name']}: {causes}"
    return apply_defaults(copy.deepcopy(obj), schema)  # type: ignore[no-any-return]


def test_every_upstream_file_is_here() -> None:
    """Trainer's runtimes and examples as of the commit docs/behaviour.md §11 names."""
    assert FILES == [
        "examples/01-multi-node.yaml",
        "examples/02-runtime-patches.yaml",
        "examples/03-kueue-integration.yaml",
        "examples/04-volcano-integration.yaml",
        "examples/05-multi-step.yaml",
        "examples/flux/flux-interactive.yaml",
        "examples/flux/flux-runtime.yaml",
        "examples/flux/lammps-train-gpus.yaml",
        "examples/flux/lammps-train-job.yaml",
        "runtimes/deepspeed_distributed.yaml",
        "runtimes/jax_distributed.yaml",
        "runtimes/mlx_distributed.yaml",
        "runtimes/torch_distributed.yaml",
        "runtimes/torch_distributed_with_cache.yaml",
        "runtimes/torchtune/llama3_2/llama3_2_1B.yaml",
        "runtimes/torchtune/llama3_2/llama3_2_3B.yaml",
        "runtimes/torchtune/qwen2_5/qwen2_5_1.5B.yaml",
        "runtimes/xgboost_distributed.yaml",
    ]


def upstream_runtimes() -> dict[tuple[str, str], Obj]:
    """Every runtime of every upstream file, by (kind, name), over Trainer's defaults."""
    out = {(r["kind"], r["metadata"]["name"]): r for r in default_runtimes()}
    for name in FILES:
        for doc in documents(name):
            if doc["kind"] != "TrainJob":
                out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


@pytest.mark.parametrize("name", FILES)
def test_each_upstream_document_is_admitted_unchanged_without_a_warning(name: str) -> None:
    runtimes = upstream_runtimes()
    docs = documents(name)
    assert docs, name
    for doc in docs:
        if doc["kind"] != "ClusterTrainingRuntime":
            doc["metadata"].setdefault("namespace", "default")
        obj = stored(doc)
        facts = TrainerFacts()
        if obj["kind"] == "TrainJob":
            obj = patched(obj, mutate_trainer(review_of(obj)))
            ref = obj["spec"]["runtimeRef"]
            facts.runtime = copy.deepcopy(runtimes[(ref["kind"], ref["name"])])
        response = validate_trainer(review_of(obj), facts)
        assert response.allowed, f"{name}: {doc['kind']} {doc['metadata']['name']}: {response.message}"
        assert not response.warnings, f"{name}: {doc['kind']} {doc['metadata']['name']}: {response.warnings}"


def test_the_admission_parity_check_can_fail() -> None:
    """The same path refuses what Trainer refuses: an example with a field Trainer's CRD lacks
    is pruned, and one breaking Trainer's rules is refused."""
    (job,) = documents("examples/01-multi-node.yaml")
    job["spec"]["trainer"]["gpus"] = 8
    with pytest.raises(AssertionError, match="prunes"):
        stored(job)
    (job,) = documents("examples/01-multi-node.yaml")
    job["metadata"]["namespace"] = "default"
    job["spec"]["trainer"]["env"] = [{"name": "PET_NNODES", "value": "9"}]
    obj = patched(stored(job), mutate_trainer(review_of(stored(job))))
    runtime = upstream_runtimes()[("ClusterTrainingRuntime", "torch-distributed")]
    assert not validate_trainer(review_of(obj), TrainerFacts(runtime=copy.deepcopy(runtime))).allowed
