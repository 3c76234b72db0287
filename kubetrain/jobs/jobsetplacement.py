"""JobSet's exclusive placement for the pods kubetrain makes as JobSet would (a TrainJob's):
each job of a replicated job (`<tj>-<rjob>-<jobIndex>`) alone in one topology domain (a rack, a
TPU slice, a node pool).

The annotation `alpha.jobset.sigs.k8s.io/exclusive-topology: <node label key>` on the runtime's
JobSet template metadata or on a replicated job's template metadata is copied onto the pods as
JobSet's `labelAndAnnotateObject` copies it (the replicated job's wins; the
`alpha.jobset.sigs.k8s.io/node-selector` flag goes with the annotation of its level). From the
pod's own annotations, as JobSet's pod webhook reads them:

- the affinity strategy (no `node-selector` flag; pod_webhook.go `setExclusiveAffinities`): the
  leader (completion index 0) gets a required podAffinity to its own job's pods and a required
  podAntiAffinity to other jobs' pods of its priority, on the topology key; a follower gets
  `nodeSelector[<key>]` = the label value of its leader's node (`setNodeSelector`), and is made
  only once its leader is scheduled (`ValidateCreate` refuses it before) — `follower_domain`;
- the node-selector strategy (jobset_controller.go `constructJob`: `addNamespacedJobNodeSelector`,
  `addTaintToleration`): every pod gets `nodeSelector[alpha.jobset.sigs.k8s.io/namespaced-job] =
  <namespace>_<job>` and tolerates the `alpha.jobset.sigs.k8s.io/no-schedule` taint; the nodes
  are labelled and tainted beforehand by the cluster's administrator.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.dnsnames import qualified_name_problem
from kubetrain.api.errors import QUOTE
from kubetrain.api.trainer import constants as c

# api/jobset/v1alpha2 (jobset_types.go) and pkg/constants.
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY_KEY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB_KEY = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT_KEY = "alpha.jobset.sigs.k8s.io/no-schedule"
PRIORITY_KEY = "jobset.sigs.k8s.io/priority"
# The priority kube-apiserver's Priority admission gives a pod that names no PriorityClass when
# no class is the global default (scheduling.DefaultPriorityWhenNoDefaultClassExists).
DEFAULT_PRIORITY = 0

Obj = dict[str, Any]


def placement_annotations(
    jobset_annotations: Mapping[str, Any], rjob_annotations: Mapping[str, Any]
) -> dict[str, str]:
    """The exclusive-placement annotations a replicated job's pods carry: JobSet's
    `labelAndAnnotateObject` — the JobSet's (the runtime template's metadata) with its
    node-selector flag, then the replicated job template's with its own, which wins."""
    out: dict[str, str] = {}
    for source in (jobset_annotations, rjob_annotations):
        if EXCLUSIVE_KEY in source:
            out[EXCLUSIVE_KEY] = str(source[EXCLUSIVE_KEY])
            if NODE_SELECTOR_STRATEGY_KEY in source:
                out[NODE_SELECTOR_STRATEGY_KEY] = str(source[NODE_SELECTOR_STRATEGY_KEY])
    return out


