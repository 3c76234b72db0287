"""The dashboard's HTTP server: routes, security headers, who the request acts as.

    server = await DashboardServer.connect(kubeconfig, host="127.0.0.1", port=8080)
    await server.start(); server.url; ...; await server.stop()

Every page carries a strict Content-Security-Policy (scripts and styles only from /static, no
inline script or style), `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin` and
`Cache-Control: no-store`. A request without credentials gets the login page (HTML) or 401;
credentials the API server refuses (401) end the session. The access log names method, path and
status only — never a header, a cookie or a token.

Connections get the limits of kubetrain.serving.guard (`LIMITS`, or the server's `limits`): a TLS
handshake and a request head within 10 s, the next request within 60 s of a response, at most
512 connections (more are closed at once). Neither deadline runs while a handler runs, so the
live-update and log-follow streams last as long as the browser keeps them open.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from aiohttp import web
from aiohttp.log import access_logger

from kubetrain.dashboard import actions, pages, streams
from kubetrain.dashboard.access import AccessCache
from kubetrain.dashboard.views.auth import LOCAL, PROXY, SESSION_COOKIE, Sessions, credentials
from kubetrain.dashboard.views.kinds import JobKind
from kubetrain.dashboard.watch import JobWatch
from kubetrain.dashboard.web import (
    CREDS,
    CSP,
    DASHBOARD,
    GUARD,
    HERE,
    Dashboard,
    DashboardConfig,
    render,
    user_api,
)
from kubetrain.dashboard.whoami import WhoAmI
from kubetrain.kube.asuser import anonymous_client
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.serving.guard import ConnectionGuard, ConnectionLimits

SHUTDOWN_SECONDS = 1.0  # what open requests (streams) get to finish when the server stops
# The webhook port's limits: a TLS handshake and a request head within 10 s (asyncio's handshake
# default is 60 s; aiohttp has no head deadline), the next head within 60 s of a response, at most
# 512 connections. A browser holds up to 6 per origin (a live-update stream per open page).
LIMITS = ConnectionLimits(header_timeout=10.0, idle_timeout=60.0, max_connections=512)
log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PUBLIC = ("/static/", "/login", "/healthz", "/favicon.ico")
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tfs'


STARTED = web.RequestKey("kubetrain.dashboard.started", float)


@web.middleware
async def timing(request: web.Request, handler: Handler) -> web.StreamResponse:
    request[STARTED] = time.perf_counter()
    return await handler(request)


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every response, streams included, as it is sent: the security headers, and how long the
    server took until then (`Server-Timing: app;dur=<ms>`)."""
    headers = response.headers
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "same-origin")
    headers.setdefault("X-Frame-Options", "DENY")
    if not request.path.startswith("/static/"):
        headers.setdefault("Cache-Control", "no-store")
    started = request.get(STARTED)
    if started is not None:
        headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith(PUBLIC):
        return await handler(request)
    dash = request.app[DASHBOARD]
    session = (
        dash.sessions.open(request.cookies.get(SESSION_COOKIE, ""))
        if SESSION_COOKIE in request.cookies
        else ""
    )
    found = credentials(
        dash.config.auth_mode, request.headers, session, dash.config.user_header, dash.config.groups_header
    )
    if found is None:
        return await _unauthenticated(request)
    request[CREDS] = found
    try:
        if not found.user or found.local:  # a token, or the kubeconfig: ask who it is
            name = await dash.whoami.name(user_api(request), found)
            if name:
                request[CREDS] = replace(found, user=name)
        return await handler(request)
    except ApiError as err:
        if err.status == 401:
            return await _unauthenticated(
                request, "The API server no longer accepts your credentials; sign in again."
            )
        log.warning("dashboard: %s %s: API error %s %s", request.method, request.path, err.status, err.reason)
        return render(request, "error.html", status=502, title="The API server failed", message=err.message)


