"""The training-progress endpoint in `kubetrain run` / `kubetrain controller` (the flags, and
`ProgressRuntime`, which starts the server next to the controller and tells the planner what
to inject into pods).

```python
progress = ProgressRuntime(args, tls=webhook.server.tls)    # tls: share the webhook's certificate
controller = ControllerRuntime(args)
controller.progress = progress.injection()                 # env + token volume + CA ConfigMap
await controller.start(health); await progress.start(health, controller)
...
await progress.stop()
```

- `--status-server-port` (default 0: not served; the chart's is 10443), `--status-server-host`;
- `--status-server-url https://HOST:PORT`: the base URL pods are given (default: none, and
  then nothing is injected into pods — the global opt-out); the chart sets its Service;
- the certificate: the webhook's (`--cert-dir`, any `--cert-mode`) in `kubetrain run`,
  `--status-server-cert-dir` otherwise; its `ca.crt` is what pods verify the server with;
- `--status-server-interval`: seconds between two writes of one job's status (default 5);
- `--status-server-process`: serve it from a child process (`kubetrain status-server`, kept
  running by kubetrain.serving.children) with its own API client and informers, so that reports
  — however many, from however hostile a pod — never take this process's CPU from admission
  reviews, /healthz and reconciles; the child's counters and histograms are added to this
  process's /metrics. The chart turns it on.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kubetrain.api.errors import QUOTE
from kubetrain.api.trainerstatus import CA_FILE
from kubetrain.certs.tls import ReloadingTLS
from kubetrain.commands._flags import _port
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import KubeClient
from kubetrain.operator.progressenv import ProgressInjection
from kubetrain.operator.runtime import ControllerRuntime
from kubetrain.progress.lookup import ApiLookup, Routes, choose
from kubetrain.progress.server import ProgressServer
from kubetrain.serving.children import ChildProcesses
from kubetrain.serving.health import HealthServer

log = logging.getLogger(__name__)


def _url(value: str) -> str:
    if value and not value.startswith("https://"):
        raise argparse.ArgumentTypeError(
            f"{QUOTE.encode(value)} must be an https:// URL (pods verify the server's certificate)"
        )
    return value.rstrip("/")


def _seconds(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} is not a number of seconds") from None
    if not 0 < n < 3600:
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} must be between 0 and 3600 seconds")
    return n


def add_progress_flags(parser: argparse.ArgumentParser, *, served_only: bool = False) -> None:
    """The endpoint's flags; `served_only`: only those of serving it (`kubetrain status-server`),
    not what pods are told (`--status-server-url`) or where it runs (`--status-server-process`)."""
    g = parser.add_argument_group("training-progress endpoint")
    g.add_argument(
        "--status-server-port",
        type=_port,
        default=0,
        help="HTTPS port of the training-progress endpoint (default 0: not served; the chart "
        "uses 10443, Kubeflow Trainer's port)",
    )
    g.add_argument("--status-server-host", metavar="ADDRESS", default="0.0.0.0", help=argparse.SUPPRESS)
    g.add_argument(
        "--status-server-cert-dir",
        metavar="DIR",
        default=None,
        help="tls.crt, tls.key and ca.crt of the endpoint (default: the webhook's --cert-dir)",
    )
    g.add_argument(
        "--status-server-interval",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="at most one status write per job per this many seconds (default 5)",
    )
    if served_only:
        return
    g.add_argument(
        "--status-server-url",
        type=_url,
        default="",
        metavar="https://HOST:PORT",
        help="the endpoint's URL as pods reach it (the Service in front of this process); jobs' "
        "pods get KUBEFLOW_TRAINER_SERVER_URL/_CA_CERT/_TOKEN and a projected token for it "
        "(default: none, nothing is injected)",
    )
    g.add_argument(
        "--status-server-process",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="serve the endpoint from a child process of its own (`kubetrain status-server`), so "
        "reports never compete with admission reviews and reconciles for this process's CPU "
        "(default: off; the chart turns it on)",
    )


def child_argv(args: argparse.Namespace, cert_dir: Path) -> list[str]:
    """The `kubetrain status-server` command line of the child, from the parent's flags."""
    argv = [
        sys.executable,
        "-m",
        "kubetrain.cli",
        "status-server",
        f"--status-server-host={args.status_server_host}",
        f"--status-server-port={args.status_server_port}",
        f"--status-server-cert-dir={cert_dir}",
        f"--status-server-interval={args.status_server_interval}",
        f"--api-groups={','.join(args.api_groups)}",
        f"--namespaces={','.join(args.namespaces)}",
        f"--qps={args.qps}",
        f"--burst={args.burst}",
        "--metrics-bind-address=127.0.0.1",
        "--metrics-port=0",
        f"--log-level={args.log_level}",
    ]
    if args.kubeconfig:
        argv.append(f"--kubeconfig={args.kubeconfig}")
    return argv


