"""`kubetrain dashboard`: the web dashboard as its own process (docs/operations.md, "Dashboard")."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import ssl
from pathlib import Path
from typing import Any

from kubetrain.api.groups import KUBETRAIN_GROUP
from kubetrain.commands._flags import LOG_LEVELS, _port, api_groups_arg
from kubetrain.commands._process import ConfigError, run_service, stop_on_signals
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.auth import (
    AUTH_MODES,
    DEFAULT_GROUPS_HEADER,
    DEFAULT_USER_HEADER,
    LOCAL,
    TOKEN,
)
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.web import DashboardConfig

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not args.tls_cert_file and not args.tls_key_file:
        return None
    if not (args.tls_cert_file and args.tls_key_file):
        raise ConfigError("--tls-cert-file and --tls-key-file go together (a certificate and its key)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.tls_cert_file, args.tls_key_file)
    return context


def _session_key(args: argparse.Namespace) -> bytes | None:
    if not args.session_key_file:
        return None
    key = Path(args.session_key_file).read_bytes().strip()
    if len(key) != 44:
        raise ConfigError(
            f"--session-key-file {args.session_key_file}: expected a Fernet key (44 base64 characters)"
        )
    return key


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    if args.auth == LOCAL and not is_loopback(args.host):
        raise ConfigError(
            f"--auth local acts as the kubeconfig's user: it serves only loopback, not --host {args.host}"
        )
    tls = _tls(args)
    config = DashboardConfig(
        auth_mode=args.auth,
        user_header=args.user_header,
        groups_header=args.groups_header,
        tls=tls is not None,
    )
    server = await DashboardServer.connect(
        args.kubeconfig,
        served_kinds(args.api_groups),
        config=config,
        host=args.host,
        port=args.port,
        ssl_context=tls,
        session_key=_session_key(args),
    )
    with stop_on_signals(stop):
        try:
            await server.start()
            log.info("dashboard serving on %s (auth mode %s)", server.url, args.auth)
            print(f"kubetrain dashboard: {server.url}", flush=True)
            await stop.wait()
        finally:
            await server.stop()


def run(args: argparse.Namespace) -> int:
    return run_service(args, serve, log, "the dashboard")


def add_dashboard_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("dashboard")
    g.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)",
    )
    g.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    g.add_argument(
        "--port", type=_port, default=8080, help="port to serve on (default 8080; 0: any free port)"
    )
    g.add_argument(
        "--api-groups",
        type=api_groups_arg,
        default=[KUBETRAIN_GROUP],
        metavar="GROUP[,GROUP]",
        help="job groups to list: kubetrain.io (default), kubeflow.org, or both",
    )
    g.add_argument(
        "--auth",
        choices=AUTH_MODES,
        default=TOKEN,
        help="who API calls act as: token (the user's bearer token: Authorization header or the "
        "login form; default), proxy (an authenticating proxy's identity headers, by "
        "impersonation), local (the kubeconfig's user; loopback only)",
    )
    g.add_argument(
        "--user-header",
        default=DEFAULT_USER_HEADER,
        help=f"--auth proxy: the header naming the user (default {DEFAULT_USER_HEADER})",
    )
    g.add_argument(
        "--groups-header",
        default=DEFAULT_GROUPS_HEADER,
        help=f"--auth proxy: the comma-separated groups header (default {DEFAULT_GROUPS_HEADER})",
    )
    g.add_argument("--tls-cert-file", metavar="PATH", help="serve HTTPS with this certificate (PEM)")
    g.add_argument("--tls-key-file", metavar="PATH", help="the certificate's private key (PEM)")
    g.add_argument(
        "--session-key-file",
        metavar="PATH",
        help="Fernet key sealing the login cookie (default: a new key per process, so sessions "
        "end on restart; set one to share sessions between replicas)",
    )
    g.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="log level (default info)")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="serve the web dashboard (jobs, pod timelines, logs, events, progress)",
        description="Serve the kubetrain web dashboard: every job at a glance, each job's pods as a "
        "timeline, logs, events and progress plots. Every API call is made with the user's own "
        "credentials (see --auth).",
    )
    add_dashboard_flags(parser)
    parser.set_defaults(func=run)
