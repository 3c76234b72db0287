"""`kubetrain status-server`: the training-progress endpoint alone (docs/operations.md,
"Training progress").

`kubetrain run --status-server-process` (the chart's default) starts it as a child; it can also
run as a Deployment of its own. It needs no leader Lease: every replica checks reports against
its own informers (the served job kinds and their pods) and writes only `status.trainerStatus`
with merge patches, which never conflict. The operator exports the progress gauges from the
jobs' status, whichever process wrote it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Any

from kubetrain.certs.tls import ReloadingTLS
from kubetrain.commands._flags import add_process_flags, add_scope_flags
from kubetrain.commands._metrics import metrics_server
from kubetrain.commands._process import ConfigError, run_service, stop_on_signals
from kubetrain.commands._progress import add_progress_flags
from kubetrain.kube.client import KubeClient
from kubetrain.progress.lookup import Routes
from kubetrain.progress.server import ProgressServer
from kubetrain.progress.watch import ProgressWatch

log = logging.getLogger(__name__)


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    if not args.status_server_cert_dir:
        raise ConfigError("kubetrain status-server needs --status-server-cert-dir (tls.crt, tls.key, ca.crt)")
    if not args.status_server_port:
        raise ConfigError("kubetrain status-server needs --status-server-port (the chart's is 10443)")
    health = await metrics_server(args)
    client = await KubeClient.connect(args.kubeconfig, qps=args.qps, burst=args.burst)
    routes = Routes.for_groups(args.api_groups)
    watch = ProgressWatch(client, routes, namespaces=args.namespaces or None)
    server = ProgressServer(
        client,
        routes,
        watch.lookup,
        ReloadingTLS(Path(args.status_server_cert_dir)),
        host=args.status_server_host,
        port=args.status_server_port,
        interval=args.status_server_interval,
    )
    health.add_readiness_check("progress-endpoint", lambda: server.ready and watch.synced)
    with stop_on_signals(stop):
        await health.start()
        try:
            watch.start()
            await server.start()
            await stop.wait()
            log.info("stopping")
        finally:
            await server.stop()
            await watch.stop()
            await client.close()
            await health.stop()


def run(args: argparse.Namespace) -> int:
    return run_service(args, serve, log, "the training-progress endpoint")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status-server",
        help="run the training-progress endpoint alone (what --status-server-process starts)",
        description="Serve the training-progress endpoint (Kubeflow Trainer's status server) for "
        "the job kinds of --api-groups: pods report with their projected token, reports are "
        "checked by TokenReview against the pod and the job, and written to status.trainerStatus.",
    )
    add_process_flags(parser.add_argument_group("cluster and process"))
    add_scope_flags(parser.add_argument_group("jobs"))
    add_progress_flags(parser, served_only=True)
    parser.set_defaults(func=run)
