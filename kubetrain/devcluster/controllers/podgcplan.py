"""The decisions of kube-controller-manager's pod garbage collector (k8s.io/kubernetes
pkg/controller/podgc gc_controller.go `PodGCController`) — pure: which pods one `gc` pass
force-deletes, and the status a pod gets first. `podgc.py` lists, keeps the loop and writes.

One pass (`gc`) looks at every pod and Node, in upstream's order:
- `terminated` (`gcTerminated`, only when the threshold is above 0): a pod whose phase is neither
  Pending, Running nor Unknown is terminated; those beyond `--terminated-pod-gc-threshold`
  (12500) are deleted, evicted pods first (phase Failed, reason Evicted: `eviction.PodIsEvicted`),
  then oldest `creationTimestamp` first, name as the tie breaker (`byEvictionAndCreationTimestamp`).
- `terminating_out_of_service` (`gcTerminating`): a pod with a deletionTimestamp whose Node exists,
  is not Ready (`nodeutil.IsNodeReady`: no Ready condition with status True) and has a taint with
  key `node.kubernetes.io/out-of-service` (any effect: `taints.TaintKeyExists`) — the step of
  kubernetes.io's non-graceful node shutdown procedure that frees a lost node's pods.
- `orphaned` (`gcOrphaned`): a pod bound to a Node that no longer exists. `Quarantine` is the
  `orphaned_pods_nodes` delaying queue: a missing node is looked at again `QUARANTINE_TIME` (40 s)
  after it was first seen missing (a later sighting never postpones it), and only a node a live
  GET then does not find (`discoverDeletedNodes`, `checkIfNodeExists`) counts as deleted.
- `unscheduled_terminating` (`gcUnscheduledTerminating`): a pod with a deletionTimestamp and no
  nodeName.
A pod is deleted once per pass even when two rules pick it (upstream's second DELETE is a 404).

Before the DELETE (gracePeriodSeconds 0), `markFailedAndDeletePodWithCondition` moves a pod whose
phase is neither Succeeded nor Failed to Failed — the orphaned one with the condition
`DisruptionTarget=True`, reason `DeletionByPodGC`, message `PodGC: node no longer exists` (Pod
Disruption Conditions, GA in 1.31; the other rules add no condition). `failed_status` builds that
status: `status.observedGeneration` and the condition's the pod's generation as listed
(`CalculatePodStatusObservedGeneration`, `CalculatePodConditionObservedGeneration`: KEP-5067, GA in
1.35), the condition set by `UpdatePodCondition` (kinds/podconditions.py: an existing condition of
the type whose status stays keeps its lastTransitionTime).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.devcluster.apiserver.kinds import podconditions

GC_CHECK_PERIOD = 20.0  # gcCheckPeriod: seconds between passes
QUARANTINE_TIME = 40.0  # quarantineTime: seconds a missing node is given to show up
TERMINATED_POD_GC_THRESHOLD = 12500  # --terminated-pod-gc-threshold (0 or less: never)
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"  # v1.TaintNodeOutOfService
DISRUPTION_REASON = "DeletionByPodGC"
DISRUPTION_MESSAGE = "PodGC: node no longer exists"

# Why a pod is deleted: the `reason` label of upstream's pod_gc_collector_force_delete_pods_total.
TERMINATED = "terminated"
OUT_OF_SERVICE_REASON = "out-of-service"
ORPHANED = "orphaned"
UNSCHEDULED = "unscheduled"

Obj = Mapping[str, Any]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Deletion:
    """One pod a pass force-deletes: which, why, and what its status gets first."""

    namespace: str
    name: str
    uid: str
    why: str  # TERMINATED | OUT_OF_SERVICE_REASON | ORPHANED | UNSCHEDULED
    mark_failed: bool  # its phase (as listed) is neither Succeeded nor Failed
    condition: Mapping[str, Any] | None  # the DisruptionTarget condition (orphans only)
    generation: int = 0  # its metadata.generation as listed: the status' observedGeneration


def _md(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


_POD_METADATA = ("name", "namespace", "uid", "generation", "creationTimestamp", "deletionTimestamp")


def cached_pod(pod: Obj) -> dict[str, Any]:
    """What a pass reads of a pod, the rest dropped: the cache holds this much of each pod."""
    md, status = _md(pod), pod.get("status") or {}
    return {
        "metadata": {k: md[k] for k in _POD_METADATA if k in md},
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
        "status": {k: status[k] for k in ("phase", "reason") if k in status},
    }


def cached_node(node: Obj) -> dict[str, Any]:
    """What a pass reads of a Node: its name, taints and Ready condition."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"]
    return {
        "metadata": {"name": _md(node).get("name")},
        "spec": {"taints": (node.get("spec") or {}).get("taints")},
        "status": {"conditions": ready[:1]},
    }


def is_terminated(pod: Obj) -> bool:
    """`isPodTerminated`: any phase but Pending, Running and Unknown (an empty one too)."""
    return _phase(pod) not in ("Pending", "Running", "Unknown")


def is_terminating(pod: Obj) -> bool:
    return bool(_md(pod).get("deletionTimestamp"))


def is_evicted(pod: Obj) -> bool:
    """`eviction.PodIsEvicted`: phase Failed with reason Evicted."""
    return _phase(pod) == "Failed" and (pod.get("status") or {}).get("reason") == "Evicted"


