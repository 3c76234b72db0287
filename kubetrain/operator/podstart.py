"""Pods that cannot start: containers (init containers too) of a job's pods that wait for a
reason that does not pass by itself — a wrong image (`ErrImagePull`/`ImagePullBackOff`,
`InvalidImageName`, `ErrImageNeverPull`), a missing ConfigMap/Secret or a bad env reference
(`CreateContainerConfigError`), a container runtime error (`CreateContainerError`). Such a pod
stays Pending and no failure rule counts it; the job says why, and may give up. Pure.

`judge` over the live pods of the current attempt gives a `Verdict`:
- the condition `PodsNotStarting` (True, reason the first container's reason, message: how many
  containers, the first `MAX_LISTED` as `pod/container Reason`, then the kubelet's message of
  the first). What it lists is kept as facts, a `Listed` (the first `MAX_LISTED` waiting
  (pod, container, reason) and how many wait): the verdict's `listed`, which the controller
  keeps per job and hands to the next `judge` (`Observed.not_starting`). The condition is
  rewritten (a status write) only when that changes; `ErrImagePull` and `ImagePullBackOff` —
  which the kubelet alternates between — are one reason here, written `ImagePullBackOff`. When
  no container waits any more it goes False (reason `PodsStarted`; a TrainJob's is removed: the
  Kubeflow SDK reads a TrainJob without conditions as running from its pods);
- one Warning event `PodNotStarting` per listed (pod, container, reason) the condition did not
  list yet — naming the pod, the container, the kubelet's reason and message.
  Nothing is read back from a condition but its status: its message is for people. Without
  `listed` (an operator process that has not judged the job yet) a condition already True was
  written by an earlier process, which told its containers: the condition is set as it should
  read now (a write only if its text differs) and no event is told until the set changes;
- with a start deadline (`kubetrain.io/start-deadline-seconds`, kubetrain.api.startdeadline):
  a Pending pod scheduled (its PodScheduled=True condition's lastTransitionTime) at least that
  long ago with a container still waiting so fails the job (reason `StartDeadlineExceeded`);
  before then `due` is when to look again. A pod that is not scheduled (unschedulable, queued,
  waiting for its gang) never counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.operator.pods import pod_name, pod_phase, terminating

CONDITION = "PodsNotStarting"
REASON_STARTED = "PodsStarted"
REASON_DEADLINE = "StartDeadlineExceeded"
EVENT = "PodNotStarting"
PULL_BACK_OFF = "ImagePullBackOff"
REASONS = frozenset(
    {
        "ErrImagePull",
        PULL_BACK_OFF,
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
_STATUS_KEYS = (("initContainerStatuses", True), ("containerStatuses", False))
MAX_LISTED = 10  # containers a condition names (and events tell); the rest are counted
MAX_KUBELET_MESSAGE = 300  # characters of the kubelet's message kept
KUBELET = " Kubelet: "  # ends the condition's summary, before the kubelet's message (never parsed)
STARTED_MESSAGE = "Every container of the job's pods could start."
Token = tuple[str, str, str]  # (pod, container, reason as the condition writes it)


@dataclass(frozen=True)
class Waiting:
    """A container of a pod waiting to start for one of `REASONS`."""

    pod: str
    container: str
    init: bool
    reason: str  # the kubelet's
    message: str  # the kubelet's, truncated
    scheduled_at: datetime | None  # the pod's PodScheduled=True transition
    pending: bool  # the pod never started (phase Pending)

    @property
    def kind(self) -> str:
        """The reason as the condition writes it: one for the pull back-off's alternation."""
        return PULL_BACK_OFF if self.reason == "ErrImagePull" else self.reason

    @property
    def key(self) -> Token:
        return self.pod, self.container, self.kind

    @property
    def token(self) -> str:
        return f"{self.pod}/{self.container} {self.kind}"

    def told(self, deadline: int | None = None) -> str:
        what = f"{'init container' if self.init else 'container'} {self.container}"
        text = f"pod {self.pod} {what} cannot start: {self.reason}"
        if deadline is not None:
            text = (
                f"pod {self.pod} was scheduled more than {deadline}s ago (its start deadline) "
                f"and its {what} still cannot start: {self.reason}"
            )
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class Listed:
    """What a `CONDITION` says, as facts: the waiting containers it names (the first
    `MAX_LISTED`) and how many wait in all; `NOTHING` when none waits."""

    containers: tuple[Token, ...] = ()
    count: int = 0


