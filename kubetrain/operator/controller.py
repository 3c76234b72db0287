"""The controller loop: informers feed a work queue, workers plan each job and apply the plan.

    controller = Controller(client, ControllerConfig(workers=4, gang_scheduler="none"))
    await controller.start()          # informers synced, workers running
    ...
    await controller.stop()

All decisions are made by the pure planner (`kubetrain.operator.plan.plan`); this module only
reads the shared informer cache (a reconcile makes no LIST or GET call), writes what the plan
says through `KubeClient`, and schedules the exact wake-ups the plan asks for.

Keys in the queue are `Kind/namespace/name`. Expectations (`kubetrain.kube.expectations`)
hold a job back while creates/deletes it made are not yet visible in the cache, so a cache
lagging behind our own writes never causes duplicate creates or deletes.

With a gang scheduler, an informer watches the one CustomResourceDefinition that serves its
PodGroups (by name). While it exists and is Established, a PodGroup informer runs; the API
counts as installed once that informer has synced, and every job is enqueued then (and again
when the CRD goes away), so jobs waiting for the API proceed without an operator restart. Without
RBAC for that CRD (403), discovery at start decides once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain import OPERATOR_NAME
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.kube.cache import JOB_NAME_LABEL, Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    HORIZONTAL_POD_AUTOSCALERS,
    JOB_RESOURCES,
    POD_GROUP_RESOURCES,
    PODS,
    SERVICES,
    ResourceRef,
)
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.metrics import (
    JOBS_CREATED,
    JOBS_FAILED,
    JOBS_RESTARTED,
    JOBS_SUCCEEDED,
    RECONCILE_DURATION,
    RECONCILE_PLAN_DURATION,
)
from kubetrain.operator.plan import Observed, Plan, PlannerConfig, plan

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass
class ControllerConfig:
    namespaces: list[str] = field(default_factory=list)  # empty: every namespace
    workers: int = 4
    gang_scheduler: str = "none"  # none | volcano | scheduler-plugins
    scheduler_name: str | None = None


def job_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def split_job_key(key: str) -> tuple[str, str, str]:
    kind, namespace, name = key.split("/", 2)
    return kind, namespace, name


def owner_job_key(obj: Mapping[str, Any]) -> str | None:
    """The key of the job that controls `obj` (its controller ownerReference), if any."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if (
            ref.get("controller")
            and ref.get("kind") in FRAMEWORKS
            and str(ref.get("apiVersion", "")).startswith("kubetrain.io/")
        ):
            return job_key(ref["kind"], meta.get("namespace", ""), ref.get("name", ""))
    return None


def crd_name(ref: ResourceRef) -> str:
    """The name of the CustomResourceDefinition that serves `ref`: `<plural>.<group>`."""
    return f"{ref.plural}.{ref.group}"


def crd_serves(crd: Mapping[str, Any], ref: ResourceRef) -> bool:
    """Whether `crd` is Established, not being deleted, and serves `ref`'s version."""
    if (crd.get("metadata") or {}).get("deletionTimestamp"):
        return False
    served = any(
        v.get("name") == ref.version and v.get("served")
        for v in (crd.get("spec") or {}).get("versions") or ()
    )
    return served and _has_condition(crd.get("status"), "Established")


def _has_condition(status: Mapping[str, Any] | None, type_: str) -> bool:
    for cond in (status or {}).get("conditions") or ():
        if cond.get("type") == type_ and cond.get("status") == "True":
            return True
    return False


def _total_restarts(status: Mapping[str, Any] | None) -> int:
    return sum(int(rs.get("restarts") or 0) for rs in ((status or {}).get("replicaStatuses") or {}).values())


