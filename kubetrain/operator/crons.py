"""The cron controller: TrainingCrons (and KubeDL's Crons) create training jobs on their schedules.

    crons = CronController(client, CronControllerConfig(api_groups=("kubetrain.io",)), clock=clock)
    await crons.start()        # informers synced, workers running
    ...
    await crons.stop()

A reconciler of its own beside the job controller, with its own informers: the cron kinds
served (TrainingCron always when its CRD is installed; KubeDL's Cron with `--api-groups`
including apps.kubedl.io) and the jobs of every served job group labelled
`kubetrain.io/cron-name` (only jobs a cron created). Every decision is the pure
`kubetrain.cron.decide.decide`; this module reads the cache, confirms with a GET an active job the
cache does not show (as the CronJob controller does), then deletes (Replace, history limits;
background propagation), creates the job, writes the status (active refs, lastScheduleTime,
lastSuccessfulTime, the `Valid` condition) and records the events. The key is requeued for the
next scheduled time on the injected clock, so tests step time instead of waiting for it.

Job names are deterministic (`<cron>-<scheduled minute>`): a create answered AlreadyExists for a
job the cron controls counts as created (a pass whose status write was lost, or a stale cache).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api import cron as cronapi
from kubetrain.api.groups import KUBETRAIN_GROUP, group_of, job_groups
from kubetrain.api.labels import LABEL_CRON_NAME
from kubetrain.api.metatime import parse_time
from kubetrain.cron.decide import CronEvent, CronPlan, decide
from kubetrain.cron.records import finished_condition, job_ref
from kubetrain.cron.shape import CronShape, CronUnreadable, read_cron
from kubetrain.kube.cache import Store
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef, job_resources_in
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator import cronmetrics
from kubetrain.operator.apigroups import PART_OF_LABEL, PART_OF_VALUE, ApiGroupRefused
from kubetrain.operator.controllernames import cron_controller
from kubetrain.operator.loop import ReconcileLoop
from kubetrain.operator.writes import namespace_closed

log = logging.getLogger(__name__)
Obj = dict[str, Any]

TRAINING_CRONS = ResourceRef(cronapi.GROUP, cronapi.VERSION, cronapi.PLURAL, cronapi.KIND, True)
KUBEDL_CRONS = ResourceRef(
    cronapi.KUBEDL_GROUP, cronapi.KUBEDL_VERSION, cronapi.KUBEDL_PLURAL, cronapi.KUBEDL_KIND, True
)
CRON_RESOURCES = {cronapi.GROUP: TRAINING_CRONS, cronapi.KUBEDL_GROUP: KUBEDL_CRONS}


@dataclass
class CronControllerConfig:
    api_groups: tuple[str, ...] = (KUBETRAIN_GROUP,)  # --api-groups: job groups, apps.kubedl.io
    namespaces: list[str] = field(default_factory=list)  # empty: every namespace
    workers: int = 2


def cron_groups(api_groups: tuple[str, ...]) -> tuple[str, ...]:
    """The cron kinds' groups served: kubetrain.io's TrainingCron always, KubeDL's when asked."""
    return tuple(g for g in cronapi.CRON_GROUPS if g == cronapi.GROUP or g in api_groups)


def cron_key(group: str, namespace: str, name: str) -> str:
    return f"{group}/{namespace}/{name}"


