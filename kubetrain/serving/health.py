"""Operations endpoint: `/metrics`, `/healthz`, `/readyz` (docs/behaviour.md §10).

```python
health = HealthServer(host="0.0.0.0", port=8080)
health.add_readiness_check("informers-synced", lambda: informers.synced)
health.add_readiness_check("webhook-certs", webhook.certificates_loaded)
await health.start()          # health.port is the bound port (useful with port=0)
...
await health.stop()
```

A check is a callable taking no argument and returning `bool` or an awaitable of `bool`;
an exception counts as a failure (its message is shown, never a traceback). `/readyz`
answers 200 `ok` when every readiness check passes and 503 otherwise; with `?verbose` (as
kube-apiserver does) it lists each check as `[+]name ok` / `[-]name failed: reason`.
`/healthz` works the same with the liveness checks (none by default: a process that can
answer is alive). `/metrics` serves the prometheus_client text exposition of
`kubetrain.serving.metrics.REGISTRY` (or the registry given).

Plain HTTP by default. With `tls` (a `ServingTLS`: `kubetrain.certs.tls.ReloadingTLS`) the port serves HTTPS
(TLS ≥ 1.2, hot-reloaded certificate; readiness check `metrics-certs`), and with `auth` (a
`kubetrain.serving.auth.MetricsAuthorizer`) every /metrics request must carry a bearer token
whose user may `get` the non-resource URL `/metrics`: 401/403/500 answers are kube `Status`
bodies. /healthz, /livez and /readyz stay unauthenticated: the kubelet probes them without a
token. `on_stop` callables (awaitables) run after the server stopped (the API client of `auth`).

`unix_path` serves the same app on a Unix socket too (a `--webhook-workers` child, so that the
parent can read it); `add_metrics_peers(paths)` makes /metrics add the counters and histograms
those sockets' /metrics show (kubetrain.serving.merge), each read within 2 s or left out.

Connections get the limits of kubetrain.serving.guard (TLS handshake, header and idle deadlines, a
connection cap; `ConnectionGuard.serve`, as the webhook), so that a client holding connections
open, or a TLS handshake unfinished, cannot exhaust the port the kubelet probes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Protocol

import aiohttp
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kubetrain.serving.auth import MetricsAuthorizer
from kubetrain.serving.guard import ConnectionGuard, ConnectionLimits
from kubetrain.serving.merge import MergedRegistry
from kubetrain.serving.metrics import REGISTRY

log = logging.getLogger(__name__)


class ServingTLS(Protocol):
    """A serving certificate that reloads itself (`kubetrain.certs.tls.ReloadingTLS`)."""

    ssl_context: ssl.SSLContext

    @property
    def loaded(self) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


Check = Callable[[], "bool | Awaitable[bool]"]
PEER_TIMEOUT = 2.0


async def run_check(check: Check) -> tuple[bool, str]:
    """Run one check; returns (passed, reason). Exceptions become failures with their message."""
    try:
        result = check()
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # a failing check must never break the endpoint
        return False, f"{type(exc).__name__}: {exc}"
    return (True, "ok") if result else (False, "not ready")


async def render_checks(request: web.Request, checks: dict[str, Check]) -> web.Response:
    """The kube-apiserver style answer of /healthz or /readyz for `checks`."""
    lines: list[str] = []
    failed: list[str] = []
    for name, check in list(checks.items()):
        ok, reason = await run_check(check)
        if ok:
            lines.append(f"[+]{name} ok")
        else:
            failed.append(name)
            lines.append(f"[-]{name} failed: {reason}")
    verbose = "verbose" in request.query
    if failed:
        body = "\n".join(lines) + f"\n{request.path[1:]} check failed: {', '.join(failed)}\n"
        return web.Response(status=503, text=body)
    text = "\n".join([*lines, f"{request.path[1:]} check passed"]) + "\n" if verbose else "ok"
    return web.Response(status=200, text=text)


class HealthServer:
    """aiohttp app on one port (plain HTTP, or HTTPS with `tls`) with /metrics, /healthz and /readyz."""

    def __init__(
        self,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        registry: CollectorRegistry = REGISTRY,
        limits: ConnectionLimits | None = None,
        reuse_port: bool = False,
        tls: ServingTLS | None = None,
        auth: MetricsAuthorizer | None = None,
        on_stop: list[Callable[[], Awaitable[None]]] | None = None,
        unix_path: str | None = None,
    ) -> None:
        self.host = host
        self.unix_path = unix_path
        self._peers: list[Callable[[], list[str]]] = []
        self.tls = tls
        self.auth = auth
        self._on_stop = list(on_stop or [])
        self.guard = ConnectionGuard(limits or ConnectionLimits(max_connections=128))
        self.reuse_port = reuse_port
        self.port = port
        self.registry = registry
        self._readiness: dict[str, Check] = {}
        self._liveness: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None

    def add_readiness_check(self, name: str, fn: Check) -> None:
        """Register (or replace) a named readiness check shown on /readyz."""
        self._readiness[name] = fn

    def hold_until_started(self) -> Callable[[], None]:
        """A readiness check `started` that fails until the returned function is called. A
        command whose parts register their own checks as they start calls this before
        `start()` and the function once the last part has started: without it, a probe between
        two starts sees only the checks registered so far (none, at first), all passing."""
        starting = [True]
        self.add_readiness_check("started", lambda: not starting)
        return starting.clear

    def remove_readiness_check(self, name: str) -> None:
        self._readiness.pop(name, None)

    def add_metrics_peers(self, paths: Callable[[], list[str]]) -> None:
        """/metrics adds what the HealthServers on these Unix sockets count (read per scrape);
        each call adds a source (webhook workers, the status-server child)."""
        self._peers.append(paths)

    def peers_ready(self, paths: Callable[[], list[str]], count: int) -> Check:
        """A readiness check: `count` HealthServers on these Unix sockets answer /readyz 200
        (a child process that runs but does not serve yet is not ready)."""

        async def check() -> bool:
            found = paths()
            answers = await asyncio.gather(*(self._peer_text(p, "/readyz") for p in found))
            return len(found) >= count and all(a is not None for a in answers)

        return check

    async def _peer_text(self, path: str, url_path: str = "/metrics") -> str | None:
        try:
            timeout = aiohttp.ClientTimeout(total=PEER_TIMEOUT)
            async with (
                aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=path), timeout=timeout) as session,
                session.get(f"http://localhost{url_path}") as resp,
            ):
                return await resp.text() if resp.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.debug("%s of %s not read: %s", url_path, path, exc)  # e.g. a worker restarting
            return None

    def add_liveness_check(self, name: str, fn: Check) -> None:
        """Register (or replace) a named liveness check shown on /healthz."""
        self._liveness[name] = fn

    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024, middlewares=[self.guard.middleware])
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.auth is not None:
            verdict = await self.auth.check(request.headers.get("Authorization"), "/metrics", "get")
            if verdict.body is not None:
                return web.Response(
                    status=verdict.code, text=json.dumps(verdict.body), content_type="application/json"
                )
        registry = self.registry
        peers = [path for source in self._peers for path in source()]
        if peers:
            texts = await asyncio.gather(*(self._peer_text(p) for p in peers))
            registry = MergedRegistry(self.registry, [t for t in texts if t is not None])
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        return await render_checks(request, self._liveness)

    async def _readyz(self, request: web.Request) -> web.Response:
        return await render_checks(request, self._readiness)

    async def start(self) -> None:
        if self._runner is not None:
            return
        ssl_context = None
        if self.tls is not None:
            await self.tls.start()
            self.add_readiness_check("metrics-certs", lambda: self.tls is not None and self.tls.loaded)
            ssl_context = self.tls.ssl_context
        runner, self.port = await self.guard.serve(
            self.build_app(),
            self.host,
            self.port,
            ssl_context=ssl_context,
            reuse_port=self.reuse_port or None,
        )
        if self.unix_path is not None:
            await web.UnixSite(runner, self.unix_path).start()
        self._runner = runner
        log.info(
            "serving /metrics%s, /healthz and /readyz on %s://%s:%d",
            " (bearer token, TokenReview + SubjectAccessReview)" if self.auth is not None else "",
            self.scheme,
            self.host,
            self.port,
        )

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self.tls is not None:
            await self.tls.stop()
        hooks, self._on_stop = self._on_stop, []
        for hook in hooks:
            await hook()

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