class ProgressRuntime:
    def __init__(self, args: argparse.Namespace, *, tls: ReloadingTLS | None = None) -> None:
        self.args = args
        cert_dir = args.status_server_cert_dir or getattr(args, "cert_dir", None)
        self.cert_dir = Path(cert_dir) if cert_dir else None
        self.own_tls = tls is None
        if tls is None and self.cert_dir is not None:
            tls = ReloadingTLS(self.cert_dir)
        self.tls = tls
        self.server: ProgressServer | None = None
        self.child: ChildProcesses | None = None
        self.client: KubeClient | None = None
        self._controller: ControllerRuntime | None = None

    @property
    def serving(self) -> bool:
        return self.args.status_server_port != 0 and self.tls is not None

    def injection(self) -> ProgressInjection | None:
        """What pods get (None: no URL configured, or no CA to give them)."""
        if not self.args.status_server_url:
            return None
        ca = self.cert_dir / CA_FILE if self.cert_dir is not None else None
        if ca is None or not ca.is_file():
            log.error(
                "--status-server-url is set but %s has no %s: pods are not told about the endpoint",
                self.cert_dir,
                CA_FILE,
            )
            return None
        return ProgressInjection(self.args.status_server_url, ca.read_text())

    def _cache(self) -> Cache | None:
        runtime = self._controller
        controller = None if runtime is None else runtime.controller
        if controller is None or not controller.synced:
            return None
        if runtime is not None and runtime.elector is not None and not runtime.elector.is_leader:
            return None
        return controller.cache

    def _ca_changed(self, _: bytes) -> None:
        runtime = self._controller
        if runtime is not None and runtime.controller is not None:
            runtime.controller.planner_config.progress = self.injection()

    async def start(self, health: HealthServer | None, controller: ControllerRuntime) -> None:
        self._controller = controller
        if not self.serving:
            log.info("no training-progress endpoint (--status-server-port 0 or no certificate directory)")
            return
        assert self.tls is not None
        self.tls.on_reload(self._ca_changed)
        if self.args.status_server_process and self.cert_dir is not None:
            await self._start_child(health)
            return
        self.client = await KubeClient.connect(self.args.kubeconfig, qps=self.args.qps, burst=self.args.burst)
        routes = Routes.for_groups(self.args.api_groups)
        self.server = ProgressServer(
            self.client,
            routes,
            choose(self._cache, ApiLookup(self.client)),
            self.tls,
            host=self.args.status_server_host,
            port=self.args.status_server_port,
            interval=self.args.status_server_interval,
            manage_tls=self.own_tls,
        )
        await self.server.start()
        if health is not None:
            health.add_readiness_check(
                "progress-endpoint", lambda: self.server is not None and self.server.ready
            )

    async def _start_child(self, health: HealthServer | None) -> None:
        assert self.cert_dir is not None
        self.child = ChildProcesses(child_argv(self.args, self.cert_dir), 1, name="status server")
        if self.own_tls:  # in `kubetrain run` the webhook watches the directory already
            assert self.tls is not None
            await self.tls.start()
        await self.child.start()
        log.info("training-progress endpoint: a child process on port %d", self.args.status_server_port)
        if health is not None:
            health.add_metrics_peers(self.child.metrics_sockets)
            health.add_readiness_check("progress-endpoint", health.peers_ready(self.child.metrics_sockets, 1))

    async def stop(self) -> None:
        if self.child is not None:
            await self.child.stop()
            self.child = None
            if self.own_tls and self.tls is not None:
                await self.tls.stop()
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self.client is not None:
            await self.client.close()
            self.client = None