@web.middleware
async def html_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A page a browser asks for that is not there (an unknown path, or a job resource not
    served) is the error page, with the header and a link back to the list, not a bare text."""
    try:
        return await handler(request)
    except web.HTTPNotFound as err:
        wants_html = "text/html" in request.headers.get("Accept", "")
        if request.method != "GET" or not wants_html or request.path.startswith(PUBLIC):
            raise
        said = err.text if err.text and err.text != "404: Not Found" else ""
        message = said or f"There is no dashboard page at {request.path}."
        return render(request, "error.html", status=404, title="Page not found", message=message)


async def _unauthenticated(request: web.Request, why: str = "") -> web.StreamResponse:
    if request.method == "GET" and "text/html" in request.headers.get("Accept", "text/html"):
        response = await actions.login_form(request, why, 401 if why else 200)
        if why:
            response.del_cookie(SESSION_COOKIE, path="/")
        return response
    return web.json_response({"error": why or "credentials required"}, status=401)


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def favicon(request: web.Request) -> web.Response:
    return web.Response(status=204)


def build_app(dash: Dashboard, guard: ConnectionGuard) -> web.Application:
    """The dashboard's routes under `guard`: its middleware first (it stops the head deadline
    before any other work of the request); forms are read within its body timeout."""
    app = web.Application(
        middlewares=[guard.middleware, timing, authenticate, html_not_found], client_max_size=2 * 1024 * 1024
    )
    app[GUARD] = guard
    app.on_response_prepare.append(security_headers)
    app[streams.STREAMS] = set()
    app.on_shutdown.append(streams.close_streams)
    app[DASHBOARD] = dash
    job = "/namespaces/{namespace}/{resource}/{name}"
    app.router.add_get("/", pages.job_list)
    app.router.add_get(job, pages.job_page)
    app.router.add_post(job + "/suspend", actions.suspend)
    app.router.add_post(job + "/resume", actions.resume)
    app.router.add_get(job + "/delete", actions.confirm_delete)
    app.router.add_post(job + "/delete", actions.delete)
    app.router.add_get(job + "/logs/{pod}/follow", streams.follow_log)
    app.router.add_get("/submit", actions.submit_form)
    app.router.add_post("/submit", actions.submit)
    app.router.add_get("/stream", streams.job_changes)
    app.router.add_get("/login", actions.login_form)
    app.router.add_post("/login", actions.login)
    app.router.add_post("/logout", actions.logout)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_static("/static/", HERE / "static", append_version=True)
    return app


class DashboardServer:
    def __init__(
        self,
        client: KubeClient,
        user_base: KubeClient,
        kinds: list[JobKind],
        *,
        config: DashboardConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 8080,
        ssl_context: ssl.SSLContext | None = None,
        session_key: bytes | None = None,
        clock: Clock | None = None,
        owns_clients: bool = False,
        limits: ConnectionLimits = LIMITS,
    ) -> None:
        self.config = config or DashboardConfig(tls=ssl_context is not None)
        self.watch = JobWatch(client, kinds, clock=clock)
        self.dashboard = Dashboard(
            self.config,
            self.watch,
            user_base,
            Sessions(session_key),
            AccessCache(clock=clock),
            clock or SYSTEM_CLOCK,
            WhoAmI(clock=clock),
        )
        self.client = client
        self.user_base = user_base
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.guard = ConnectionGuard(limits)
        self._owns_clients = owns_clients
        self._runner: web.AppRunner | None = None
        self.app = build_app(self.dashboard, self.guard)

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None,
        kinds: list[JobKind],
        *,
        config: DashboardConfig | None = None,
        qps: float = 100.0,
        burst: int = 200,
        **kwargs: object,
    ) -> DashboardServer:
        """The dashboard's own client (informers; proxy mode's impersonating calls) and, in token
        mode, a credential-less one for the users' calls."""
        client = await KubeClient.connect(kubeconfig, qps=qps, burst=burst)
        mode = (config or DashboardConfig()).auth_mode
        user_base = (
            client if mode in (PROXY, LOCAL) else await anonymous_client(kubeconfig, qps=qps, burst=burst)
        )
        return cls(client, user_base, kinds, config=config, owns_clients=True, **kwargs)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/"

    async def start(self, sync_timeout: float = 30.0) -> None:
        await self.watch.start(sync_timeout)
        # Live-update and log-follow streams never end on their own: on stop they are cancelled
        # after SHUTDOWN_SECONDS instead of aiohttp's 60 s each (Ctrl-C of `kubetrain dev` with
        # a page open).
        self._runner, self.port = await self.guard.serve(
            self.app,
            self.host,
            self.port,
            ssl_context=self.ssl_context,
            runner_options={
                "access_log": access_logger,
                "access_log_format": ACCESS_LOG_FORMAT,
                "handler_cancellation": True,
                "shutdown_timeout": SHUTDOWN_SECONDS,
            },
        )

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.watch.stop()
        if self._owns_clients:
            if self.user_base is not self.client:
                await self.user_base.close()
            await self.client.close()
