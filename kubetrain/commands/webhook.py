"""`kubetrain webhook`: the admission webhook server alone (docs/behaviour.md §2, §3, §10).

`WebhookRuntime` is what `kubetrain run` embeds next to the controller:

```python
runtime = WebhookRuntime.from_args(args)     # the flags of kubetrain.commands._flags
await runtime.start(health)                  # registers the "webhook-certs" readiness check
...
await runtime.stop()
```
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from kubetrain.api.gangschedulers import defaults_min_available
from kubetrain.certs.kubeapi import KubeClientCertApi
from kubetrain.certs.selfmanaged import SelfManagedCertificates
from kubetrain.commands._flags import add_common_flags, add_webhook_flags
from kubetrain.commands._metrics import metrics_server
from kubetrain.commands._process import ConfigError, run_service, stop_on_signals
from kubetrain.frameworks.checks import listing
from kubetrain.frameworks.registry import conversion_crd_names, known_kinds
from kubetrain.kube.client import KubeClient
from kubetrain.kube.resources import job_resources_in
from kubetrain.policy import PolicyIndex
from kubetrain.serving.health import HealthServer
from kubetrain.webhook.jobreader import kube_job_reader
from kubetrain.webhook.policies import PolicyAdmission, PolicyWatcher
from kubetrain.webhook.review import AdmissionRequest
from kubetrain.webhook.server import WebhookServer
from kubetrain.webhook.trainer import TrainerFacts
from kubetrain.webhook.trainerreader import kube_trainer_reader
from kubetrain.webhook.workers import WebhookWorkers

log = logging.getLogger(__name__)


class WebhookRuntime:
    """The webhook server plus, in self-managed mode, the certificate manager."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.server = WebhookServer(
            cert_dir=args.cert_dir,
            host=args.webhook_host,
            port=args.webhook_port,
            gang_scheduling=defaults_min_available(args.gang_scheduler),
            max_replicas=args.max_replicas_per_job,
            max_body_bytes=args.webhook_max_request_bytes,
            reuse_port=args.webhook_reuse_port or args.webhook_workers > 1,
            review_processes=args.webhook_review_processes,
            review_time_limit=args.webhook_review_time_limit,
        )
        # --webhook-workers N: N-1 more processes on the same port (kubetrain.webhook.workers).
        self.workers = WebhookWorkers(args, args.webhook_workers - 1) if args.webhook_workers > 1 else None
        self.certs: SelfManagedCertificates | None = None
        # TrainingPolicies (docs/behaviour.md §9): fed by watches, consulted on every review.
        self.policy_watcher: PolicyWatcher | None = None
        self._kube: KubeClient | None = None
        self._connect_lock = asyncio.Lock()
        if getattr(args, "training_policies", False):
            self.server.policies = PolicyAdmission(
                PolicyIndex(), gang_scheduling=defaults_min_available(args.gang_scheduler)
            )
        if args.cert_mode == "self-managed" and not args.webhook_namespace:
            raise ConfigError("--cert-mode self-managed needs --webhook-namespace (or $POD_NAMESPACE)")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> WebhookRuntime:
        return cls(args)

    async def start(self, health: HealthServer | None = None) -> None:
        if health is not None:
            health.add_readiness_check("webhook-certs", self.server.certificates_loaded)
            if self.workers is not None:  # one /metrics for every process on the webhook port
                health.add_metrics_peers(self.workers.metrics_sockets)
        # The job of a scale-subresource review is read through the API client (connected on
        # first use when neither the policies nor the certificates need it earlier).
        self.server.job_reader = self._read_job
        self.server.trainer_reader = self._read_for_trainer
        if self.server.policies is not None:
            self._kube = await KubeClient.connect(self.args.kubeconfig)
            groups = getattr(self.args, "api_groups", None) or ("kubetrain.io",)
            self.policy_watcher = PolicyWatcher(
                self._kube,
                self.server.policies.index,
                job_resources=job_resources_in(groups).values(),  # tenant quotas count these
                namespaces=getattr(self.args, "namespaces", None) or (),
            )
            # Not ready before both caches are synced: a review must never miss a policy.
            if health is not None:
                health.add_readiness_check("training-policies", lambda: self._policies_synced())
            await self.policy_watcher.start(wait=False)
        await self.server.start()
        if self.args.cert_mode == "self-managed":
            if self._kube is None:
                self._kube = await KubeClient.connect(self.args.kubeconfig)
            self.certs = SelfManagedCertificates(
                KubeClientCertApi(self._kube),
                namespace=self.args.webhook_namespace,
                secret_name=self.args.cert_secret,
                service=self.args.webhook_service,
                cert_dir=self.args.cert_dir,
                mutating_config=self.args.mutating_webhook_config,
                validating_config=self.args.validating_webhook_config,
                conversion_crds=conversion_crd_names(getattr(self.args, "api_groups", None) or ()),
                extra_dns=self.args.cert_extra_dns,
                extra_ips=self.args.cert_extra_ip,
                cluster_domain=self.args.cluster_domain,
                on_update=self.server.tls.reload,
            )
            await self.certs.start()
        if self.workers is not None:
            await self.workers.start()

    async def _read_job(self, request: AdmissionRequest) -> dict[str, Any] | None:
        async with self._connect_lock:
            if self._kube is None:
                self._kube = await KubeClient.connect(self.args.kubeconfig)
        return await kube_job_reader(self._kube)(request)

    async def _read_for_trainer(self, request: AdmissionRequest) -> TrainerFacts:
        async with self._connect_lock:
            if self._kube is None:
                self._kube = await KubeClient.connect(self.args.kubeconfig)
        return await kube_trainer_reader(self._kube)(request)

    def _policies_synced(self) -> bool:
        return self.policy_watcher is not None and self.policy_watcher.has_synced

    async def stop(self) -> None:
        if self.workers is not None:
            await self.workers.stop()
        if self.certs is not None:
            await self.certs.stop()
        await self.server.stop()
        if self.policy_watcher is not None:
            await self.policy_watcher.stop()
            self.policy_watcher = None
        if self._kube is not None:
            await self._kube.close()
            self._kube = None


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or `stop` is set), then shut down gracefully."""
    stop = stop or asyncio.Event()
    health = await metrics_server(args)
    runtime = WebhookRuntime.from_args(args)
    with stop_on_signals(stop):
        await health.start()
        try:
            await runtime.start(health)
            await stop.wait()
            log.info("stopping the webhook")
        finally:
            await runtime.stop()
            await health.stop()


def run(args: argparse.Namespace) -> int:
    return run_service(args, serve, log, "the webhook")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "webhook",
        help="serve the mutating and validating admission webhooks (HTTPS /mutate, /validate)",
        description="Serve the kubetrain admission webhooks: defaulting (/mutate) and validation "
        f"(/validate) of {listing(known_kinds())}, over HTTPS (TLS 1.2+), with /metrics, /healthz "
        "and /readyz on --metrics-port.",
    )
    add_common_flags(parser)
    add_webhook_flags(parser)
    parser.set_defaults(func=run)