NOTHING = Listed()


@dataclass
class Verdict:
    waiting: list[Waiting] = field(default_factory=list)  # every waiting container, sorted
    listed: Listed = NOTHING  # what the condition says once this verdict is written
    # The condition to write: (reason, message); None: leave it as it is.
    condition: tuple[str, str] | None = None
    cleared: bool = False  # no container waits: the condition goes False (or away)
    events: list[Waiting] = field(default_factory=list)  # newly seen: one Warning event each
    failed: str | None = None  # the start deadline passed: why the job fails
    due: datetime | None = None  # the earliest start deadline still ahead


def truncate(text: str, limit: int = MAX_KUBELET_MESSAGE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def scheduled_at(pod: Mapping[str, Any]) -> datetime | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def waiting_containers(pod: Mapping[str, Any]) -> list[Waiting]:
    """The containers of `pod` waiting for one of `REASONS` (init containers first); none for a
    pod that ended, is being deleted or is not scheduled. Cheap for a pod with none: its
    container states are looked at before anything is parsed."""
    status = pod.get("status") or {}
    found: list[tuple[Mapping[str, Any], bool, Mapping[str, Any]]] = []
    for key, init in _STATUS_KEYS:
        for cs in status.get(key) or ():
            state = cs.get("state") if isinstance(cs, dict) else None
            waiting = state.get("waiting") if isinstance(state, dict) else None
            if isinstance(waiting, dict) and waiting.get("reason") in REASONS:
                found.append((cs, init, waiting))
    if not found or terminating(pod) or pod_phase(pod) in ("Succeeded", "Failed"):
        return []
    at = scheduled_at(pod)
    if at is None:
        return []
    pending = pod_phase(pod) == "Pending"
    return [
        Waiting(
            pod_name(pod),
            str(cs.get("name") or ""),
            init,
            str(waiting["reason"]),
            truncate(str(waiting.get("message") or "")),
            at,
            pending,
        )
        for cs, init, waiting in found
    ]


def summary(waiting: list[Waiting], title: str) -> str:
    listed = ", ".join(w.token for w in waiting[:MAX_LISTED])
    more = f" and {len(waiting) - MAX_LISTED} more" if len(waiting) > MAX_LISTED else ""
    return f"{title}: {len(waiting)} container(s) of its pods cannot start: {listed}{more}."


def judge(
    pods: Iterable[Mapping[str, Any]],
    old_condition: Mapping[str, Any] | None,
    deadline: int | None,
    now: datetime,
    title: str,
    *,
    listed: Listed | None = None,
) -> Verdict:
    """See the module docstring. `old_condition`: the job's `CONDITION` as last written (only its
    status is read); `listed`: what it lists, as the last verdict this process wrote for the job
    said (None: none yet)."""
    waiting = sorted(
        (w for pod in pods for w in waiting_containers(pod)),
        key=lambda w: (w.pod, not w.init, w.container),
    )
    was_true = old_condition is not None and old_condition.get("status") == "True"
    verdict = Verdict(waiting)
    if not waiting:
        verdict.cleared = old_condition is not None and was_true
        return verdict
    shown = waiting[:MAX_LISTED]
    verdict.listed = Listed(tuple(w.key for w in shown), len(waiting))
    if not was_true or listed != verdict.listed:
        first = waiting[0]
        new_summary = summary(waiting, title)
        message = f"{new_summary}{KUBELET}{first.message}" if first.message else new_summary
        verdict.condition = (first.kind, message)
        # Told already: what a True condition lists (all of it when written by an earlier process).
        told = () if not was_true else verdict.listed.containers if listed is None else listed.containers
        verdict.events = [w for w in shown if w.key not in told]
    if deadline is None:
        return verdict
    for w in waiting:
        if not w.pending or w.scheduled_at is None:
            continue
        due = w.scheduled_at + timedelta(seconds=deadline)
        if now >= due:
            verdict.failed = f"{title} has failed: {w.told(deadline)}"
            return verdict
        verdict.due = due if verdict.due is None else min(verdict.due, due)
    return verdict
