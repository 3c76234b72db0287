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

Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid
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
