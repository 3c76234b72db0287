"""What the controller adds to serve Kubeflow Trainer v2's group (`--api-groups` with
`trainer.kubeflow.org`): the TrainJob resource among the job resources (same queue, workers,
cache, expectations and `PlanApplier`), informers on TrainingRuntimes and
ClusterTrainingRuntimes (a runtime created or changed requeues the TrainJobs naming it — only
those without a snapshot yet act on it), and the TrainJob's edge of the planner (`trainedge.plan_trainjob`)
fed with the runtime from the cache; and a Node informer (each Node's name and labels only): a
follower of an exclusively placed job takes its leader's node's topology label
(`exclusiveplacement.py`), and a Node relabelled (or added once synced) requeues the TrainJobs
with a pod on it; and a PriorityClass informer (each class's name, value and globalDefault only):
the priority label of an exclusively placed pod is its class's value, as the API server's
Priority admission resolves it. Both are optional under RBAC: refused, one warning each."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.groups import TRAINER_GROUP
from kubetrain.api.trainer import constants as c
from kubetrain.jobs.jobsetplacement import PriorityClasses
from kubetrain.kube.cache import Cache, slim_node
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import Clock
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    ResourceRef,
    job_resource_id,
)
from kubetrain.operator.draft import Observed, Plan, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
TRAINJOB_RESOURCE_ID = job_resource_id(c.TRAINJOB, TRAINER_GROUP)  # "TrainJob.trainer.kubeflow.org"


log = logging.getLogger(__name__)


def is_trainjob_owner(ref: Mapping[str, Any]) -> bool:
    """An ownerReference naming a TrainJob."""
    return ref.get("kind") == c.TRAINJOB and str(ref.get("apiVersion", "")).startswith(f"{TRAINER_GROUP}/")


def runtime_of(cache: Cache, trainjob: Mapping[str, Any]) -> Obj | None:
    """The runtime a TrainJob's runtimeRef names, from the cache (kind defaults to ClusterTrainingRuntime)."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    name = ref.get("name")
    if not name:
        return None
    if (ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME) == c.TRAINING_RUNTIME:
        namespace = (trainjob.get("metadata") or {}).get("namespace", "")
        return cache.store(TRAINING_RUNTIMES).get(namespace, name)
    return cache.store(CLUSTER_TRAINING_RUNTIMES).get(None, name)


def slim_priority_class(pc: Obj) -> Obj:
    """A PriorityClass as the operator caches it (an informer transform): what the Priority
    admission resolves a pod's priority from — name, value, globalDefault."""
    meta = pc.get("metadata") or {}
    kept: Obj = {
        "apiVersion": pc.get("apiVersion", "scheduling.k8s.io/v1"),
        "kind": pc.get("kind", "PriorityClass"),
        "metadata": {k: meta[k] for k in ("name", "resourceVersion") if k in meta},
    }
    for field in ("value", "globalDefault"):
        if field in pc:
            kept[field] = pc[field]
    return kept


def _labels(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("labels")


class TrainJobs:
    """The TrainJob part of one controller."""

    ref: ResourceRef = TRAINJOBS

    def __init__(
        self, client: KubeClient, cache: Cache, clock: Clock, enqueue: Callable[[str], None]
    ) -> None:
        self.client, self.cache, self.clock, self.enqueue = client, cache, clock, enqueue
        self._classes: Informer | None = None

    def informers(self, namespaces: list[str] | None) -> list[Informer]:
        runtimes = Informer(
            self.client, TRAINING_RUNTIMES, cache=self.cache, namespaces=namespaces, clock=self.clock
        )
        cluster = Informer(self.client, CLUSTER_TRAINING_RUNTIMES, cache=self.cache, clock=self.clock)
        for informer in (runtimes, cluster):
            informer.add_handler(
                on_add=self._runtime_changed,
                on_update=lambda old, new: self._runtime_changed(new),
                on_delete=self._runtime_changed,
            )
        # A Node relabelled, or added once synced (registered again), requeues: the initial list
        # comes before any reconcile, and scanning the pods per Node there would cost nodes x pods.
        # Optional: without RBAC on nodes (a chart from before this watch) one warning, and only
        # the followers of exclusively placed jobs wait (their leader's node is not known).
        nodes = Informer(
            self.client,
            NODES,
            cache=self.cache,
            clock=self.clock,
            transform=slim_node,
            on_forbidden=self._nodes_forbidden,
        )
        nodes.add_handler(
            on_add=lambda node: self.node_changed(node) if nodes.has_synced else None,
            on_update=lambda old, new: self.node_changed(new) if _labels(old) != _labels(new) else None,
        )
        # A class created or changed resolves the pods made from then on: no requeue (a made
        # pod's label stays, as JobSet's webhook labels a pod once).
        self._classes = Informer(
            self.client,
            PRIORITY_CLASSES,
            cache=self.cache,
            clock=self.clock,
            transform=slim_priority_class,
            on_forbidden=self._priority_classes_forbidden,
        )
        return [runtimes, cluster, nodes, self._classes]

    def priority_classes(self) -> PriorityClasses | None:
        """The cluster's PriorityClasses from the cache; None until listed, or refused by RBAC."""
        if self._classes is None or not self._classes.has_synced:
            return None
        return PriorityClasses.of(self.cache.store(PRIORITY_CLASSES).list())

    def _priority_classes_forbidden(self, err: ApiError) -> None:
        log.warning(
            "no permission to list/watch priorityclasses (%s): the pods of exclusively placed "
            "TrainJobs (JobSet's exclusive-topology) are labelled jobset.sigs.k8s.io/priority from "
            "spec.priority only — none when their template names only a priorityClassName, 0 "
            "without one whatever the globalDefault class — so a leader's anti-affinity may not "
            "keep the other jobs of its priority out; grant get/list/watch on priorityclasses (the "
            "chart's current RBAC does) and restart the operator",
            err,
        )

    def _nodes_forbidden(self, err: ApiError) -> None:
        log.warning(
            "no permission to list/watch nodes (%s): the follower pods of exclusively placed "
            "TrainJobs (JobSet's exclusive-topology) are not made, their leader's node not being "
            "known; grant list/watch on nodes (the chart's current RBAC does) and restart the operator",
            err,
        )

    def node_changed(self, node: Obj) -> None:
        """The TrainJobs with a pod on this node (a leader's domain may now be known)."""
        name = (node.get("metadata") or {}).get("name")
        for pod in self.cache.store(PODS).list():
            if (pod.get("spec") or {}).get("nodeName") != name:
                continue
            meta = pod.get("metadata") or {}
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller") and is_trainjob_owner(ref):
                    self.enqueue(f"{TRAINJOB_RESOURCE_ID}/{meta.get('namespace', '')}/{ref.get('name', '')}")

    def _runtime_changed(self, runtime: Obj) -> None:
        meta = runtime.get("metadata") or {}
        kind, name = runtime.get("kind"), meta.get("name")
        for job in self.cache.store(TRAINJOBS).list(
            meta.get("namespace") if kind == c.TRAINING_RUNTIME else None
        ):
            ref = (job.get("spec") or {}).get("runtimeRef") or {}
            if ref.get("name") == name and (ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME) == kind:
                jmeta = job.get("metadata") or {}
                self.enqueue(f"{TRAINJOB_RESOURCE_ID}/{jmeta.get('namespace', '')}/{jmeta.get('name', '')}")

    def plan(self, job: Mapping[str, Any], observed: Observed, now: datetime, config: PlannerConfig) -> Plan:
        return plan_trainjob(job, observed, runtime_of(self.cache, job), now, config)
