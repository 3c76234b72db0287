"""DevStack: the whole of kubetrain on one machine, in one process.

    async with DevStack(DevStackOptions(default_run_seconds=2)) as stack:
        await stack.apply(job)                    # through the API server, webhooks included
        stack.cluster.kubeconfig_path             # for kubectl

It starts `kubetrain.devcluster.DevCluster` (the emulated API server, HTTPS), installs the
CRDs, runs the real admission webhook server over TLS with a certificate made for loopback and
registers it in URL mode, runs the real controller, and runs the pod simulator in place of
kubelets. With a gang scheduler it also installs that scheduler's PodGroup CRD and runs
`GangSchedulerSimulator` in its place (`podgroup_crd=False`: no CRD, to see the operator report
the missing API; `gang_simulator=False`: the test admits PodGroups itself and the pod simulator
binds gang pods at once). `kubetrain dev`, the integration tests and the benchmarks all use it, so what they
exercise is exactly what a user runs.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.groups import TRAINER_GROUP
from kubetrain.api.trainer.defaults import default_runtimes, public_configmap
from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import ReloadingTLS, write_cert_dir
from kubetrain.devcluster import DevCluster, GangSchedulerSimulator, PodSimulator, podgroup_crd
from kubetrain.devcluster.apiserver.storage.compaction import DEFAULT_COMPACTION_INTERVAL
from kubetrain.devcluster.apiserver.storage.eventttl import DEFAULT_EVENT_TTL
from kubetrain.jobs.trainercrds import group_crds
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    job_resource,
    job_resources_in,
)
from kubetrain.operator.controller import Controller, ControllerConfig
from kubetrain.operator.crons import CronController, CronControllerConfig
from kubetrain.operator.progressenv import ProgressInjection
from kubetrain.policy import PolicyIndex
from kubetrain.progress.lookup import ApiLookup, Routes, choose
from kubetrain.progress.server import ProgressServer
from kubetrain.webhook.configurations import webhook_configurations
from kubetrain.webhook.jobreader import kube_job_reader
from kubetrain.webhook.policies import PolicyAdmission, PolicyWatcher
from kubetrain.webhook.server import WebhookServer
from kubetrain.webhook.trainerreader import kube_trainer_reader

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass
class DevStackOptions:
    install_crds: bool = True
    webhook: bool = True
    training_policies: bool = True
    controller: bool = True
    simulator: bool = True
    # Pods without a sim.kubetrain.io/run-seconds annotation run this long (None: until told).
    default_run_seconds: float | None = None
    simulated_nodes: int = 3
    gang_scheduler: str = "none"
    service_mode: str = "headless"  # the controller's --service-mode
    cluster_domain: ClusterDomain = UNSET  # the controller's --cluster-domain
    scheduler_name: str | None = None  # --scheduler-name (bound by the pod simulator without a gang)
    max_replicas: int = DEFAULT_MAX_REPLICAS  # --max-replicas-per-job (webhook and controller)
    namespaces: tuple[str, ...] = ()  # the controller's --namespaces (empty: every namespace)
    api_groups: tuple[str, ...] = ("kubetrain.io",)  # the job groups served (--api-groups)
    # With a gang scheduler: install its PodGroup CRD (None: yes) and run the gang scheduler
    # simulator (None: when the stack installs the CRD and runs the pod simulator).
    podgroup_crd: bool | None = None
    gang_simulator: bool | None = None
    node_allocatable: dict[str, str] | None = None  # per simulated node (default: PodSimulator's)
    workers: int = 4
    qps: float = 1000.0
    burst: int = 2000
    watch_window: int = 10000
    event_ttl: float = DEFAULT_EVENT_TTL  # seconds an Event lives after its last write (0: forever)
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL  # history compaction, seconds (0: never)
    controller_clock: Clock | None = None  # an injected clock for deadline/TTL tests
    simulator_clock: Clock | None = None
    progress_clock: Clock | None = None  # the progress endpoint's (None: the controller's)
    # The training-progress endpoint on loopback (its URL, CA and token injected into pods).
    progress: bool = False
    progress_interval: float = 5.0
    # Simulated pods report progress: every rank-0 pod with the endpoint's env (True), or only
    # those annotated sim.kubetrain.io/report-progress: "true" (False); one report per interval.
    report_progress: bool = False
    report_interval: float = 5.0
    authorization: str = "AlwaysAllow"  # "RBAC": devcluster authorizes like --authorization-mode=RBAC


class DevStack:
    def __init__(self, options: DevStackOptions | None = None) -> None:
        self.options = options or DevStackOptions()
        self.cluster = DevCluster(
            watch_window=self.options.watch_window,
            authorization=self.options.authorization,
            event_ttl=self.options.event_ttl,
            compaction_interval=self.options.compaction_interval,
        )
        self.client: KubeClient | None = None
        self.webhook: WebhookServer | None = None
        self.policy_watcher: PolicyWatcher | None = None
        self.controller: Controller | None = None
        self.crons: CronController | None = None
        self.simulator: PodSimulator | None = None
        self.gang_simulator: GangSchedulerSimulator | None = None
        self.progress: ProgressServer | None = None
        self.progress_injection: ProgressInjection | None = None

    @property
    def kube(self) -> KubeClient:
        if self.client is None:
            raise RuntimeError("DevStack is not started")
        return self.client

    async def __aenter__(self) -> DevStack:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        opts = self.options
        await self.cluster.start()
        self.client = await KubeClient.connect(self.cluster.kubeconfig_path, qps=opts.qps, burst=opts.burst)
        if opts.install_crds:
            await self.install_crds()
        if self.wants_podgroup_crd:
            await self.install_podgroup_crd()
        if opts.webhook:
            await self.start_webhook()
        if opts.progress:
            await self.start_progress()
        if opts.controller:
            await self.start_controller()
        if opts.install_crds and TRAINER_GROUP in opts.api_groups:
            await self.install_trainer_defaults()
        if opts.simulator:
            gang = self.wants_gang_simulator
            self.simulator = PodSimulator(
                self.cluster.kubeconfig_path,
                nodes=opts.simulated_nodes,
                default_run_seconds=opts.default_run_seconds,
                # The gang simulator binds gang pods (all or nothing); without it every pod is bound.
                scheduler_names=("default-scheduler",)
                if gang
                else (
                    "default-scheduler",
                    "volcano",
                    "scheduler-plugins-scheduler",
                    *self._custom_scheduler(),
                ),
                clock=opts.simulator_clock or SYSTEM_CLOCK,
                report_progress=opts.report_progress,
                report_interval=opts.report_interval,
            )
            await self.simulator.start()
            if gang:
                self.gang_simulator = GangSchedulerSimulator(
                    self.cluster.kubeconfig_path,
                    opts.gang_scheduler,
                    node_names=self.simulator.node_names,
                    allocatable=opts.node_allocatable,
                    clock=opts.simulator_clock or SYSTEM_CLOCK,
                )
                await self.gang_simulator.start()

    def _custom_scheduler(self) -> tuple[str, ...]:
        """A --scheduler-name the simulated kubelet plays too (a real cluster runs that scheduler)."""
        name = self.options.scheduler_name
        return (name,) if name else ()

    @property
    def wants_podgroup_crd(self) -> bool:
        opts = self.options
        return opts.gang_scheduler != "none" and opts.podgroup_crd is not False

    @property
    def wants_gang_simulator(self) -> bool:
        opts = self.options
        if opts.gang_simulator is None:
            return self.wants_podgroup_crd and opts.simulator
        return opts.gang_simulator and opts.gang_scheduler != "none"

    async def install_podgroup_crd(self) -> None:
        """The configured gang scheduler's PodGroup CRD, served before this returns (the
        controller watches the CRD, so it may be installed before or after the controller starts)."""
        await self._install([podgroup_crd(self.options.gang_scheduler)])

    async def install_trainer_defaults(self) -> None:
        """Trainer's default ClusterTrainingRuntimes and the `kubeflow-trainer-public` ConfigMap
        (in kubeflow-system, created if missing), as Trainer's manifests install them."""
        for runtime in default_runtimes():
            try:
                await self.kube.create(CLUSTER_TRAINING_RUNTIMES, runtime)
            except ApiError as err:
                if not err.is_already_exists:
                    raise
        public = public_configmap()
        for ref, obj in (
            (
                NAMESPACES,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": public["metadata"]["namespace"]},
                },
            ),
            (CONFIG_MAPS, public),
        ):
            try:
                await self.kube.create(ref, obj)
            except ApiError as err:
                if not err.is_already_exists:
                    raise

    async def install_crds(self) -> None:
        await self._install([crd for group in self._crd_groups() for crd in group_crds(group)])

    def _crd_groups(self) -> list[str]:
        """kubetrain.io always (TrainingPolicy lives there), and every other group served."""
        return list(dict.fromkeys(["kubetrain.io", *self.options.api_groups]))

    async def _install(self, crds: list[Obj]) -> None:
        for crd in crds:
            try:
                await self.kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
            except ApiError as err:
                if not err.is_already_exists:
                    raise
        for crd in crds:
            spec = crd["spec"]
            version = spec["versions"][0]["name"]
            for _ in range(200):
                if await self.kube.has_api(spec["group"], version, spec["names"]["plural"]):
                    break
                await asyncio.sleep(0.01)

    async def start_webhook(self) -> None:
        opts = self.options
        cert_dir = self.cluster.workdir / "webhook-certs"
        bundle = generate_bundle(["localhost"], ["127.0.0.1"])
        write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        policies = None
        if opts.training_policies:
            policies = PolicyAdmission(PolicyIndex(), gang_scheduling=opts.gang_scheduler != "none")
            self.policy_watcher = PolicyWatcher(
                self.kube,
                policies.index,
                job_resources=job_resources_in(opts.api_groups).values(),
                namespaces=opts.namespaces,
            )
            await self.policy_watcher.start(wait=True)
        self.webhook = WebhookServer(
            cert_dir=str(cert_dir),
            host="127.0.0.1",
            port=0,
            gang_scheduling=opts.gang_scheduler != "none",
            max_replicas=opts.max_replicas,
            policies=policies,
            job_reader=kube_job_reader(self.kube),
            trainer_reader=kube_trainer_reader(self.kube),
        )
        await self.webhook.start()
        mutating, validating = webhook_configurations(
            self.webhook.url, bundle.ca_bundle, api_groups=opts.api_groups
        )
        await self.kube.create(MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
        await self.kube.create(VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
        if opts.install_crds:
            await self.point_conversion_webhooks(bundle.ca_bundle)

    async def point_conversion_webhooks(self, ca_bundle: bytes) -> None:
        """The installed CRDs with a conversion webhook (mpijobs.kubeflow.org) call this stack's
        webhook server at /convert, trusting its CA (what the chart's caBundle injection does)."""
        assert self.webhook is not None
        config = {"url": f"{self.webhook.url}/convert", "caBundle": base64.b64encode(ca_bundle).decode()}
        for group in self._crd_groups():
            for crd in group_crds(group):
                if (crd["spec"].get("conversion") or {}).get("strategy") != "Webhook":
                    continue
                patch = [{"op": "replace", "path": "/spec/conversion/webhook/clientConfig", "value": config}]
                await self.kube.patch(
                    CUSTOM_RESOURCE_DEFINITIONS, None, crd["metadata"]["name"], patch, patch_type="json"
                )

    async def start_controller(self) -> None:
        opts = self.options
        self.controller = Controller(
            self.kube,
            ControllerConfig(
                workers=opts.workers,
                gang_scheduler=opts.gang_scheduler,
                scheduler_name=opts.scheduler_name,
                max_replicas=opts.max_replicas,
                namespaces=list(opts.namespaces),
                service_mode=opts.service_mode,
                cluster_domain=opts.cluster_domain,
                api_groups=opts.api_groups,
                progress=self.progress_injection,
            ),
            clock=opts.controller_clock,
        )
        await self.controller.start(sync_timeout=30)
        self.crons = CronController(
            self.kube, CronControllerConfig(api_groups=opts.api_groups), clock=opts.controller_clock
        )
        await asyncio.wait_for(self.crons.start(), 30)

    async def start_progress(self) -> None:
        cert_dir = self.cluster.workdir / "progress-certs"
        bundle = generate_bundle(["localhost"], ["127.0.0.1"])
        write_cert_dir(cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        self.progress = ProgressServer(
            self.kube,
            Routes.for_groups(self.options.api_groups),
            choose(self._progress_cache, ApiLookup(self.kube)),
            ReloadingTLS(cert_dir),
            host="127.0.0.1",
            port=0,
            interval=self.options.progress_interval,
            clock=self.options.progress_clock or self.options.controller_clock or SYSTEM_CLOCK,
        )
        await self.progress.start()
        url = f"https://127.0.0.1:{self.progress.port}"
        self.progress_injection = ProgressInjection(url, bundle.ca.cert_pem.decode())

    def _progress_cache(self) -> Cache | None:
        controller = self.controller
        return controller.cache if controller is not None and controller.synced else None

    async def apply(self, job: Obj, namespace: str | None = None) -> Obj:
        """Create a job (or any kubetrain kind) through the API server, webhooks included."""
        ns = namespace or (job.get("metadata") or {}).get("namespace") or "default"
        return await self.kube.create(job_resource(str(job.get("kind"))), job, namespace=ns)

    async def stop(self) -> None:
        if self.gang_simulator is not None:
            await self.gang_simulator.stop()
            self.gang_simulator = None
        if self.simulator is not None:
            await self.simulator.stop()
            self.simulator = None
        if self.crons is not None:
            await self.crons.stop()
            self.crons = None
        if self.progress is not None:
            await self.progress.stop()
            self.progress = None
        if self.controller is not None:
            await self.controller.stop()
            self.controller = None
        if self.policy_watcher is not None:
            await self.policy_watcher.stop()
            self.policy_watcher = None
        if self.webhook is not None:
            await self.webhook.stop()
            self.webhook = None
        if self.client is not None:
            await self.client.close()
            self.client = None
        await self.cluster.stop()
