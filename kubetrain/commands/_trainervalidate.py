"""`kubetrain validate` for Kubeflow Trainer v2 documents (trainer.kubeflow.org/v1alpha1): a
TrainingRuntime or ClusterTrainingRuntime is checked with the webhook's runtime rules and kept
for the TrainJobs after it; a TrainJob is defaulted and checked with the webhook's rules
against the runtime it names — one of the files' (earlier documents) or Trainer's default
ClusterTrainingRuntimes that kubetrain installs. Offline the namespace of a TrainingRuntime is
not compared."""

from __future__ import annotations

import difflib
import functools
from typing import Any, TextIO

from kubetrain.api.errors import QUOTE, FieldError, invalid
from kubetrain.api.groups import TRAINER_GROUP
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.jobs.trainercrds import group_crds
from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob

Runtimes = dict[tuple[str, str], dict[str, Any]]


def known_runtimes() -> Runtimes:
    """Trainer's default ClusterTrainingRuntimes by (kind, name)."""
    return {(r["kind"], r["metadata"]["name"]): r for r in default_runtimes()}


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    """The openAPIV3Schema of each trainer.kubeflow.org kind, from the CRDs kubetrain installs."""
    return {
        crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for crd in group_crds(TRAINER_GROUP)
    }


def unknown_fields(obj: dict[str, Any]) -> list[FieldError]:
    """The fields of a Trainer document's spec its CRD's schema does not have — what the API
    server prunes, and refuses under `kubectl create`'s strict field validation — found the way
    apiextensions-apiserver's pruning walks a structural schema (pkg/apiserver/schema/pruning
    algorithm.go `prune`: properties, additionalProperties, items, and nothing below
    x-kubernetes-preserve-unknown-fields); each names the closest known field."""
    schema = _schemas().get(str(obj.get("kind")))
    spec_schema = ((schema or {}).get("properties") or {}).get("spec")
    if spec_schema is None or "spec" not in obj:
        return []
    errors: list[FieldError] = []
    _walk(obj["spec"], spec_schema, "spec", errors)
    return errors


def _walk(value: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", errors)
        return
    if not isinstance(value, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    props = schema.get("properties")
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        if props is not None and key in props:
            _walk(item, props[key], f"{path}.{key}", errors)
        elif isinstance(additional, dict):
            _walk(item, additional, f"{path}.{key}", errors)
        elif not (additional is True or (props is None and not schema.get("type"))):
            close = difflib.get_close_matches(str(key), sorted(props or ()), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            errors.append(invalid(f"{path}.{key}", f'unknown field "{key}"{hint}'))


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
            f"{ref.get('kind')} {QUOTE.encode(ref.get('name'))} is neither one of Trainer's default runtimes "
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
        errors = unknown_fields(obj) + keep_runtime(obj, runtimes)
        for warning in runtime_warnings(obj):
            print(f"{label}: warning: {warning}", file=report)
        final: dict[str, Any] = obj
    elif kind == c.TRAINJOB:
        final = default_trainjob(obj)
        _, found = trainjob_errors(final, runtimes)
        errors = unknown_fields(obj) + found
    else:
        print(
            f"{label}: kind: Unsupported value: {QUOTE.encode(kind)}: must be one of "
            f"{', '.join(map(QUOTE.encode, c.KINDS))}",
            file=report,
        )
        return False, None
    for error in errors:
        print(f"{label}: {error}", file=report)
    if not errors:
        print(f"{label}: valid", file=report)
    return not errors, final
