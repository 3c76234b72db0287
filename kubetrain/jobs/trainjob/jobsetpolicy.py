"""The JobSet template's run policies beyond success and failure rules, as JobSet applies them
(sigs.k8s.io/jobset: pkg/controllers/startup_policy.go, jobset_controller.go, webhooks):

- `startupPolicy.startupPolicyOrder: InOrder` — replicated jobs are started in their order,
  each only once every job of the ones before it has started (each of its jobs Ready,
  Succeeded or Failed); a replicated job still waiting for its `dependsOn` does not hold back
  the ones after it. `AnyOrder` (the default): all at once.
- `failurePolicy.restartStrategy: BlockingRecreate` — after a whole-gang restart no pod of the
  new attempt is created while any pod of an earlier attempt is left; `Recreate` (the default):
  each pod is recreated as soon as its own predecessor is gone.
- `coordinator` (replicatedJob, jobIndex, podIndex) — every pod gets the label and annotation
  `jobset.sigs.k8s.io/coordinator: <tj>-<rjob>-<jobIndex>-<podIndex>.<subdomain>`, the stable
  address of that pod; the replicated job must exist and both indices be in range, as JobSet's
  webhook checks, and the value must be a valid label value.
- `managedBy` — names the controller of the JobSet object Trainer makes; kubetrain makes none
  and runs the pods itself, so only JobSet's own controller (`JOBSET_CONTROLLER`, or unset) is
  admitted (`managed_by_errors`; the runtime CRDs' rule
  `trainerrules.JOBSET_MANAGED_BY` too): under Trainer another value leaves the JobSet to that
  controller — JobSet's skips it — and a TrainJob's own `spec.managedBy` is how a TrainJob is
  handed to another (MultiKueue).
- `suspend` — Trainer replaces it with the TrainJob's `spec.suspend`; admitted with a warning
  (`jobset_warnings`), as are the template's `metadata.labels`, which label only the JobSet
  object.

Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid
from kubetrain.jobs.trainerrules import JOBSET_CONTROLLER, JOBSET_MANAGED_BY_MESSAGE
from kubetrain.jobs.trainjob.model import Step

IN_ORDER = "InOrder"
BLOCKING_RECREATE = "BlockingRecreate"
COORDINATOR_PATH = "runtime.spec.template.spec.coordinator"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def in_order(jobset_spec: Mapping[str, Any]) -> bool:
    startup = jobset_spec.get("startupPolicy")
    return isinstance(startup, Mapping) and startup.get("startupPolicyOrder") == IN_ORDER


def blocking_recreate(jobset_spec: Mapping[str, Any]) -> bool:
    failure = jobset_spec.get("failurePolicy")
    return isinstance(failure, Mapping) and failure.get("restartStrategy") == BLOCKING_RECREATE


def _index(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def coordinator(
    jobset_spec: Mapping[str, Any], tj: str, subdomain: str, steps: Sequence[Step]
) -> tuple[str, list[FieldError]]:
    """The coordinator endpoint ("" when the template names none), or why it is invalid."""
    spec = jobset_spec.get("coordinator")
    if not isinstance(spec, Mapping):
        return "", []
    rjob = str(spec.get("replicatedJob") or "")
    job_index, pod_index = _index(spec.get("jobIndex")), _index(spec.get("podIndex"))
    step = next((s for s in steps if s.name == rjob), None)
    if step is None:
        names = ", ".join(s.name for s in steps)
        return "", [
            invalid(
                f"{COORDINATOR_PATH}.replicatedJob",
                f"{QUOTE.encode(rjob)} is none of the replicated jobs ({names})",
            )
        ]
    if not 0 <= job_index < step.replicas:
        message = f"{job_index} is not a job index of replicated job {rjob} (0 to {step.replicas - 1})"
        return "", [invalid(f"{COORDINATOR_PATH}.jobIndex", message)]
    if not 0 <= pod_index < step.pods:
        message = f"{pod_index} is not a pod index of replicated job {rjob}'s jobs (0 to {step.pods - 1})"
        return "", [invalid(f"{COORDINATOR_PATH}.podIndex", message)]
    endpoint = f"{tj}-{rjob}-{job_index}-{pod_index}.{subdomain}"
    if len(endpoint) > 63 or not _LABEL_VALUE.match(endpoint):
        message = (
            f"the coordinator's address {QUOTE.encode(endpoint)} is no valid label value (at most 63 "
            "characters): "
            "shorten the TrainJob, replicated job or subdomain name"
        )
        return "", [invalid(COORDINATOR_PATH, message)]
    return endpoint, []


def managed_by_errors(jobset_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """The JobSet template's `managedBy`: unset or JobSet's own controller. `path`: the JobSet
    spec's."""
    manager = jobset_spec.get("managedBy")
    if manager is None or manager == JOBSET_CONTROLLER:
        return []
    return [invalid(f"{path}.managedBy", f"{QUOTE.encode(manager)}: {JOBSET_MANAGED_BY_MESSAGE}")]


def jobset_warnings(template: Mapping[str, Any], path: str) -> list[str]:
    """What of the runtime's JobSet template (`path`: its path) has no effect: `spec.suspend`
    (each TrainJob's `spec.suspend` replaces it, as in Trainer) and `metadata.labels` (they
    would label the JobSet object, which kubetrain does not make)."""
    out: list[str] = []
    spec = template.get("spec")
    if isinstance(spec, Mapping) and spec.get("suspend") is not None:
        out.append(
            f"{path}.spec.suspend: not applied: each TrainJob's own spec.suspend decides (Trainer "
            "replaces this value with it too)"
        )
    meta = template.get("metadata")
    if isinstance(meta, Mapping) and meta.get("labels"):
        out.append(
            f"{path}.metadata.labels: not applied: they label the JobSet object, and kubetrain runs a "
            "TrainJob's pods without one (label the pods in the replicated jobs' pod templates)"
        )
    return out