def owner_cron_key(obj: Obj) -> str | None:
    """The key of the cron controlling `obj` (its controller ownerReference), if any."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        group = group_of(ref.get("apiVersion"))
        if ref.get("controller") and cronapi.CRON_KINDS.get(group) == ref.get("kind"):
            return cron_key(group, meta.get("namespace", ""), str(ref.get("name", "")))
    return None


class CronController(ReconcileLoop):
    log = logging.getLogger(__name__)
    subject = "cron "

    def __init__(
        self,
        client: KubeClient,
        config: CronControllerConfig | None = None,
        *,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.config = config or CronControllerConfig()
        self.clock = clock or SYSTEM_CLOCK
        self.recorder = recorder or EventRecorder(client, component="kubetrain-cron", clock=self.clock)
        self.queue: WorkQueue[str] = WorkQueue(name="crons", clock=self.clock)
        self.job_groups = job_groups(self.config.api_groups)
        self.job_refs = job_resources_in(self.job_groups)
        self.crons: dict[str, Store] = {}  # group -> store of that group's cron kind
        self.jobs = {rid: Store(ref, index_label=LABEL_CRON_NAME) for rid, ref in self.job_refs.items()}
        self.informers: list[Informer] = []
        self._workers: list[asyncio.Task[None]] = []
        self.served: list[str] | None = None  # the cron groups with a usable CRD, once checked
        self.started = False

    def controller_of(self, prefix: str) -> str:
        ref = CRON_RESOURCES.get(prefix)  # a key's prefix is its cron group
        return cron_controller(prefix, ref.kind if ref is not None else "")

    def key_prefixes(self) -> list[str]:
        return list(self.served or ())

    # --- lifecycle ------------------------------------------------------------------------------
    async def check(self) -> None:
        """Which served cron kinds have a usable CRD (`ApiGroupRefused`: KubeDL's Cron asked for
        but missing, or installed by KubeDL). Called by `start()` unless called before (the
        runtime calls it before leader election, so a refusal stops the start-up)."""
        self.served = [
            g for g in cron_groups(self.config.api_groups) if await self._crd_usable(g, CRON_RESOURCES[g])
        ]

    async def start(self) -> None:
        """Start the informers of the served cron kinds whose CRDs are installed, then workers.
        TrainingCron's CRD missing is logged (an install from before scheduled training)."""
        if self.served is None:
            await self.check()
        namespaces = self.config.namespaces or None
        for group in self.served or ():
            ref = CRON_RESOURCES[group]
            store = self.crons[group] = Store(ref)
            informer = Informer(self.client, ref, store=store, namespaces=namespaces, clock=self.clock)
            informer.add_handler(
                on_add=self._cron_changed, on_update=self._cron_updated, on_delete=self._cron_deleted
            )
            self.informers.append(informer)
        if self.crons:
            for rid, ref in self.job_refs.items():
                informer = Informer(
                    self.client,
                    ref,
                    store=self.jobs[rid],
                    namespaces=namespaces,
                    label_selector=LABEL_CRON_NAME,
                    clock=self.clock,
                )
                informer.add_handler(
                    on_add=self._job_changed, on_update=self._job_updated, on_delete=self._job_changed
                )
                self.informers.append(informer)
        for informer in self.informers:
            informer.start()
        await asyncio.gather(*(i.wait_synced() for i in self.informers))
        self.start_workers(self.config.workers, "kubetrain cron worker")
        self.started = True

    async def _crd_usable(self, group: str, ref: ResourceRef) -> bool:
        name = f"{ref.plural}.{group}"
        if group == cronapi.GROUP:  # kubetrain's own group: served when installed (discovery)
            if await self.client.has_api(group, ref.version, ref.plural):
                return True
            log.warning("CustomResourceDefinition %s is not installed: TrainingCrons are not served", name)
            return False
        try:
            crd = await self.client.get(CUSTOM_RESOURCE_DEFINITIONS, None, name)
        except ApiError as err:
            if err.is_forbidden:  # no RBAC to read CRDs: ask discovery instead
                return await self.client.has_api(group, ref.version, ref.plural)
            if not err.is_not_found:
                raise
            raise ApiGroupRefused(
                f"cannot serve {group}: CustomResourceDefinition {name} is not installed; install it with "
                f"`kubetrain crds --group {group} | kubectl apply -f -`"
            ) from None
        labels = (crd.get("metadata") or {}).get("labels") or {}
        if labels.get(PART_OF_LABEL) != PART_OF_VALUE:
            raise ApiGroupRefused(
                f"refusing to serve {group}: CustomResourceDefinition {name} was not installed by kubetrain "
                f"(no label {PART_OF_LABEL}={PART_OF_VALUE}); KubeDL's operator installs it and would "
                f"create the same jobs. Stop KubeDL's cron controller, then `kubetrain crds --group {group} "
                "| kubectl replace -f -` — or leave apps.kubedl.io out of --api-groups"
            )
        return True

    async def stop(self) -> None:
        await self.stop_loop()
        self.started = False

    # --- handlers ----------------------------------------------------------------------------------
    def _cron_changed(self, cron: Obj) -> None:
        meta = cron.get("metadata") or {}
        group = group_of(cron.get("apiVersion")) or cronapi.GROUP
        self.queue.add(cron_key(group, meta.get("namespace", ""), meta.get("name", "")))

    def _cron_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") != (new.get("metadata") or {}).get(
            "resourceVersion"
        ):
            self._cron_changed(new)

    def _cron_deleted(self, cron: Obj) -> None:
        meta = cron.get("metadata") or {}
        group = group_of(cron.get("apiVersion")) or cronapi.GROUP
        kind = str(cron.get("kind") or (CRON_RESOURCES[group].kind if group in CRON_RESOURCES else ""))
        cronmetrics.forget((kind, meta.get("namespace", ""), meta.get("name", "")))
        self.queue.forget(cron_key(group, meta.get("namespace", ""), meta.get("name", "")))

    def _job_changed(self, job: Obj) -> None:
        key = owner_cron_key(job)
        if key is not None:
            self.queue.add(key)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        # A cron cares whether its job finished (and when), not about every status write.
        if finished_condition(old) != finished_condition(new) or (old.get("metadata") or {}).get(
            "deletionTimestamp"
        ) != (new.get("metadata") or {}).get("deletionTimestamp"):
            self._job_changed(new)

    # --- reconcile ---------------------------------------------------------------------------------
    def jobs_of(self, shape: CronShape) -> list[Obj]:
        """The jobs the cron controls, from the cache (labelled with its name, owned by its uid)."""
        out = []
        for store in self.jobs.values():
            for job in store.by_label(shape.namespace, shape.name):
                refs = (job.get("metadata") or {}).get("ownerReferences") or ()
                if any(r.get("controller") and r.get("uid") == shape.uid for r in refs):
                    out.append(job)
        return out

    def _job_resource(self, api_version: str, kind: str) -> ResourceRef | None:
        group = group_of(api_version)
        for ref in self.job_refs.values():
            if ref.group == group and ref.kind == kind:
                return ref
        return None

    async def reconcile(self, key: str) -> None:
        group, namespace, name = key.split("/", 2)
        store = self.crons.get(group)
        cron = store.get(namespace, name) if store is not None else None
        if cron is None:
            return
        try:
            shape = read_cron(cron)
        except CronUnreadable as exc:
            self.recorder.emit(cron, "Warning", "InvalidCron", str(exc))
            return
        jobs = self.jobs_of(shape)
        now = self.clock.now()
        plan = decide(shape, jobs, now, served_groups=self.job_groups)
        if any(e.reason == "UnexpectedJob" for e in plan.events):
            # The cache may hold the cron from before our own status write: read it (the CronJob
            # controller does the same) before calling a job unexpected.
            fresh = await self.client.get(CRON_RESOURCES[shape.group], namespace, name)
            if (fresh.get("metadata") or {}).get("resourceVersion") != (cron.get("metadata") or {}).get(
                "resourceVersion"
            ):
                cron, shape = fresh, read_cron(fresh)
                plan = decide(shape, jobs, now, served_groups=self.job_groups)
        if plan.unseen:
            gone = {str(ref.get("uid")) for ref in plan.unseen if await self._gone(ref)}
            if gone:
                plan = decide(shape, jobs, now, gone=gone, served_groups=self.job_groups)
        try:
            await self._apply(cron, shape, plan)
        finally:
            for event in plan.events:
                self.recorder.emit(cron, event.type, event.reason, event.message)
            cronmetrics.observe(
                (shape.kind, shape.namespace, shape.name),
                [event.reason for event in plan.events],
                plan.skipped,
                parse_time(plan.status.get("lastScheduleTime")),
            )
        if plan.requeue_at is not None:
            self.queue.add_at(key, plan.requeue_at)

    async def _gone(self, ref: Obj) -> bool:
        """Whether an active job the cache does not show is gone from the API server."""
        resource = self._job_resource(str(ref.get("apiVersion")), str(ref.get("kind")))
        if resource is None:
            return True  # of a group no longer served: nothing to wait for
        try:
            job = await self.client.get(resource, str(ref.get("namespace")), str(ref.get("name")))
        except ApiError as err:
            if err.is_not_found:
                return True
            raise
        return str((job.get("metadata") or {}).get("uid")) != str(ref.get("uid"))

    async def _apply(self, cron: Obj, shape: CronShape, plan: CronPlan) -> None:
        for ref in plan.delete:
            resource = self._job_resource(ref.api_version, ref.kind)
            if resource is None:
                continue
            try:
                await self.client.delete(
                    resource,
                    ref.namespace,
                    ref.name,
                    propagation_policy="Background",
                    preconditions={"uid": ref.uid},
                )
            except ApiError as err:
                if not (err.is_not_found or err.is_conflict):
                    raise
        status = plan.status
        failure: ApiError | None = None
        if plan.create is not None and plan.scheduled_time is not None:
            created = await self._create(plan, shape)
            if isinstance(created, ApiError):
                failure = created
            elif created is not None:
                if finished_condition(created) is None:
                    status["active"] = [*(status.get("active") or []), job_ref(created).reference()]
                status["lastScheduleTime"] = plan.scheduled_time.strftime("%Y-%m-%dT%H:%M:%SZ")
        if status != (cron.get("status") or {}):
            try:
                written = await self.client.replace_status(
                    CRON_RESOURCES[shape.group], {**cron, "status": status}
                )
                self.crons[shape.group].upsert(written)  # the next pass reads what was written
            except ApiError as err:
                if not err.is_conflict:  # a newer cron is on its way: its event requeues the key
                    raise
        if failure is not None:
            raise failure

    async def _create(self, plan: CronPlan, shape: CronShape) -> Obj | ApiError | None:
        """The created job (or the cron's own job of that name), None when the name is another's
        or the namespace takes no new objects, an ApiError to retry with back-off."""
        job = plan.create
        assert job is not None
        name = job["metadata"]["name"]
        resource = self._job_resource(str(job.get("apiVersion")), str(job.get("kind")))
        assert resource is not None  # decide() creates only jobs of served groups
        try:
            created: Obj = await self.client.create(resource, job, namespace=shape.namespace)
        except ApiError as err:
            if namespace_closed(err):
                return None
            if not err.is_already_exists:
                plan.events.append(
                    _event("Warning", "FailedCreate", f"Error creating job: {err.message or err}")
                )
                return err
            existing: Obj = await self.client.get(resource, shape.namespace, name)
            refs = (existing.get("metadata") or {}).get("ownerReferences") or ()
            if any(r.get("controller") and r.get("uid") == shape.uid for r in refs):
                return existing
            plan.events.append(
                _event("Warning", "FailedCreate", f"Error creating job: {name} exists and is not this cron's")
            )
            return None
        plan.events.append(_event("Normal", "SuccessfulCreate", f"Created job {name}"))
        return created


def _event(type_: str, reason: str, message: str) -> CronEvent:
    return CronEvent(type_, reason, message)
