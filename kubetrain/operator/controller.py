"""The controller loop: informers feed a work queue, workers plan each job and apply the plan.

    controller = Controller(client, ControllerConfig(workers=4, gang_scheduler="none"))
    await controller.start()          # informers synced, workers running
    ...
    await controller.stop()

All decisions are made by the pure planner (`kubetrain.operator.plan.plan`); this module only
reads the shared informer cache (a reconcile makes no LIST or GET call), hands the plan to
`kubetrain.operator.apply` for the API writes, and schedules the exact wake-ups the plan asks for.

Keys in the queue are `Kind/namespace/name` (`kubetrain.operator.keys`). Expectations
(`kubetrain.kube.expectations`) hold a job back while creates/deletes it made are not yet
visible in the cache, so a cache lagging behind our own writes never causes duplicate creates or
deletes.

Which informer event requeues which job, and when, is `jobevents.py`'s (`JobEvents`, a base of
the `Controller`).

With a gang scheduler, `kubetrain.operator.gang_api` follows whether the PodGroup API is
installed (its CRD is watched by name) and runs the PodGroup informer while it is; every job is
enqueued when that changes, so jobs waiting for the API proceed without an operator restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import Any

from kubetrain.api.groups import TRAINER_GROUP
from kubetrain.jobs.tensorboard import LABEL_TENSORBOARD_OF
from kubetrain.kube.cache import JOB_NAME_LABEL, Cache, slim_pod
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.informer import Informer
from kubetrain.kube.requesttimes import RequestTimes
from kubetrain.kube.resources import (
    CONFIG_MAPS,
    HORIZONTAL_POD_AUTOSCALERS,
    INGRESSES,
    NODES,
    POD_GROUP_RESOURCES,
    PODS,
    SERVICES,
    ResourceRef,
    job_resources_in,
)
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator import kubedlgauges, kubedllaunch
from kubetrain.operator.adopt_api import adopt_children
from kubetrain.operator.adoption import KUBEFLOW
from kubetrain.operator.adoption_kubedl import KUBEDL
from kubetrain.operator.apply import PlanApplier
from kubetrain.operator.controllerconfig import ControllerConfig
from kubetrain.operator.controllernames import job_resource_controller
from kubetrain.operator.gang_api import PodGroupApi
from kubetrain.operator.jobevents import JobEvents
from kubetrain.operator.keys import (
    split_job_key,
)
from kubetrain.operator.loop import ReconcileLoop
from kubetrain.operator.plan import Observed, Plan, PlannerConfig, plan
from kubetrain.operator.quotawake import QuotaWake
from kubetrain.operator.reconciletimes import observe_reconcile
from kubetrain.operator.trainjobs import TRAINJOB_RESOURCE_ID, TrainJobs
from kubetrain.serving.metrics import RECONCILE_PLAN_DURATION

__all__ = ["Controller", "ControllerConfig"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class Controller(JobEvents, ReconcileLoop):
    log = logging.getLogger(__name__)

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
            gang_scheduler=self.config.gang_scheduler,
            scheduler_name=self.config.scheduler_name,
            max_replicas=self.config.max_replicas,
            service_mode=self.config.service_mode,
            cluster_domain=self.config.cluster_domain,
            progress=self.config.progress,
        )
        self.job_resources = job_resources_in(self.config.api_groups)
        self.trainjobs: TrainJobs | None = None
        if TRAINER_GROUP in self.config.api_groups:
            self.trainjobs = TrainJobs(client, self.cache, self.clock, self.queue.add)
            self.job_resources[TRAINJOB_RESOURCE_ID] = TrainJobs.ref
        self.pod_group_ref: ResourceRef | None = POD_GROUP_RESOURCES.get(self.config.gang_scheduler)
        self.applier = PlanApplier(
            client, self.cache, self.queue, self.expectations, self.recorder, self.pod_group_ref
        )
        self.informers: list[Informer] = []
        self._pod_group_api: PodGroupApi | None = None  # while started, with a gang scheduler
        self._workers: list[asyncio.Task[None]] = []
        self._started = False
        self._decision_seconds: dict[str, float] = {}  # key -> its last cache read + plan time
        self._kubedl_gauges: int | None = None  # kubedl_jobs_running/pending over this cache

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """Started: `start()` returned once the informers it started had synced (and an informer
        never un-syncs). A PodGroup informer started later (its CRD installed meanwhile) does not
        count: until it has synced the PodGroup API simply counts as not installed yet."""
        return self._started

    @property
    def pod_group_api_installed(self) -> bool:
        return self._pod_group_api is not None and self._pod_group_api.installed

    async def start(self, *, sync_timeout: float | None = None) -> None:
        """Start the informers, wait for their initial lists, then start the workers."""
        if sync_timeout is None:
            await self._start_informers()
        else:
            await asyncio.wait_for(self._start_informers(), sync_timeout)
        self._started = True
        self._kubedl_gauges = kubedlgauges.serve_cache(self.cache, self.job_resources.values())
        self.start_workers(self.config.workers, "kubetrain worker")
        log.info("controller started: %d workers, caches synced", self.config.workers)

    async def _start_informers(self) -> None:
        namespaces = self.config.namespaces or None
        await self._adopt(namespaces)
        for kind, ref in self.job_resources.items():
            informer = Informer(self.client, ref, cache=self.cache, namespaces=namespaces, clock=self.clock)
            informer.add_handler(
                on_add=self._job_added,
                on_update=self._job_updated,
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
            transform=slim_pod,  # the planner reads no pod spec: most of a pod's bytes
        )
        pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        # ConfigMaps a framework's extra children include (MPIJob's hostfile), labelled with a job
        # name only: the operator reads no other ConfigMap. Secrets are never read (create only).
        config_maps = Informer(
            self.client,
            CONFIG_MAPS,
            cache=self.cache,
            namespaces=namespaces,
            label_selector=JOB_NAME_LABEL,
            clock=self.clock,
        )
        self._watch_child(config_maps)
        # Every Service, not just ours: a Service of a job's name owned by someone else must be seen.
        # Every HorizontalPodAutoscaler too (elastic PyTorchJobs with metrics own one): an HPA of a
        # job's name that the job does not own must be seen, so the job leaves it alone.
        children = [
            Informer(self.client, r, cache=self.cache, namespaces=namespaces, clock=self.clock)
            for r in (SERVICES, HORIZONTAL_POD_AUTOSCALERS)
        ]
        # The Ingresses of jobs' TensorBoards, so a deleted or hand-edited one is repaired.
        children.append(
            Informer(
                self.client,
                INGRESSES,
                cache=self.cache,
                namespaces=namespaces,
                label_selector=LABEL_TENSORBOARD_OF,
                clock=self.clock,
            )
        )
        for informer in children:
            self._watch_child(informer)
        # ResourceQuotas: one with more room wakes the jobs of its namespace a quota held back
        # (quotawake.py). Optional: without RBAC one warning, and those jobs wait for their back-off.
        quotas = QuotaWake(self.cache, self.job_resources.values, self.applier.create_failures, self._wake)
        children.append(quotas.informer(self.client, namespaces, self.clock))
        self.informers += [pods, config_maps, *children]
        if self.trainjobs is not None:
            self.informers += self.trainjobs.informers(namespaces)
        for informer in self.informers:
            informer.start()
        if self.pod_group_ref is not None:
            self._pod_group_api = PodGroupApi(
                self.client,
                self.cache,
                self.pod_group_ref,
                gang_scheduler=self.config.gang_scheduler,
                namespaces=namespaces,
                clock=self.clock,
                add_handlers=self._watch_child,
                api_changed=self._enqueue_all_jobs,
            )
            await self._pod_group_api.start()
        # an optional watch RBAC refuses (on_forbidden: the Node informer) does not hold the start
        await asyncio.gather(*(i.wait_ready() for i in self.informers))

    def _wake(self, key: str) -> None:
        """Queue `key` now, its back-off reset (client-go's `Forget` + `Add`)."""
        self.queue.forget(key)
        self.queue.add(key)

    async def _adopt(self, namespaces: list[str] | None) -> None:
        """Serving kubeflow.org or training.kubedl.io: adopt the pods and Services of jobs
        Kubeflow's operator or KubeDL started (adopt_api.py), before the informers list them. A
        failure is logged, not fatal."""
        for source in (KUBEFLOW, KUBEDL):
            if not any(ref.group == source.group for ref in self.job_resources.values()):
                continue
            try:
                refs = self.job_resources.values()
                await adopt_children(
                    self.client,
                    refs,
                    source,
                    namespaces=namespaces,
                    recorder=self.recorder,
                    gang_scheduler=self.config.gang_scheduler,
                )
            except ApiError as err:
                log.warning("adopting pods %s made failed, left as they are: %s", source.operator, err)

    async def stop(self) -> None:
        kubedlgauges.stop(self._kubedl_gauges)
        self._kubedl_gauges = None
        await self.stop_workers()
        if self._pod_group_api is not None:
            await self._pod_group_api.stop()
            self._pod_group_api = None
        await self.stop_informers()
        self._started = False

    # --- reconcile --------------------------------------------------------------------------------
    def controller_of(self, prefix: str) -> str:
        return job_resource_controller(prefix)  # a key's prefix is its job resource id

    def key_prefixes(self) -> list[str]:
        return list(self.job_resources)

    def observe(self, kind: str, namespace: str, name: str) -> Observed:
        """The job's children as the cache holds them (no API call)."""
        group = None
        if self.pod_group_ref is not None:
            group = self.cache.store(self.pod_group_ref).get(namespace, name)
        return Observed(
            pods=self.cache.store(PODS).for_job(namespace, name, kind=kind),
            service=self.cache.store(SERVICES).get(namespace, name),
            pod_group=group,
            pod_group_crd_installed=self.pod_group_ref is None or self.pod_group_api_installed,
            hpa=self.cache.store(HORIZONTAL_POD_AUTOSCALERS).get(namespace, name),
            extra=self.cache.store(CONFIG_MAPS).for_job(namespace, name, kind=kind),
            job_services=self.cache.store(SERVICES).for_job(namespace, name, kind=kind),
            service_named=partial(self.cache.store(SERVICES).get, namespace),
            tensorboard_ingress=partial(self.cache.store(INGRESSES).get, namespace),
            node=partial(self.cache.store(NODES).get, None),  # filled while serving TrainJobs
            priority_classes=self.trainjobs.priority_classes if self.trainjobs is not None else lambda: None,
        )

    async def reconcile(self, key: str) -> None:
        rid, namespace, name = split_job_key(key)
        ref = self.job_resources.get(rid)
        if ref is None:  # a child owned by a job of a group this operator does not serve
            return
        kind = ref.kind
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
        with RequestTimes.recording() as times:
            started = time.perf_counter()
            observed = self.applier.records(job, self.observe(kind, namespace, name))
            if self.trainjobs is not None and rid == TRAINJOB_RESOURCE_ID:
                the_plan = self.trainjobs.plan(job, observed, self.clock.now(), self.planner_config)
            else:
                the_plan = plan(job, observed, self.clock.now(), self.planner_config)
            decided = time.perf_counter() - started
            self._decision_seconds[key] = decided
            RECONCILE_PLAN_DURATION.labels(kind=kind).observe(decided)
            try:
                await self.apply(key, ref, job, the_plan)
                kubedllaunch.observe(
                    job, job.get("status") if the_plan.status is None else the_plan.status, observed.pods
                )
            finally:
                observe_reconcile(kind, time.perf_counter() - started, times)

    async def apply(self, key: str, ref: ResourceRef, job: Obj, p: Plan) -> None:
        """Carry out a plan (`kubetrain.operator.apply`)."""
        await self.applier.apply(key, ref, job, p)