class Controller:
    def __init__(
        self,
        client: KubeClient,
        config: ControllerConfig | None = None,
        *,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.config = config or ControllerConfig()
        self.clock = clock or SYSTEM_CLOCK
        self.recorder = recorder or EventRecorder(client, clock=self.clock)
        self.cache = Cache()
        self.queue: WorkQueue[str] = WorkQueue(name="jobs", clock=self.clock)
        self.expectations = Expectations(clock=self.clock)
        self.planner_config = PlannerConfig(
            gang_scheduler=self.config.gang_scheduler, scheduler_name=self.config.scheduler_name
        )
        self.pod_group_ref: ResourceRef | None = POD_GROUP_RESOURCES.get(self.config.gang_scheduler)
        self.pod_group_api_installed = False
        self.informers: list[Informer] = []
        # The PodGroup informer runs while the PodGroup CRD serves (started and stopped by the
        # CRD informer's events); `_pod_groups_syncing` marks the API installed once it synced.
        self._crd_informer: Informer | None = None
        self._crd_forbidden = asyncio.Event()
        self._crd_forbidden_error: ApiError | None = None
        self._pod_groups: Informer | None = None
        self._pod_groups_syncing: asyncio.Task[None] | None = None
        self._retired: list[Informer] = []
        self._workers: list[asyncio.Task[None]] = []
        self._started = False

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """Started, and the informers started with the controller synced. A PodGroup informer
        started later (its CRD installed meanwhile) does not count: until it has synced the
        PodGroup API simply counts as not installed yet."""
        return self._started and all(i.has_synced for i in self.informers)

    async def start(self, *, sync_timeout: float | None = None) -> None:
        """Start the informers, wait for their initial lists, then start the workers."""
        if sync_timeout is None:
            await self._start_informers()
        else:
            await asyncio.wait_for(self._start_informers(), sync_timeout)
        self._started = True
        self._workers = [
            asyncio.create_task(self._worker(), name=f"kubetrain worker {i}")
            for i in range(self.config.workers)
        ]
        log.info("controller started: %d workers, caches synced", self.config.workers)

    async def _start_informers(self) -> None:
        namespaces = self.config.namespaces or None
        for kind, ref in JOB_RESOURCES.items():
            informer = Informer(self.client, ref, cache=self.cache, namespaces=namespaces, clock=self.clock)
            informer.add_handler(
                on_add=self._job_added,
                on_update=lambda _old, new: self._enqueue_job(new),
                on_delete=self._job_deleted,
            )
            self.informers.append(informer)
            log.debug("watching %s", kind)
        pods = Informer(
            self.client,
            PODS,
            cache=self.cache,
            namespaces=namespaces,
            label_selector=JOB_NAME_LABEL,
            clock=self.clock,
        )
        pods.add_handler(on_add=self._pod_added, on_update=self._child_updated, on_delete=self._pod_deleted)
        # Every Service, not just ours: a Service of a job's name owned by someone else must be seen.
        services = Informer(self.client, SERVICES, cache=self.cache, namespaces=namespaces, clock=self.clock)
        services.add_handler(
            on_add=self._child_changed, on_update=self._child_updated, on_delete=self._child_changed
        )
        # Every HorizontalPodAutoscaler too (elastic PyTorchJobs with metrics own one): an HPA of a
        # job's name that the job does not own must be seen, so the job leaves it alone.
        hpas = Informer(
            self.client, HORIZONTAL_POD_AUTOSCALERS, cache=self.cache, namespaces=namespaces, clock=self.clock
        )
        hpas.add_handler(
            on_add=self._child_changed, on_update=self._child_updated, on_delete=self._child_changed
        )
        self.informers += [pods, services, hpas]
        for informer in self.informers:
            informer.start()
        if self.pod_group_ref is not None:
            await self._start_pod_group_api_watch(self.pod_group_ref)
        await asyncio.gather(*(i.wait_synced() for i in self.informers))

    # --- the PodGroup API: installed when its CRD is Established --------------------------------
    async def _start_pod_group_api_watch(self, ref: ResourceRef) -> None:
        """Watch the PodGroup CRD by name until its initial list is in (or RBAC refuses the
        watch: then discovery decides once), and wait for the PodGroup informer if it serves."""
        name = crd_name(ref)
        self._crd_forbidden.clear()  # a controller may be started again after stop()
        crds = Informer(
            self.client,
            CUSTOM_RESOURCE_DEFINITIONS,
            cache=self.cache,
            field_selector=f"metadata.name={name}",
            clock=self.clock,
            on_forbidden=self._crd_watch_forbidden,
        )
        crds.add_handler(
            on_add=self._crd_changed,
            on_update=lambda _old, new: self._crd_changed(new),
            on_delete=self._crd_deleted,
        )
        self._crd_informer = crds
        crds.start()
        synced = asyncio.ensure_future(crds.wait_synced())
        forbidden = asyncio.ensure_future(self._crd_forbidden.wait())
        try:
            await asyncio.wait((synced, forbidden), return_when=asyncio.FIRST_COMPLETED)
        finally:
            synced.cancel()
            forbidden.cancel()
        if crds.has_synced:
            self.informers.append(crds)
        else:
            log.warning(
                "gang scheduler %r: no permission to watch CustomResourceDefinition %s (%s); "
                "the PodGroup API is looked up once, now: after installing %s, restart the "
                "operator (the chart's current RBAC grants list/watch on that CRD)",
                self.config.gang_scheduler,
                name,
                self._crd_forbidden_error,
                self.config.gang_scheduler,
            )
            await crds.stop()
            self._crd_informer = None
            if await self.client.has_api(ref.group, ref.version, ref.plural):
                self._start_pod_groups()
        # The PodGroup informer started from the CRD's initial list: wait for its sync (a CRD
        # deleted meanwhile cancels the wait; one re-created meanwhile starts a new one).
        while (syncing := self._pod_groups_syncing) is not None and not syncing.done():
            await asyncio.wait((syncing,))
        if not self.pod_group_api_installed:
            log.error(
                "gang scheduler %r selected but the PodGroup API %s/%s is not installed: jobs "
                "will get a condition saying so and no pods until it is",
                self.config.gang_scheduler,
                ref.group,
                ref.version,
            )

    def _crd_watch_forbidden(self, err: ApiError) -> None:
        self._crd_forbidden_error = err
        self._crd_forbidden.set()

    def _crd_changed(self, crd: Obj) -> None:
        assert self.pod_group_ref is not None
        serves = crd_serves(crd, self.pod_group_ref)
        if serves and self._pod_groups is None:
            self._start_pod_groups()
        elif not serves and self._pod_groups is not None:
            self._stop_pod_groups(f"CustomResourceDefinition {crd_name(self.pod_group_ref)} no longer serves")

    def _crd_deleted(self, crd: Obj) -> None:
        if self._pod_groups is not None and self.pod_group_ref is not None:
            self._stop_pod_groups(f"CustomResourceDefinition {crd_name(self.pod_group_ref)} was deleted")

    def _start_pod_groups(self) -> None:
        """Start the PodGroup informer; the API counts as installed once it has synced."""
        assert self.pod_group_ref is not None
        groups = Informer(
            self.client,
            self.pod_group_ref,
            cache=self.cache,
            namespaces=self.config.namespaces or None,
            clock=self.clock,
        )
        groups.add_handler(
            on_add=self._child_changed, on_update=self._child_updated, on_delete=self._child_changed
        )
        self._pod_groups = groups
        groups.start()
        self._pod_groups_syncing = asyncio.create_task(
            self._pod_groups_synced(groups), name="kubetrain podgroups sync"
        )

    async def _pod_groups_synced(self, groups: Informer) -> None:
        await groups.wait_synced()
        if self._pod_groups is not groups:
            return  # stopped meanwhile
        self.pod_group_api_installed = True
        if self._started:
            ref = self.pod_group_ref
            assert ref is not None
            log.info("PodGroup API %s/%s installed: resuming gang-scheduled jobs", ref.group, ref.version)
        self._enqueue_all_jobs()

    def _stop_pod_groups(self, why: str) -> None:
        """The PodGroup API went away: forget its PodGroups and let every job say so."""
        groups, self._pod_groups = self._pod_groups, None
        if groups is None:
            return
        groups.cancel()  # nothing more reaches the store from this informer
        self._retired.append(groups)
        if self._pod_groups_syncing is not None:
            self._pod_groups_syncing.cancel()
            self._pod_groups_syncing = None
        self.pod_group_api_installed = False
        store = self.cache.store(groups.ref)
        for obj in store.list():
            meta = obj.get("metadata") or {}
            store.remove(meta.get("namespace"), meta.get("name", ""))
        log.error("%s: the PodGroup API is not installed any more; gang-scheduled jobs wait", why)
        self._enqueue_all_jobs()

    def _enqueue_all_jobs(self) -> None:
        for kind, ref in JOB_RESOURCES.items():
            for job in self.cache.store(ref).list():
                meta = job.get("metadata") or {}
                self.queue.add(job_key(kind, meta.get("namespace", ""), meta.get("name", "")))

    async def stop(self) -> None:
        self.queue.shutdown()
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []
        if self._pod_groups_syncing is not None:
            self._pod_groups_syncing.cancel()
            self._pod_groups_syncing = None
        if self._pod_groups is not None:
            self._retired.append(self._pod_groups)
            self._pod_groups = None
        if self._crd_informer is not None and self._crd_informer not in self.informers:
            self._retired.append(self._crd_informer)
        self._crd_informer = None
        for informer in self.informers + self._retired:
            await informer.stop()
        self.informers = []
        self._retired = []
        await self.recorder.flush()
        self._started = False

    # --- informer handlers (never block) ------------------------------------------------------------
    def _enqueue_job(self, job: Obj) -> None:
        meta = job.get("metadata") or {}
        self.queue.add(job_key(str(job.get("kind")), meta.get("namespace", ""), meta.get("name", "")))

    def _job_added(self, job: Obj) -> None:
        if not job.get("status"):
            meta = job.get("metadata") or {}
            JOBS_CREATED.labels(kind=str(job.get("kind")), namespace=meta.get("namespace", "")).inc()
        self._enqueue_job(job)

    def _job_deleted(self, job: Obj) -> None:
        meta = job.get("metadata") or {}
        self.expectations.forget(
            job_key(str(job.get("kind")), meta.get("namespace", ""), meta.get("name", ""))
        )

    def _pod_added(self, pod: Obj) -> None:
        key = owner_job_key(pod)
        if key is not None:
            self.expectations.creation_observed(key, pod["metadata"]["name"])
            self.queue.add(key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = owner_job_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, pod["metadata"]["name"])
            self.queue.add(key)

    def _child_changed(self, obj: Obj) -> None:
        key = owner_job_key(obj)
        if key is None and obj.get("kind") in ("Service", "HorizontalPodAutoscaler"):
            # A Service (HPA) not owned by a job blocks the job's own of the same name.
            meta = obj.get("metadata") or {}
            for kind in JOB_RESOURCES:
                if self.cache.get(JOB_RESOURCES[kind], meta.get("namespace"), meta.get("name", "")):
                    self.queue.add(job_key(kind, meta.get("namespace", ""), meta.get("name", "")))
            return
        if key is not None:
            self.queue.add(key)

    def _child_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") != (new.get("metadata") or {}).get(
            "resourceVersion"
        ):
            self._child_changed(new)

    # --- workers ----------------------------------------------------------------------------------
    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.reconcile(key)
                self.queue.forget(key)
            except Exception as err:  # an API error: retry with back-off, never crash the worker
                if isinstance(err, ApiError):
                    log.info("reconcile %s: %s (retrying)", key, err)
                else:
                    log.exception("reconcile %s failed (retrying)", key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    def observe(self, kind: str, namespace: str, name: str) -> Observed:
        """The job's children as the cache holds them (no API call)."""
        pods = self.cache.store(PODS).for_job(namespace, name, kind=kind)
        service = self.cache.store(SERVICES).get(namespace, name)
        group = None
        if self.pod_group_ref is not None:
            group = self.cache.store(self.pod_group_ref).get(namespace, name)
        return Observed(
            pods=pods,
            service=service,
            pod_group=group,
            pod_group_crd_installed=self.pod_group_ref is None or self.pod_group_api_installed,
            hpa=self.cache.store(HORIZONTAL_POD_AUTOSCALERS).get(namespace, name),
        )

    async def reconcile(self, key: str) -> None:
        kind, namespace, name = split_job_key(key)
        ref = JOB_RESOURCES[kind]
        job = self.cache.store(ref).get(namespace, name)
        if job is None:
            self.expectations.forget(key)
            return
        if not self.expectations.satisfied(key):
            # Our own creates/deletes are not all in the cache yet; their events requeue the job.
            # Should one never come, the expectations expire: look again then.
            expires = self.expectations.expires_in(key)
            if expires is not None:
                self.queue.add_after(key, expires + 0.001)
            return
        started = time.perf_counter()
        the_plan = plan(job, self.observe(kind, namespace, name), self.clock.now(), self.planner_config)
        RECONCILE_PLAN_DURATION.labels(kind=kind).observe(time.perf_counter() - started)
        try:
            await self.apply(key, ref, job, the_plan)
        finally:
            RECONCILE_DURATION.labels(kind=kind).observe(time.perf_counter() - started)

    # --- applying a plan --------------------------------------------------------------------------
    async def apply(self, key: str, ref: ResourceRef, job: Obj, p: Plan) -> None:
        """Carry out a plan in the order documented in `kubetrain.operator.plan`."""
        meta = job["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if p.delete_job:
            failed: list[ApiError] = []
            await self._delete_child(
                job,
                ref,
                name,
                failed,
                self.client.delete(ref, namespace, name, propagation_policy="Background"),
            )
            if failed:
                raise failed[0]
            self.expectations.forget(key)
            return
        failures: list[ApiError] = []
        if p.create_service is not None:
            await self._create_child(job, SERVICES, p.create_service, failures)
        if p.create_pod_group is not None and self.pod_group_ref is not None:
            await self._create_child(job, self.pod_group_ref, p.create_pod_group, failures)
        if p.delete_service:
            await self._delete_child(
                job, SERVICES, name, failures, self.client.delete(SERVICES, namespace, name)
            )
        if p.delete_pod_group and self.pod_group_ref is not None:
            ref_pg = self.pod_group_ref
            await self._delete_child(job, ref_pg, name, failures, self.client.delete(ref_pg, namespace, name))
        hpa_ref = HORIZONTAL_POD_AUTOSCALERS
        if p.create_hpa is not None:
            await self._create_child(job, hpa_ref, p.create_hpa, failures)
        if p.update_hpa is not None:
            await self._replace_child(job, hpa_ref, p.update_hpa, failures)
        if p.delete_hpa:
            await self._delete_child(
                job, hpa_ref, name, failures, self.client.delete(hpa_ref, namespace, name)
            )
        if p.delete_pods:
            self.expectations.expect_deletions(key, p.delete_pods)
            await asyncio.gather(
                *(self._delete_pod(key, job, pod_name, failures) for pod_name in p.delete_pods)
            )
        if p.create_pods:
            self.expectations.expect_creations(key, [pod["metadata"]["name"] for pod in p.create_pods])
            await asyncio.gather(*(self._create_pod(key, job, pod, failures) for pod in p.create_pods))
        if p.status is not None:
            try:
                updated = await self.client.replace_status(ref, {**job, "status": p.status})
            except ApiError as err:
                if err.is_conflict:
                    # The cache holds an older job than the server; its update event requeues us.
                    log.debug("status of %s: conflict, waiting for the newer job", key)
                    self.queue.add_rate_limited(key)
                    return
                if err.is_not_found:
                    return
                raise
            # The next reconcile must start from what was written (persisted restart counts),
            # even if the watch event of this write has not arrived yet.
            store = self.cache.store(ref)
            cached = store.get(namespace, name)
            if cached is not None and cached["metadata"].get("resourceVersion") == meta.get(
                "resourceVersion"
            ):
                store.upsert(updated)  # only over the version we planned from, never a newer one
            self._count_transitions(job, p.status)
        for event in p.events:
            self.recorder.emit(job, event.type, event.reason, event.message)
        if p.requeue_at is not None:
            self.queue.add_at(key, p.requeue_at)
        if failures:
            raise failures[0]

    def _count_transitions(self, job: Obj, new: Mapping[str, Any]) -> None:
        old = job.get("status")
        labels = {"kind": str(job.get("kind")), "namespace": job["metadata"].get("namespace", "")}
        if _has_condition(new, "Succeeded") and not _has_condition(old, "Succeeded"):
            JOBS_SUCCEEDED.labels(**labels).inc()
        if _has_condition(new, "Failed") and not _has_condition(old, "Failed"):
            JOBS_FAILED.labels(**labels).inc()
        restarted = _total_restarts(new) - _total_restarts(old)
        if restarted > 0:
            JOBS_RESTARTED.labels(**labels).inc(restarted)

    async def _create_child(self, job: Obj, ref: ResourceRef, body: Obj, failures: list[ApiError]) -> None:
        try:
            await self.client.create(ref, body, namespace=job["metadata"]["namespace"])
        except ApiError as err:
            if err.is_already_exists:
                return  # created by an earlier reconcile; the cache has not seen it yet
            self.recorder.emit(
                job,
                "Warning",
                f"FailedCreate{ref.kind}",
                f"could not create {ref.kind} {body['metadata']['name']}: {err}",
            )
            failures.append(err)

    async def _replace_child(self, job: Obj, ref: ResourceRef, body: Obj, failures: list[ApiError]) -> None:
        """PUT `body` with the resourceVersion the plan saw. 409/404: the cache is behind; the
        watch event of the newer object (or its deletion) requeues the job."""
        try:
            await self.client.replace(ref, body)
        except ApiError as err:
            if err.is_conflict or err.is_not_found:
                log.debug(
                    "update of %s %s: %s, waiting for the watch", ref.kind, body["metadata"]["name"], err
                )
                return
            self.recorder.emit(
                job,
                "Warning",
                f"FailedUpdate{ref.kind}",
                f"could not update {ref.kind} {body['metadata']['name']}: {err}",
            )
            failures.append(err)

    async def _create_pod(self, key: str, job: Obj, pod: Obj, failures: list[ApiError]) -> None:
        pod_name = pod["metadata"]["name"]
        try:
            await self.client.create(PODS, pod, namespace=job["metadata"]["namespace"])
        except ApiError as err:
            # The informer will not report this pod as created by us: stop expecting it.
            self.expectations.creation_observed(key, pod_name)
            if err.is_already_exists:
                return
            self.recorder.emit(job, "Warning", "FailedCreatePod", f"could not create pod {pod_name}: {err}")
            failures.append(err)

    async def _delete_pod(self, key: str, job: Obj, pod_name: str, failures: list[ApiError]) -> None:
        try:
            await self.client.delete(PODS, job["metadata"]["namespace"], pod_name)
        except ApiError as err:
            self.expectations.deletion_observed(key, pod_name)
            if err.is_not_found:
                return
            self.recorder.emit(job, "Warning", "FailedDeletePod", f"could not delete pod {pod_name}: {err}")
            failures.append(err)

    async def _delete_child(
        self, job: Obj, ref: ResourceRef, name: str, failures: list[ApiError], call: Any
    ) -> None:
        """Await a DELETE; NotFound is success, any other failure is a Warning event on the job."""
        try:
            await call
        except ApiError as err:
            if err.is_not_found:
                return
            self.recorder.emit(
                job, "Warning", f"FailedDelete{ref.kind}", f"could not delete {ref.kind} {name}: {err}"
            )
            failures.append(err)


def is_managed_by_us(job: Mapping[str, Any]) -> bool:
    managed_by = ((job.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    return managed_by in (None, "", OPERATOR_NAME)