def gc_order(pod: Obj) -> tuple[bool, datetime, str]:
    """`byEvictionAndCreationTimestamp`: evicted first, then oldest, then by name."""
    created = parse_time(_md(pod).get("creationTimestamp")) or _EPOCH
    return (not is_evicted(pod), created, str(_md(pod).get("name") or ""))


def node_ready(node: Obj) -> bool:
    """`nodeutil.IsNodeReady`: the Ready condition's status is True."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def has_taint_key(node: Obj, key: str) -> bool:
    """`taints.TaintKeyExists`: some taint has `key`, whatever its value and effect."""
    taints = (node.get("spec") or {}).get("taints") or []
    return any(isinstance(t, Mapping) and t.get("key") == key for t in taints)


def _node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def terminated(pods: Iterable[Obj], threshold: int) -> list[Obj]:
    """`gcTerminated`: the terminated pods beyond `threshold`, in deletion order."""
    if threshold <= 0:
        return []
    done = sorted((p for p in pods if is_terminated(p)), key=gc_order)
    return done[: max(0, len(done) - threshold)]


def terminating_out_of_service(pods: Iterable[Obj], nodes: Mapping[str, Obj]) -> list[Obj]:
    """`gcTerminating`: terminating pods on an existing, not Ready, out-of-service node."""
    picked = []
    for pod in pods:
        node = nodes.get(_node_name(pod)) if is_terminating(pod) else None
        if node is not None and not node_ready(node) and has_taint_key(node, OUT_OF_SERVICE):
            picked.append(pod)
    return sorted(picked, key=gc_order)


def missing_nodes(pods: Iterable[Obj], existing: Collection[str]) -> set[str]:
    """The nodes pods are bound to that are not among the `existing` Node names."""
    return {n for n in (_node_name(p) for p in pods) if n and n not in existing}


def orphaned(pods: Iterable[Obj], deleted_nodes: Collection[str]) -> list[Obj]:
    """`gcOrphaned`'s deletions: pods bound to a node found deleted after its quarantine."""
    return [p for p in pods if _node_name(p) in deleted_nodes]


def unscheduled_terminating(pods: Iterable[Obj]) -> list[Obj]:
    """`gcUnscheduledTerminating`: terminating pods bound to no node."""
    return [p for p in pods if is_terminating(p) and not _node_name(p)]


def disruption_condition(generation: int = 0) -> dict[str, Any]:
    """`gcOrphaned`'s DisruptionTarget condition, its observedGeneration the pod's generation
    (`CalculatePodConditionObservedGeneration`: kinds/podconditions.py)."""
    return podconditions.disruption_target(DISRUPTION_REASON, DISRUPTION_MESSAGE, generation)


def plan(
    pods: Sequence[Obj], nodes: Mapping[str, Obj], deleted_nodes: Collection[str], threshold: int
) -> list[Deletion]:
    """Every deletion of one `gc` pass, in upstream's order, each pod once."""
    picks: list[tuple[Obj, str]] = [(p, TERMINATED) for p in terminated(pods, threshold)]
    picks += [(p, OUT_OF_SERVICE_REASON) for p in terminating_out_of_service(pods, nodes)]
    picks += [(p, ORPHANED) for p in orphaned(pods, deleted_nodes)]
    picks += [(p, UNSCHEDULED) for p in unscheduled_terminating(pods)]
    out: list[Deletion] = []
    seen: set[tuple[str, str]] = set()
    for pod, why in picks:
        md = _md(pod)
        key = (str(md.get("namespace") or ""), str(md.get("name") or ""))
        if key in seen:
            continue
        seen.add(key)
        generation = podconditions.condition_observed_generation(md.get("generation"))
        out.append(
            Deletion(
                namespace=key[0],
                name=key[1],
                uid=str(md.get("uid") or ""),
                why=why,
                mark_failed=_phase(pod) not in ("Succeeded", "Failed"),
                condition=disruption_condition(generation) if why == ORPHANED else None,
                generation=generation,
            )
        )
    return out


def failed_status(
    status: Mapping[str, Any] | None, condition: Mapping[str, Any] | None, now: datetime, generation: int = 0
) -> dict[str, Any] | None:
    """`status` with phase Failed, `status.observedGeneration` the pod's generation
    (`CalculatePodStatusObservedGeneration`) and `condition` set (`UpdatePodCondition`,
    kinds/podconditions.py), or None when that changes nothing (`PatchPodStatus` sends no
    patch then)."""
    new = dict(status or {})
    new["phase"] = "Failed"
    observed = podconditions.status_observed_generation(generation)
    if observed:
        new["observedGeneration"] = observed
    if condition is not None:
        new, _ = podconditions.update_pod_condition(new, condition, _stamp(now))
    return None if new == dict(status or {}) else new


def _stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Quarantine:
    """The `orphaned_pods_nodes` delaying queue: a node seen missing is due `QUARANTINE_TIME`
    after its first sighting (`AddAfter` keeps the earliest time of a waiting item); `due` hands
    out, and forgets, every node whose time has come, missing or not."""

    def __init__(self, period: float = QUARANTINE_TIME) -> None:
        self.period = period
        self._due: dict[str, float] = {}  # node name -> monotonic time it is looked at again

    def sight(self, missing: Iterable[str], now: float) -> None:
        for name in missing:
            self._due.setdefault(name, now + self.period)

    def due(self, now: float) -> list[str]:
        ready = sorted(n for n, at in self._due.items() if at <= now)
        for name in ready:
            del self._due[name]
        return ready

    def waiting(self) -> dict[str, float]:
        """Nodes in quarantine and when each is due (monotonic seconds)."""
        return dict(self._due)
