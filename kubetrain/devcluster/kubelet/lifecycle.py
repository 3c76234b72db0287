"""What the simulated kubelet (and its minimal scheduler) does next with a pod it has seen — pure.

`next_step(pod, ...)` reads the pod as last seen and gives one `Step`, checked in this order:

- `finish-deletion`: the pod is being deleted and runs on one of the simulator's nodes: its
  containers are terminated, then it is deleted (`idle` when it runs elsewhere);
- `bind`: not scheduled, no `spec.schedulingGates` left and a `spec.schedulerName` the
  simulator serves (`idle` otherwise: gated pods stay Pending, others are another scheduler's);
- `stop`: bound to a node that is not the simulator's, or ended: its timers are cancelled;
- `init-retry`: Pending with an init container backing off: restarted at `init_retry`'s time;
- `image`: Pending with an image the kubelet cannot use (`images.py`): Pending for good;
- `start`: Pending and, as far as the pod itself shows, startable — its env references,
  projected volumes and start delay come next (`reconcile.py`: they need the API);
- `run`: Running: its progress reports and the end of its annotated run, or, while a container
  waits out its crash-loop back-off, its restart (`reconcile.py`: the back-off is the kubelet's
  memory, `status.PodTransitions.crash_due`).

`behaviour` is what the pod's `sim.kubetrain.io/*` annotations ask (`behaviour.py`); a malformed
annotation gives the default behaviour and `problem` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from kubetrain.devcluster.kubelet import images, initstatus, podstatus
from kubetrain.devcluster.kubelet.behaviour import Behaviour
from kubetrain.devcluster.kubelet.statuswrite import pod_phase

Action = Literal["idle", "finish-deletion", "bind", "stop", "init-retry", "image", "start", "run"]


@dataclass(frozen=True)
class Step:
    action: Action
    uid: str = ""
    behaviour: Behaviour = field(default_factory=Behaviour)
    problem: str | None = None  # a malformed annotation: the pod runs without simulated behaviour
    init_retry: tuple[int, datetime] | None = None  # (restartCount, when) of the backing-off init container


def next_step(
    pod: dict[str, Any],
    *,
    ours: bool,
    scheduler_names: tuple[str, ...],
    default_run_seconds: float | None,
) -> Step:
    """The pod's next step (module docstring); `ours`: it is bound to one of the simulator's nodes."""
    spec = pod.get("spec") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return Step("finish-deletion" if ours else "idle")
    if not spec.get("nodeName"):
        if spec.get("schedulingGates"):  # not schedulable until every gate is removed
            return Step("idle")
        if (spec.get("schedulerName") or "default-scheduler") in scheduler_names:
            return Step("bind")
        return Step("idle")
    phase = pod_phase(pod)
    if not ours or phase in podstatus.TERMINAL_PHASES:
        return Step("stop")
    uid = str(pod["metadata"].get("uid", ""))
    try:
        behaviour, problem = Behaviour.from_pod(pod, default_run_seconds), None
    except ValueError as exc:
        behaviour, problem = Behaviour(), str(exc)
    if phase != "Pending":
        return Step("run", uid, behaviour, problem)
    due = initstatus.retry_due(pod)
    if due is not None:  # a failed init container: restarted after the back-off
        return Step("init-retry", uid, behaviour, problem, init_retry=due)
    if images.first_failure(pod) is not None:  # an image it cannot use: Pending for good
        return Step("image", uid, behaviour, problem)
    return Step("start", uid, behaviour, problem)
