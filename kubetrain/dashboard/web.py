"""What every dashboard handler shares: the application's parts, the user's API view, rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from kubetrain.dashboard.access import AccessCache
from kubetrain.dashboard.views.auth import SESSION_COOKIE, Credentials, Sessions
from kubetrain.dashboard.views.kinds import JobKind, url_segment
from kubetrain.dashboard.views.timeutil import format_stamp, format_time, short_duration
from kubetrain.dashboard.watch import JobWatch
from kubetrain.dashboard.whoami import WhoAmI
from kubetrain.kube.asuser import AsUser
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.serving.guard import ConnectionGuard

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@dataclass
class DashboardConfig:
    auth_mode: str = "token"  # views.auth.AUTH_MODES
    user_header: str = "X-Forwarded-User"
    groups_header: str = "X-Forwarded-Groups"
    tls: bool = False  # served over HTTPS: the session cookie is Secure
    sse_heartbeat: float = 15.0


@dataclass
class Dashboard:
    """The parts of a running dashboard (one per application)."""

    config: DashboardConfig
    watch: JobWatch
    user_base: KubeClient  # the API server, with no credentials (token mode) or the dashboard's (proxy mode)
    sessions: Sessions
    access: AccessCache
    clock: Clock = SYSTEM_CLOCK
    whoami: WhoAmI = field(default_factory=WhoAmI)
    templates: jinja2.Environment = field(init=False)

    def __post_init__(self) -> None:
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["time"] = format_time
        self.templates.filters["duration"] = short_duration
        self.templates.filters["stamp"] = format_stamp
        self.templates.globals["job_url"] = self.job_url

    @property
    def kinds(self) -> list[JobKind]:
        return self.watch.served

    def job_url(self, kind: JobKind, namespace: str, name: str, tail: str = "") -> str:
        from urllib.parse import quote

        url = (
            f"/namespaces/{quote(namespace, safe='')}/{url_segment(self.kinds, kind)}/{quote(name, safe='')}"
        )
        return url + tail

    def now(self) -> float:
        return self.clock.now().timestamp()


DASHBOARD = web.AppKey("dashboard", Dashboard)
GUARD = web.AppKey("kubetrain.dashboard.guard", ConnectionGuard)
CREDS = web.RequestKey("kubetrain.dashboard.creds", Credentials)


def dashboard(request: web.Request) -> Dashboard:
    return request.app[DASHBOARD]


def creds(request: web.Request) -> Credentials:
    return request[CREDS]


async def posted_form(request: web.Request) -> dict[str, str]:
    """The form posted, read within the connection limits' body timeout (HTTP 408 past it and the
    connection closed: a client sending its body a byte at a time cannot hold a connection)."""
    posted = await request.app[GUARD].read_body(request, request.post)
    return {k: str(v) for k, v in posted.items()}


def user_api(request: web.Request) -> AsUser:
    return AsUser(dashboard(request).user_base, creds(request).headers())


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    dash = dashboard(request)
    user = request.get(CREDS)
    context.setdefault("user", user.display if user else "")
    context.setdefault("csrf", dash.sessions.csrf_token(user) if user else "")
    context.setdefault("auth_mode", dash.config.auth_mode)
    context.setdefault(
        "session_login", user is not None and bool(user.token) and SESSION_COOKIE in request.cookies
    )
    html = dash.templates.get_template(template).render(**context)
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")