def _annotations(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def topology_key(pod: Mapping[str, Any]) -> str | None:
    """The topology key of a pod placed by the affinity strategy; None for any other pod (no
    exclusive placement, or the node-selector strategy, which the webhook skips)."""
    annotations = _annotations(pod)
    if NODE_SELECTOR_STRATEGY_KEY in annotations or EXCLUSIVE_KEY not in annotations:
        return None
    return str(annotations[EXCLUSIVE_KEY])


def is_leader(pod: Mapping[str, Any]) -> bool:
    """placement.IsLeaderPod: the pod of completion index 0 (its annotation)."""
    return _annotations(pod).get(c.COMPLETION_INDEX) == "0"


@dataclass(frozen=True, slots=True)
class PriorityClasses:
    """The cluster's PriorityClasses as the Priority admission resolves a pod's priority from
    them: each class's value, and the globalDefault class's (of several, the lowest:
    admission.go `getDefaultPriorityClass`), `DEFAULT_PRIORITY` without one."""

    values: Mapping[str, int]
    default: int = DEFAULT_PRIORITY

    @classmethod
    def of(cls, classes: Iterable[Mapping[str, Any]]) -> PriorityClasses:
        values: dict[str, int] = {}
        defaults: list[int] = []
        for pc in classes:
            value = pc.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            values[str((pc.get("metadata") or {}).get("name", ""))] = value
            if pc.get("globalDefault") is True:
                defaults.append(value)
        return cls(values, min(defaults, default=DEFAULT_PRIORITY))


def priority_of(spec: Mapping[str, Any], classes: PriorityClasses | None = None) -> int | None:
    """The priority the API server's Priority admission (admission.go `admitPod`) gives the pod:
    its `spec.priority` (the admission refuses one that is not its class's); else its
    PriorityClass's value, or without a class the globalDefault's. `classes` None (the operator
    may not read PriorityClasses): without a class `DEFAULT_PRIORITY`, and None for a pod naming
    one; None too for a class that does not exist (the admission refuses the pod)."""
    priority = spec.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        return priority
    name = spec.get("priorityClassName")
    if classes is None:
        return None if name else DEFAULT_PRIORITY
    return classes.values.get(str(name)) if name else classes.default


def resolve_priority(pod: Obj, classes: PriorityClasses | None) -> None:
    """The priority label of a pod placed by the affinity strategy, and its leader's
    anti-affinity to other jobs of that priority, from the cluster's PriorityClasses, in place —
    after `apply`, which had only the pod's spec."""
    if classes is None or topology_key(pod) is None:
        return
    labels = pod["metadata"].setdefault("labels", {})
    old = labels.get(PRIORITY_KEY)
    priority = priority_of(pod.get("spec") or {}, classes)
    new = None if priority is None else str(priority)
    if new == old:
        return
    if new is None:
        labels.pop(PRIORITY_KEY, None)
    else:
        labels[PRIORITY_KEY] = new
    if is_leader(pod):  # the term `set_exclusive_affinities` appended last
        anti = pod["spec"]["affinity"]["podAntiAffinity"]
        term = anti["requiredDuringSchedulingIgnoredDuringExecution"][-1]
        for expression in term["labelSelector"]["matchExpressions"]:
            if expression["key"] == PRIORITY_KEY:
                expression["values"] = [new or ""]


def apply(pod: Obj, namespace: str, job: str) -> None:
    """What the pod gets before it is created, in place: under the node-selector strategy the
    namespaced job's nodeSelector and the taint's toleration; under the affinity strategy the
    priority label (pod webhook `Default`) and, on the leader, the exclusive affinities."""
    annotations = _annotations(pod)
    if EXCLUSIVE_KEY not in annotations:
        return
    spec = pod.setdefault("spec", {})
    if NODE_SELECTOR_STRATEGY_KEY in annotations:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), NAMESPACED_JOB_KEY: f"{namespace}_{job}"}
        toleration = {"key": NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        spec["tolerations"] = [*(spec.get("tolerations") or []), toleration]
        return
    labels = pod["metadata"].setdefault("labels", {})
    priority = priority_of(spec)
    if priority is not None:
        labels[PRIORITY_KEY] = str(priority)
    if is_leader(pod):
        set_exclusive_affinities(pod)


def set_exclusive_affinities(pod: Obj) -> None:
    """pod_webhook.go `setExclusiveAffinities`: appended to the template's own required terms."""
    labels = pod["metadata"].get("labels") or {}
    key = str(_annotations(pod)[EXCLUSIVE_KEY])
    job_key = str(labels.get(c.JOB_KEY, ""))
    affinity = pod["spec"].setdefault("affinity", {})
    together = {
        "labelSelector": {"matchExpressions": [{"key": c.JOB_KEY, "operator": "In", "values": [job_key]}]},
        "topologyKey": key,
        "namespaceSelector": {},
    }
    apart = {
        "labelSelector": {
            "matchExpressions": [
                {"key": c.JOB_KEY, "operator": "Exists"},
                {"key": c.JOB_KEY, "operator": "NotIn", "values": [job_key]},
                {"key": PRIORITY_KEY, "operator": "In", "values": [str(labels.get(PRIORITY_KEY, ""))]},
            ]
        },
        "topologyKey": key,
        "namespaceSelector": {},
    }
    for field, term in (("podAffinity", together), ("podAntiAffinity", apart)):
        part = affinity.setdefault(field, {})
        terms = part.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
        terms.append(term)


@dataclass(frozen=True, slots=True)
class Domain:
    """Where a follower goes: `value` of node label `key`; or why it waits (`value` None):
    `waiting` says what for, `missing_label` names a leader's node without the label."""

    key: str
    value: str | None = None
    waiting: str = ""
    missing_label: str | None = None


def leader_domain(
    leader: Mapping[str, Any] | None, key: str, node_labels: Mapping[str, Mapping[str, Any]] | None
) -> Domain:
    """The topology domain of a job's leader: the label `key` of the node it is scheduled on
    (pod_webhook.go `setNodeSelector` / `topologyFromPod`). `leader`: the job's live leader pod
    (not terminating, not finished — `leaderPodForFollower`), None when it has none;
    `node_labels`: the labels of its node, None when the node is not known."""
    if leader is None:
        return Domain(key, waiting="its leader pod does not exist")
    node = str((leader.get("spec") or {}).get("nodeName") or "")
    if not node:
        return Domain(key, waiting="its leader pod is not scheduled yet")
    if node_labels is None:
        return Domain(key, waiting=f"its leader's node {node} is not known")
    if key not in node_labels:
        return Domain(key, waiting=f"node {node} has no label {key}", missing_label=node)
    return Domain(key, value=str(node_labels[key]))


def follow(pod: Obj, domain: Domain) -> None:
    """A follower's nodeSelector for its leader's domain (`domain.value` set), in place."""
    spec = pod.setdefault("spec", {})
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), domain.key: str(domain.value)}


