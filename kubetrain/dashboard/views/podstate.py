"""What a pod is doing now, in one word and one sentence, from its status alone. Pure.

`pod_state` gives the word `kubectl get pods` prints in its STATUS column (`kubetrain.api.podprint`,
shared with devcluster's printer) — `printPod` in
k8s.io/kubernetes pkg/printers/internalversion/printers.go: the phase, replaced by
`status.reason`, by a failing init container's `Init:<reason>`, by the last app container's
waiting reason (`CrashLoopBackOff`, `ImagePullBackOff`, `CreateContainerConfigError`…) or
terminated reason (`ExitCode:<n>` / `Signal:<n>` when it has none); `Terminating` while a pod
being deleted has not reached a terminal phase, `Unknown` for one whose node is unreachable
(`NodeLost`) — and, with it, why: the kubelet's message for that reason (the back-off message),
and for a pod a controller disrupted its `DisruptionTarget` condition's reason said in words
(`EvictionByEvictionAPI` → evicted, e.g. by a node drain), so a user sees "evicted" rather than
"Failed".

`ok` says the pod works as asked: Running with every container ready, or Succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.podprint import printed_pod
from kubetrain.dashboard.views.timeutil import format_stamp

# The DisruptionTarget condition's reasons (k8s.io/api/core/v1 types.go, PodReasonPreemptionByScheduler …)
DISRUPTIONS = {
    "EvictionByEvictionAPI": "evicted through the Eviction API (a node drain, or a user's eviction)",
    "DeletionByTaintManager": "evicted: its node has a NoExecute taint (not ready or unreachable)",
    "DeletionByPodGC": "deleted by the pod garbage collector: its node is gone",
    "PreemptionByScheduler": "preempted by the scheduler for a pod of higher priority",
    "TerminationByKubelet": "terminated by the kubelet (node pressure or a node shutdown)",
}
# words of a pod on its way (not failing): its tone is "waiting"; a Running pod not ready too
WAITING_WORDS = ("Running", "Pending", "ContainerCreating", "PodInitializing", "Terminating", "NotReady")


@dataclass(frozen=True)
class PodState:
    word: str  # kubectl's STATUS column: Running, CrashLoopBackOff, Terminating, Init:Error…
    why: str  # a sentence saying why ("" when the word says it all)
    restarts: int
    ready: str  # ready containers of all, "1/2"
    ok: bool  # works as asked: Running and ready, or Succeeded

    @property
    def tone(self) -> str:
        """The CSS class of the word: ok, done (Succeeded), waiting, bad."""
        if self.word == "Succeeded" or self.word == "Completed":
            return "done"
        if self.ok:
            return "ok"
        if self.word in WAITING_WORDS or (
            self.word.startswith("Init:") and self.word[5:].split("/")[0].isdigit()
        ):
            return "waiting"
        return "bad"


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def _statuses(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [cs for cs in status.get(key) or () if isinstance(cs, dict)]


def disruption(pod: Mapping[str, Any]) -> str:
    """Why a controller disrupted the pod (its DisruptionTarget condition, True), "" if none did."""
    cond = _condition(pod.get("status") or {}, "DisruptionTarget")
    if cond is None or cond.get("status") != "True":
        return ""
    reason = str(cond.get("reason") or "")
    said = DISRUPTIONS.get(reason, f"disrupted ({reason})" if reason else "disrupted")
    message = str(cond.get("message") or "")
    return f"{said}: {message}" if message else said


def pod_state(pod: Mapping[str, Any]) -> PodState:
    """The pod's STATUS word as `printPod` writes it (`kubetrain.api.podprint`), with why and its
    restarts and readiness."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    printed = printed_pod(pod)
    word = printed.status or phase
    why = str(status.get("message") or "")
    scheduled = _condition(status, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False" and phase == "Pending":
        why = why or str(scheduled.get("message") or scheduled.get("reason") or "")
    if printed.state is not None:
        # the kubelet's message for the reason shown; a finished app container without one keeps
        # the pod's own
        terminated_app = "exitCode" in printed.state and not printed.init
        why = str(printed.state.get("message") or (why if terminated_app else ""))
    containers = _statuses(status, "containerStatuses")
    ready = sum(bool(cs.get("ready")) for cs in containers)
    restarts = sum(int(cs.get("restartCount") or 0) for cs in printed.restarted)
    if meta.get("deletionTimestamp") and word == "Terminating":
        why = (
            f"deleted at {format_stamp(meta['deletionTimestamp'])}: waits for its node to stop its containers"
        )
    gone = disruption(pod)
    if gone:
        why = gone
    ok = (word == "Running" and phase == "Running" and ready == len(containers)) or (
        phase == "Succeeded" and not gone
    )
    return PodState(word, " ".join(why.split()), restarts, f"{ready}/{len(containers)}", ok)
