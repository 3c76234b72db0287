"""Admission of Kubeflow Trainer v2's kinds (trainer.kubeflow.org): the decisions of
`kubetrain.jobs.trainjob.validate` answered as AdmissionReviews.

- /mutate, TrainJob CREATE/UPDATE: Trainer's defaults (runtimeRef kind and group, managedBy,
  suspend, each runtime patch's time); on CREATE then the matching TrainingPolicies' defaults.
- /validate, TrainJob CREATE/UPDATE: needs the runtime it is checked against, which the server
  reads first (`TrainerReader`: on CREATE the one its runtimeRef names, on UPDATE the runtime
  snapshot it is built from when it has one) and, under a Volcano runtime, the PriorityClasses
  its pod templates name (`gang.priority_classes_to_check`), then every problem in one denial:
  a class the API server says does not exist (404) is refused as Trainer's volcano plugin
  refuses it; one the webhook cannot read (403 under an older chart's RBAC, the API server
  unreachable) is admitted with a warning, never refused.
- /validate, runtime CREATE/UPDATE: the runtime's rules (a warning without the framework
  label the Kubeflow SDK needs); DELETE: refused while TrainJobs that
  are not finished name it (Trainer's in-use protection: the server lists them first)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubetrain.api.trainer import constants as c
from kubetrain.jobs.trainjob import gang, specrules
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.runtimerules import runtime_warnings, validate_runtime
from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob
from kubetrain.kube.clock import SYSTEM_CLOCK
from kubetrain.policy.trainjob import apply_trainjob_defaults, check_trainjob_policies
from kubetrain.webhook.mutate import json_patch
from kubetrain.webhook.policies import PolicyAdmission, policy_denial
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse
from kubetrain.webhook.validate import invalid_message

RUNTIME_KINDS = (c.TRAINING_RUNTIME, c.CLUSTER_TRAINING_RUNTIME)


@dataclass
class TrainerFacts:
    """What the server read from the API for one review."""

    # the runtime a TrainJob is checked against: on UPDATE its snapshot when it has one (Trainer
    # #3960), else the live one its runtimeRef names; None: neither exists (or not read)
    runtime: dict[str, Any] | None = None
    users: list[str] = field(default_factory=list)  # unfinished TrainJobs naming a runtime being deleted
    # the PriorityClasses a Volcano TrainJob names that the API server answered 404 for
    missing_priority_classes: list[str] = field(default_factory=list)
    # those it could not read: name -> why (a 403, the API server unreachable)
    unread_priority_classes: dict[str, str] = field(default_factory=dict)


# The server's reader: the facts one trainer review needs.
TrainerReader = Callable[[AdmissionRequest], Awaitable[TrainerFacts]]


def is_trainer_review(request: AdmissionRequest) -> bool:
    return request.group == c.GROUP and request.kind in c.KINDS


def needs_read(request: AdmissionRequest) -> bool:
    """A validating review that needs the cluster read first."""
    if not is_trainer_review(request) or request.sub_resource:
        return False
    if request.kind == c.TRAINJOB:
        return request.operation in ("CREATE", "UPDATE")
    return request.operation == "DELETE"


def mutate_trainer(
    request: AdmissionRequest, policies: PolicyAdmission | None = None, now: datetime | None = None
) -> AdmissionResponse:
    """Trainer's defaults (each runtime patch's `time` as of `now`, default the system clock's);
    on CREATE then the TrainingPolicy defaults of policies whose kinds include TrainJob
    (`kubetrain.policy.trainjob`), with a warning per default a TrainJob has no field for."""
    if request.kind != c.TRAINJOB or request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    original = request.object
    assert original is not None
    defaulted = default_trainjob(original)
    old = request.old_object if request.operation == "UPDATE" else None
    if isinstance(defaulted.get("spec"), dict):
        old_spec = (old.get("spec") or {}) if old is not None else None
        specrules.default_patch_times(defaulted["spec"], old_spec, now or SYSTEM_CLOCK.now())
    warnings: list[str] = []
    if policies is not None and request.operation == "CREATE":
        namespace = request.namespace or str((original.get("metadata") or {}).get("namespace", ""))
        matching = policies.index.for_job(c.TRAINJOB, namespace)
        if matching:
            result = apply_trainjob_defaults(defaulted, matching, user_job=original)
            defaulted = result.obj
            warnings = [f"{line}: not applied, no TrainJob field takes it" for line in result.skipped]
    response = AdmissionResponse.allow(request.uid, warnings or None)
    response.patch = json_patch(original, defaulted) or None
    return response


def validate_trainer(
    request: AdmissionRequest, facts: TrainerFacts | None = None, policies: PolicyAdmission | None = None
) -> AdmissionResponse:
    """`policies`: TrainingPolicies whose kinds include TrainJob apply their limits to the
    pods the TrainJob will run (on CREATE; `kubetrain.policy.trainjob`)."""
    facts = facts or TrainerFacts()
    if request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    if request.kind in RUNTIME_KINDS:
        if request.operation == "DELETE":
            return _delete_runtime(request, facts.users)
        if request.operation not in ("CREATE", "UPDATE") or request.object is None:
            return AdmissionResponse.allow(request.uid)
        errors = validate_runtime(request.object)
        if errors:
            return AdmissionResponse.deny(request.uid, invalid_message(request.kind, request.object, errors))
        return AdmissionResponse.allow(request.uid, runtime_warnings(request.object) or None)
    if request.kind != c.TRAINJOB or request.operation not in ("CREATE", "UPDATE") or request.object is None:
        return AdmissionResponse.allow(request.uid)
    obj = default_trainjob(request.object)
    old = request.old_object if request.operation == "UPDATE" else None
    if old is not None and old.get("spec") == request.object.get("spec"):
        return AdmissionResponse.allow(request.uid)
    errors = validate_trainjob(obj, old, facts.runtime)
    if facts.runtime is not None:  # Trainer's volcano plugin, on create and update
        errors += gang.missing_priority_class_errors(facts.missing_priority_classes)
    if errors:
        return AdmissionResponse.deny(request.uid, invalid_message(c.TRAINJOB, request.object, errors))
    unread = [
        f'{gang.PRIORITY_CLASS_PATH}: PriorityClass "{name}" not checked: the webhook cannot read it '
        f"({why}); if it does not exist the pods will be refused when created"
        for name, why in facts.unread_priority_classes.items()
    ]
    if policies is None or old is not None or facts.runtime is None:
        return AdmissionResponse.allow(request.uid, unread or None)
    matching = policies.index.for_job(
        c.TRAINJOB, request.namespace or str((obj.get("metadata") or {}).get("namespace", ""))
    )
    resolved, _ = resolve(obj, facts.runtime)
    if not matching or resolved is None:
        return AdmissionResponse.allow(request.uid, unread or None)
    verdict = check_trainjob_policies(obj, resolved, matching)
    if verdict.denials:
        return policy_denial(request.uid, verdict, [])
    return AdmissionResponse.allow(request.uid, [*unread, *(verdict.warnings or [])] or None)


def _delete_runtime(request: AdmissionRequest, users: Sequence[str]) -> AdmissionResponse:
    if not users:
        return AdmissionResponse.allow(request.uid)
    shown = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
    return AdmissionResponse.deny(
        request.uid,
        f'{request.kind} "{request.name}" is in use by TrainJobs that have not finished: {shown}; '
        "delete them or wait for them to finish first",
        code=409,
        reason="Conflict",
    )
