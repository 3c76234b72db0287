"""`kubetrain validate` for Kubeflow Trainer v2 documents (trainer.kubeflow.org/v1alpha1): a
TrainingRuntime or ClusterTrainingRuntime is checked with the webhook's runtime rules and kept
for the TrainJobs after it; a TrainJob is defaulted and checked with the webhook's rules
against the runtime it names — one of the files' (earlier documents) or Trainer's default
ClusterTrainingRuntimes that kubetrain installs. Offline the namespace of a TrainingRuntime is
not compared."""

from __future__ import annotations

from typing import Any, TextIO

from kubetrain.api.errors import FieldError, invalid
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.jobs.trainjob.validate import (
    default_trainjob,
    runtime_warnings,
    validate_runtime,
    validate_trainjob,
)

Runtimes = dict[tuple[str, str], dict[str, Any]]


def known_runtimes() -> Runtimes:
    """Trainer's default ClusterTrainingRuntimes by (kind, name)."""
    return {(r["kind"], r["metadata"]["name"]): r for r in default_runtimes()}


def keep_runtime(obj: dict[str, Any], runtimes: Runtimes) -> list[FieldError]:
    """A runtime document's problems; a valid one is kept in `runtimes` for the TrainJobs after it."""
    errors = validate_runtime(obj)
    if not errors:
        runtimes[(str(obj.get("kind")), str((obj.get("metadata") or {}).get("name", "")))] = obj
    return errors


def trainjob_errors(
    trainjob: dict[str, Any], runtimes: Runtimes
) -> tuple[dict[str, Any] | None, list[FieldError]]:
    """The runtime a (defaulted) TrainJob names, found in `runtimes`, and the TrainJob's problems
    against it — a runtime not found said as offline checks find it."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    runtime = runtimes.get((str(ref.get("kind")), str(ref.get("name"))))
    errors = [
        invalid(
            e.path,
            f"{ref.get('kind')} {ref.get('name')!r} is neither one of Trainer's default runtimes "
            "nor in an earlier document of the files given",
        )
        if runtime is None and e.path == "spec.runtimeRef.name" and "not found" in e.message
        else e
        for e in validate_trainjob(trainjob, None, runtime)
    ]
    return runtime, errors


def check_trainer_document(
    obj: dict[str, Any], label: str, report: TextIO, runtimes: Runtimes
) -> tuple[bool, Any]:
    kind = obj.get("kind")
    if kind in (c.TRAINING_RUNTIME, c.CLUSTER_TRAINING_RUNTIME):
        errors = keep_runtime(obj, runtimes)
        for warning in runtime_warnings(obj):
            print(f"{label}: warning: {warning}", file=report)
        final: dict[str, Any] = obj
    elif kind == c.TRAINJOB:
        final = default_trainjob(obj)
        _, errors = trainjob_errors(final, runtimes)
    else:
        print(f"{label}: kind: Unsupported value: {kind!r}: must be one of {', '.join(c.KINDS)}", file=report)
        return False, None
    for error in errors:
        print(f"{label}: {error}", file=report)
    if not errors:
        print(f"{label}: valid", file=report)
    return not errors, final
