"""How informer events reach the work queue: which job an event of a job, pod, Service, HPA or
PodGroup requeues, and when. Never blocks; a base of `controller.Controller`.

Pod status changes and the job's own status-only updates are coalesced: they make the job's
key ready at the end of a short window (`WorkQueue.add_batched`) whose length follows the
job's last decision time (`batch_window`), so a job of N pods is not re-planned for each of
its pods' events — the cost per pod event stays flat in N. Spec or metadata changes of the
job, a pod event that completes the job's pending creates/deletes, and Service/HPA/PodGroup
events enqueue at once. Every event still leads to a reconcile that sees it (level-triggered).
A pod update that shows the job's framework container newly terminated is also training-operator's
`ExitedWithCode` Event on the job (`podevents.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from kubetrain.kube.cache import Cache
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import ResourceRef
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator import progressgauges, upstreammetrics
from kubetrain.operator.apply import PlanApplier
from kubetrain.operator.controllerconfig import ControllerConfig
from kubetrain.operator.jobcounts import count_job
from kubetrain.operator.keys import (
    job_key,
    key_of,
    labelled_job_key,
    owner_job_key,
    resource_version,
    split_job_key,
    status_only,
)
from kubetrain.operator.podevents import EXITED_WITH_CODE, exited_with_code
from kubetrain.operator.prepare import DEFAULT_CACHE
from kubetrain.operator.stall import report_only
from kubetrain.serving.metrics import forget_job

Obj = dict[str, Any]
# Pod events of a job whose namespace is being deleted (its pods go one by one) are coalesced
# over this many seconds: every reconcile there would plan re-creating the missing pods in vain.
CLOSED_NAMESPACE_WINDOW = 5.0


class JobEvents:
    """The informer handlers of a controller, over its queue, cache, expectations and applier."""

    config: ControllerConfig
    cache: Cache
    queue: WorkQueue[str]
    expectations: Expectations
    applier: PlanApplier
    job_resources: dict[str, ResourceRef]
    _decision_seconds: dict[str, float]  # key -> its last cache read + plan time

    def _enqueue_job(self, job: Obj) -> None:
        self.queue.add(key_of(job))

    def _enqueue_all_jobs(self) -> None:
        for ref in self.job_resources.values():
            for job in self.cache.store(ref).list():
                self._enqueue_job(job)

    def batch_window(self, key: str) -> float:
        """How long pod events of job `key` are coalesced: proportional to its last decision time;
        in a namespace being deleted (nothing can be created there) at least CLOSED_NAMESPACE_WINDOW."""
        cfg = self.config
        window = min(cfg.event_batch_max, cfg.event_batch_factor * self._decision_seconds.get(key, 0.0))
        if split_job_key(key)[1] in self.applier.closed_namespaces:
            return max(window, CLOSED_NAMESPACE_WINDOW)
        return window

    def _job_added(self, job: Obj) -> None:
        progressgauges.observe_job(job)
        if not job.get("status"):
            count_job(job, "created")
        self.applier.namespace_accepts_creates((job.get("metadata") or {}).get("namespace", ""))
        self._enqueue_job(job)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        key = key_of(new)
        if (old.get("status") or {}).get("trainerStatus") != (new.get("status") or {}).get("trainerStatus"):
            progressgauges.observe_job(new)
        if status_only(old, new) and report_only(old, new):
            return  # a progress report written, and no progress deadline: nothing to decide
        if status_only(old, new):  # our own status write coming back, or someone's status edit
            self.queue.add_batched(key, self.batch_window(key))
        else:
            self.queue.add(key)

    def _job_deleted(self, job: Obj) -> None:
        key = key_of(job)
        self.expectations.forget(key)
        self._decision_seconds.pop(key, None)
        namespace = (job.get("metadata") or {}).get("namespace", "")
        if namespace in self.applier.closed_namespaces and not any(
            self.cache.store(ref).list(namespace) for ref in self.job_resources.values()
        ):
            self.applier.namespace_accepts_creates(namespace)  # its last job is gone: forget it
        self.applier.forget_job(job)
        DEFAULT_CACHE.forget(str((job.get("metadata") or {}).get("uid", "")))  # the planner's prepared job
        forget_job(str(job.get("kind", "")), namespace, (job.get("metadata") or {}).get("name", ""))
        count_job(job, "gone")

    def _pod_added(self, pod: Obj) -> None:
        upstreammetrics.observe_pod(pod)  # an MPIJob's launcher: mpi_operator_job_info
        key = owner_job_key(pod)
        if key is not None:
            self._pod_event(key, lambda: self.expectations.creation_observed(key, pod["metadata"]["name"]))

    def _pod_deleted(self, pod: Obj) -> None:
        # A pod no job controls (orphaned, an older job's) may hold a name a job waits for.
        owner = owner_job_key(pod)
        keys = [owner] if owner else [labelled_job_key(pod, group) for group in self.config.api_groups]
        name = pod["metadata"]["name"]
        for key in keys:
            if key is not None:
                self._pod_event(key, partial(self.expectations.deletion_observed, key, name))

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        key = owner_job_key(new)
        if key is not None and resource_version(old) != resource_version(new):
            self._pod_exited(key, old, new)
            self.queue.add_batched(key, self.batch_window(key))

    def _pod_exited(self, key: str, old: Obj, new: Obj) -> None:
        """training-operator's ExitedWithCode event on job `key` when pod `new` shows the job's
        framework container newly terminated (`podevents.exited_with_code`), budgeted."""
        rid, namespace, name = split_job_key(key)
        ref = self.job_resources.get(rid)
        job = self.cache.get(ref, namespace, name) if ref is not None else None
        if job is None or namespace in self.applier.closed_namespaces:
            return
        message = exited_with_code(job, old, new)
        if message is not None:
            self.applier.recorder.emit(job, "Normal", EXITED_WITH_CODE, message, budgeted=True)

    def _pod_event(self, key: str, observe: Callable[[], None]) -> None:
        """A pod of job `key` was added or deleted: the job goes at once when this completes its
        pending creates/deletes (the next step of a create or delete wave), else batched."""
        waiting = not self.expectations.satisfied(key)
        observe()
        if waiting and self.expectations.satisfied(key):
            self.queue.add(key)
        else:
            self.queue.add_batched(key, self.batch_window(key))

    def _watch_child(self, informer: Informer) -> None:
        """Requeue the owning job on every change of a Service, HPA or PodGroup."""
        informer.add_handler(
            on_add=self._child_changed, on_update=self._child_updated, on_delete=self._child_changed
        )

    def _child_changed(self, obj: Obj) -> None:
        key = owner_job_key(obj)
        if key is None and obj.get("kind") in ("Service", "HorizontalPodAutoscaler"):
            # A Service (HPA) not owned by a job blocks the job's own of the same name — or,
            # in per-pod service mode, the Service of a pod `<job>-<type>-<index>`.
            meta = obj.get("metadata") or {}
            namespace, name = meta.get("namespace", ""), str(meta.get("name", ""))
            parts = name.rsplit("-", 2)
            names = [name, parts[0]] if len(parts) == 3 and parts[2].isdigit() else [name]
            for kind, ref in self.job_resources.items():
                for job_name in names:
                    if self.cache.get(ref, namespace, job_name):
                        self.queue.add(job_key(kind, namespace, job_name))
            return
        if key is not None:
            self.queue.add(key)

    def _child_updated(self, old: Obj, new: Obj) -> None:
        if resource_version(old) != resource_version(new):
            self._child_changed(new)
