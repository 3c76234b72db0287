"""Admission rules for Kubeflow Trainer v2's kinds — every problem at once, each with its field
path (docs/behaviour.md, "TrainJob"):

TrainJob (`default_trainjob`, `validate_trainjob`): runtimeRef defaults to a
ClusterTrainingRuntime in trainer.kubeflow.org and must name a runtime that exists; numNodes ≥ 1
(Trainer: ≥ 0) and numProcPerNode ≥ 1; no variable the runtime's ML policy sets (PET_*, DMLC_*,
OMPI_*, JAX_*) in `trainer.env`; managedBy is Trainer's controller or MultiKueue; activeDeadlineSeconds ≥ 1;
runtimePatches have distinct managers and name replicated jobs and containers the runtime has;
Trainer's CRD field rules and its runtimePatches/initializer rules (`specrules.py`);
the runtime can be run (`resolve`); a torchtune TrainJob passes Trainer's torchtune rules
(`torchtune.validate`, on update too), a Flux one Trainer's Flux rules (`flux.validate`); under a
Volcano runtime no empty `scheduling.volcano.sh/queue-name` on the runtime's template or a
runtimePatch (`gang.queue_errors`, Trainer's volcano plugin, on update too). On
update runtimeRef, managedBy and activeDeadlineSeconds never change, initializer and trainer only
while the TrainJob is suspended.

The runtimes' rules: `runtimerules.py`.
Pure."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.api import startdeadline, trainerstatus
from kubetrain.api.dnsnames import DNS1035_LABEL
from kubetrain.api.errors import (
    QUOTE,
    RECREATE,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    json_int,
    not_supported,
    required,
)
from kubetrain.api.labels import annotations_of
from kubetrain.api.trainer import constants as c
from kubetrain.frameworks.mlpolicies import plugin_for
from kubetrain.jobs.trainjob import (
    gang,
    specrules,
    torchtune,
)
from kubetrain.jobs.trainjob.resolve import resolve

Obj = dict[str, Any]
RUNTIME_KINDS = (c.CLUSTER_TRAINING_RUNTIME, c.TRAINING_RUNTIME)
# Trainer's CRD limit; each pod's hostname `<name>-<step>-<jobIndex>-<index>` must stay a DNS
# label too (≤ 63, checked with the runtime: `resolve`).
MAX_TRAINJOB_NAME = 63
ALWAYS_IMMUTABLE = ("runtimeRef", "managedBy", "activeDeadlineSeconds")
IMMUTABLE_WHILE_RUNNING = ("initializer", "trainer")


def default_trainjob(obj: Mapping[str, Any]) -> Obj:
    """runtimeRef.apiGroup/kind, managedBy and suspend (false) defaults (Trainer's CRD defaults)."""
    out = copy.deepcopy(dict(obj))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    ref = spec.get("runtimeRef")
    if isinstance(ref, dict):
        ref.setdefault("apiGroup", c.GROUP)
        ref.setdefault("kind", c.CLUSTER_TRAINING_RUNTIME)
    spec.setdefault("managedBy", c.TRAINJOB_CONTROLLER)
    spec.setdefault("suspend", False)
    return out


def positive(value: object, path: str, errors: list[FieldError]) -> None:
    if value is not None and (json_int(value) or 0) < 1:
        errors.append(invalid(path, f"must be an integer of at least 1, not {QUOTE.encode(value)}"))


def num_proc_per_node(value: object, path: str, message: str, errors: list[FieldError]) -> None:
    """Trainer's `self >= 1` XValidation of a numProcPerNode (Trainer #3809), with its message."""
    if value is not None and (json_int(value) or 0) < 1:
        errors.append(invalid(path, f"{message}, not {QUOTE.encode(value)}"))


def _trainer_num_nodes(value: object, errors: list[FieldError]) -> None:
    """spec.trainer.numNodes: a negative count gets Trainer's schema message (`Minimum=0`,
    worded as apimachinery's `validate.MinimumProperty`); 0, which Trainer admits (a JobSet of
    no trainer pods), kubetrain refuses — it runs no TrainJob without a training node."""
    path = "spec.trainer.numNodes"
    if value is None:
        return
    number = json_int(value)
    if number is None or number < 0:
        errors.append(
            invalid(path, f"{path} in body should be greater than or equal to 0, not {QUOTE.encode(value)}")
        )
    elif number == 0:
        errors.append(
            invalid(
                path,
                "0 training nodes: kubetrain runs a TrainJob on at least 1 node; omit it for the runtime's",
            )
        )


def validate_trainjob(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, runtime: Mapping[str, Any] | None
) -> list[FieldError]:
    """Every problem of a (defaulted) TrainJob; `runtime` is the one its runtimeRef names (None:
    it does not exist)."""
    errors: list[FieldError] = []
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if name and (len(name) > MAX_TRAINJOB_NAME or not DNS1035_LABEL.match(name)):
        errors.append(
            invalid(
                "metadata.name",
                f"must be a lowercase RFC 1035 label of at most {MAX_TRAINJOB_NAME} characters "
                "(it names the TrainJob's headless Service and its pods' hostnames)",
            )
        )
    spec = obj.get("spec") or {}
    ref = spec.get("runtimeRef") or {}
    if not ref.get("name"):
        errors.append(
            required("spec.runtimeRef.name", "the TrainingRuntime or ClusterTrainingRuntime to run")
        )
    if ref.get("apiGroup") not in (None, c.GROUP):
        errors.append(not_supported("spec.runtimeRef.apiGroup", ref.get("apiGroup"), (c.GROUP,)))
    kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME
    if kind not in RUNTIME_KINDS:
        errors.append(not_supported("spec.runtimeRef.kind", kind, RUNTIME_KINDS))
    elif ref.get("name") and runtime is None and old is None:
        where = f" in namespace {QUOTE.encode(meta.get('namespace'))}" if kind == c.TRAINING_RUNTIME else ""
        errors.append(
            invalid("spec.runtimeRef.name", f"{kind} {QUOTE.encode(ref.get('name'))} not found{where}")
        )
    trainer = spec.get("trainer") or {}
    _trainer_num_nodes(trainer.get("numNodes"), errors)
    num_proc_per_node(
        trainer.get("numProcPerNode"),
        "spec.trainer.numProcPerNode",
        "numProcPerNode must be greater than or equal to 1",
        errors,
    )
    positive(spec.get("activeDeadlineSeconds"), "spec.activeDeadlineSeconds", errors)
    manager = spec.get("managedBy")
    if manager is not None and manager not in c.MANAGERS:
        errors.append(not_supported("spec.managedBy", manager, c.MANAGERS))
    managers: set[str] = set()
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        mgr = patch.get("manager") if isinstance(patch, Mapping) else None
        if not mgr:
            errors.append(required(f"spec.runtimePatches[{i}].manager", "who owns this patch"))
        elif mgr in managers:
            errors.append(
                duplicate(f"spec.runtimePatches[{i}].manager", f"{QUOTE.encode(mgr)} has another patch")
            )
        else:
            managers.add(mgr)
    errors += specrules.field_errors(spec)
    if runtime is not None:
        if old is None or spec.get("initializer") != (old.get("spec") or {}).get("initializer"):
            errors += specrules.initializer_errors(spec, runtime)
        errors += reserved_env_errors(spec, runtime)
        errors += gang.queue_errors(obj, runtime)  # Trainer's volcano plugin, on create and update
        if old is None:
            # with the torchtune and Flux rules; a field already refused above is not repeated
            _, problems = resolve(obj, runtime)
            seen = {e.path for e in errors}
            errors += [p for p in problems if p.path not in seen]
        else:  # the name never changes; the nodes may (suspended), and with them the hostnames
            errors += torchtune.admission_errors(obj, runtime)
            errors += [p for p in resolve(obj, runtime)[1] if p.path == "metadata.name"]
    if old is not None:
        errors += _immutable(spec, old)
        errors += specrules.update_errors(spec, old.get("spec") or {})
        errors += specrules.active_job_errors(spec, old)
    annotations = annotations_of(obj)
    errors += trainerstatus.annotation_errors(annotations)  # the progress annotations, as on every kind
    errors += startdeadline.annotation_errors(annotations)
    return errors


def reserved_env_errors(spec: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """`spec.trainer.env` names no variable the runtime's ML policy sets."""
    ml_policy = (runtime.get("spec") or {}).get("mlPolicy") or {}
    plugin = plugin_for(ml_policy)
    reserved = plugin.reserved_env if plugin else frozenset()
    if ml_policy.get("mpi") is not None:
        reserved = c.MPI_RESERVED_ENV
    return [
        forbidden(
            f"spec.trainer.env[{i}].name",
            f"{var.get('name')} is set by the runtime's ML policy and cannot be set here",
        )
        for i, var in enumerate((spec.get("trainer") or {}).get("env") or [])
        if isinstance(var, Mapping) and var.get("name") in reserved
    ]


def build_errors(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """What the controller checks before it builds a TrainJob from a runtime, besides `resolve`:
    the rules of admission that depend on the runtime and `resolve` does not apply — the
    initializer steps and the ML policy's reserved variables (kubeflow/trainer#3975: a runtime
    changed between admission and the first reconcile is checked, not trusted)."""
    spec = trainjob.get("spec") or {}
    return specrules.initializer_errors(spec, runtime) + reserved_env_errors(spec, runtime)


def _immutable(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    old_spec = old.get("spec") or {}
    for key in ALWAYS_IMMUTABLE:
        if spec.get(key) != old_spec.get(key):
            errors.append(invalid(f"spec.{key}", f"field is immutable; {RECREATE}"))
    running = not (spec.get("suspend") is True and old_spec.get("suspend") is True)
    for key in IMMUTABLE_WHILE_RUNNING:
        if running and spec.get(key) != old_spec.get(key):
            errors.append(invalid(f"spec.{key}", "field is immutable while the TrainJob is not suspended"))
    return errors


# The container each ancestor step must have (Trainer's TrainingRuntime webhook).