def follows(pod: Mapping[str, Any], domain: Domain) -> bool:
    """pod_controller.go `validatePodPlacements`, for one follower: its nodeSelector names the
    leader's domain."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return domain.key in selector and str(selector[domain.key]) == domain.value


def runtime_warnings(runtime: Mapping[str, Any], rjob_template: Mapping[str, Any], path: str) -> list[str]:
    """What cannot work of a replicated job placed exclusively by pod affinities (the admission
    warnings of its runtime; `rjob_template`: its template, at `path`): a topology key that is no
    label key — the API server refuses the leader's affinity terms —; and the runtime's
    podGroupPolicy — the gang scheduler binds no pod before all exist, and a follower
    is made only once its leader is bound: no pod ever starts (as under JobSet)."""
    pod_template = (rjob_template.get("spec") or {}).get("template") or {}
    annotations = dict((pod_template.get("metadata") or {}).get("annotations") or {})
    jobset = ((runtime.get("spec") or {}).get("template") or {}).get("metadata") or {}
    annotations.update(
        placement_annotations(
            jobset.get("annotations") or {}, (rjob_template.get("metadata") or {}).get("annotations") or {}
        )
    )
    key = topology_key({"metadata": {"annotations": annotations}})
    if key is None:
        return []
    warnings: list[str] = []
    problem = qualified_name_problem(key)
    if problem is not None:
        # The leader's podAffinity topologyKey: kube-apiserver's validatePodAffinityTerm refuses
        # an empty one and one that is no label key (ValidateLabelName); JobSet admits it.
        warnings.append(
            f"{path}: the {EXCLUSIVE_KEY} value {QUOTE.encode(key)} is not a node label key ({problem}): the "
            "API server refuses the leader pods, whose pod affinity uses it as topologyKey"
        )
    group_policy = (runtime.get("spec") or {}).get("podGroupPolicy")
    if isinstance(group_policy, Mapping) and group_policy:
        warnings.append(
            f"{path}: placed exclusively ({EXCLUSIVE_KEY}) under spec.podGroupPolicy, no pod "
            "starts: the gang scheduler binds no pod before all of them exist, and a follower pod is "
            f"made only once its leader is bound; use {NODE_SELECTOR_STRATEGY_KEY} or no "
            "podGroupPolicy"
        )
    return warnings
