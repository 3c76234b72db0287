"""The training-progress endpoint: Kubeflow Trainer's status server for every job kind.

    POST /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status
    Authorization: Bearer <the pod's projected token, audience <group>/<version>/…/status>
    {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600,
                       "metrics": [{"name": "loss", "value": "0.31"}], "lastUpdatedTime": "…"}}

HTTPS with the operator's certificate (a `ReloadingTLS`, shared with the webhook), connection
limits of `kubetrain.serving.guard`. Every report is checked (`authz.py`: a TokenReview for the
job's audience — answers cached per token, reviews.py —, then the token's pod in the
operator's view), limited per job and coalesced (`coalesce.py`), then answered at once: the
write of `status.trainerStatus` — a JSON merge patch of that field only on the status
subresource, no resourceVersion, so it never conflicts with the reconciler's writes — happens
at most once per job per interval in the background. `lastUpdatedTime` is the time the
operator received the report (pods' clocks are not trusted: stall detection reads it).

Answers: 200 (the report, as accepted), 400 (not JSON), 401, 403, 404, 409 (see authz.py), 405
(not POST), 413 (body over 64 KiB), 422 (a field out of range, over 256 metrics), 429 (the job's
rate limit; Retry-After), 503 (the API server cannot be reached, or the job's last write failed;
Retry-After). Error bodies are metav1.Status objects, as Trainer's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubetrain.api import trainerstatus as ts
from kubetrain.certs.tls import ReloadingTLS
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.resources import TOKEN_REVIEWS, ResourceRef
from kubetrain.progress import authz
from kubetrain.progress.coalesce import Coalescer
from kubetrain.progress.lookup import Lookup, Routes
from kubetrain.progress.reviews import ReviewCache
from kubetrain.serving.guard import ConnectionGuard, ConnectionLimits
from kubetrain.serving.metrics import STATUS_REPORT_DURATION

log = logging.getLogger(__name__)

WRITE_CONCURRENCY = 16
REVIEW_CONCURRENCY = 32  # TokenReviews in flight at once (a burst of new pods queues here)
MAX_WAITING_REVIEWS = 512  # more waiting than this: 503 at once, the reporter retries later
RETRY_AFTER_UNAVAILABLE = 5
REASON_REPORTING = "ProgressReporting"


@dataclass(frozen=True)
class Target:
    ref: ResourceRef
    namespace: str
    name: str
    job: dict[str, Any]  # the job as seen when the report was accepted (for events)
    first: bool  # the job had no trainerStatus yet


def _status(code: int, reason: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code, headers=headers)


class _Unavailable(Exception):
    pass


class ProgressServer:
    def __init__(
        self,
        client: KubeClient,
        routes: Routes,
        lookup: Callable[[], Lookup],
        tls: ReloadingTLS,
        *,
        host: str = "0.0.0.0",
        port: int = 10443,
        clock: Clock = SYSTEM_CLOCK,
        interval: float = 5.0,
        recorder: EventRecorder | None = None,
        limits: ConnectionLimits | None = None,
        manage_tls: bool = True,
    ) -> None:
        self.client = client
        self.routes = routes
        self.lookup = lookup
        self.tls = tls
        self.manage_tls = manage_tls  # False: another server (the webhook) starts and stops it
        self.host = host
        self.port = port
        self.clock = clock
        self.coalescer = Coalescer(clock, interval=interval)
        self.reviews = ReviewCache(clock)
        self._refreshing: set[tuple[str, str]] = set()  # reviews being refreshed in the background
        self.recorder = recorder or EventRecorder(client, clock=clock)
        self.guard = ConnectionGuard(limits or ConnectionLimits(max_connections=2048))
        self._runner: web.AppRunner | None = None
        self._writer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._writes = asyncio.Semaphore(WRITE_CONCURRENCY)
        self._reviews = asyncio.Semaphore(REVIEW_CONCURRENCY)
        self._waiting_reviews = 0

    # ---- lifecycle ----------------------------------------------------------------------------
    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=ts.MAX_BODY_BYTES + 1, middlewares=[self.guard.middleware])
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def start(self) -> None:
        if self.manage_tls:
            await self.tls.start()
        self._runner, self.port = await self.guard.serve(
            self.build_app(), self.host, self.port, ssl_context=self.tls.ssl_context, backlog=1024
        )
        self._writer = asyncio.create_task(self._write_loop(), name="progress writes")
        log.info("training-progress endpoint on https://%s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None
        await self.flush()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.recorder.flush()
        if self.manage_tls:
            await self.tls.stop()

    @property
    def ready(self) -> bool:
        return self._runner is not None and self.tls.loaded

    # ---- requests -----------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        try:
            response = await self._handle(request)
            code = response.status
            return response
        except _Unavailable as exc:
            code = 503
            return _status(503, "ServiceUnavailable", str(exc), {"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
        finally:
            STATUS_REPORT_DURATION.labels(str(code)).observe(time.perf_counter() - started)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        route = ts.parse_path(request.path)
        ref = None if route is None else self.routes.get(route.group, route.version, route.plural)
        if route is None or ref is None:
            return _status(404, "NotFound", f"no training-progress endpoint at {request.path}")
        if request.method != "POST":
            return _status(405, "MethodNotAllowed", "reports are POSTed", {"Allow": "POST"})
        token = authz.bearer_token(request.headers.get("Authorization"))
        if token is None:
            refusal = authz.unauthenticated()
            return _status(refusal.code, refusal.reason, refusal.message, {"WWW-Authenticate": "Bearer"})
        if (request.content_length or 0) > ts.MAX_BODY_BYTES:
            return self._too_large()
        lookup = self.lookup()
        job = await self._call(lookup.job(ref, route.namespace, route.name))
        title = f'{ref.plural}.{ref.group} "{route.name}"'
        if job is None:
            return _status(404, "NotFound", f"{title} not found")
        claim = authz.pod_claim(await self._review(token, route.audience), route.audience)
        if isinstance(claim, authz.Refusal):
            return _status(claim.code, claim.reason, claim.message)
        pod = await self._call(lookup.pod(route.namespace, claim.name))
        denied = authz.admit(job, f"{ref.kind} {route.namespace}/{route.name}", claim, pod)
        if denied is not None:
            return _status(denied.code, denied.reason, denied.message)
        key = f"{ref.group}/{ref.plural}/{route.namespace}/{route.name}"
        wait = self.coalescer.admit(key, lookup.pod_count(route.namespace, route.name))
        if wait is not None:
            retry = str(max(1, int(wait + 0.999)))
            return _status(429, "TooManyRequests", f"too many reports for {title}", {"Retry-After": retry})
        raw = await self._read_body(request)
        if raw is None:
            return self._too_large()
        report = ts.parse_report(raw)
        if isinstance(report, ts.ReportError):
            reason = "BadRequest" if report.code == 400 else "Invalid"
            return _status(report.code, reason, report.message)
        if report is None:
            return web.json_response({})
        report["lastUpdatedTime"] = self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        first = not (job.get("status") or {}).get("trainerStatus")
        self.coalescer.offer(key, Target(ref, route.namespace, route.name, job, first), report)
        self._wake.set()
        if self.coalescer.failing(key):
            raise _Unavailable(f"the status of {title} cannot be written now; the report is kept")
        return web.json_response({"trainerStatus": report})

    @staticmethod
    def _too_large() -> web.Response:
        return _status(413, "RequestEntityTooLarge", f"the body is over {ts.MAX_BODY_BYTES} bytes")

    async def _read_body(self, request: web.Request) -> bytes | None:
        data = bytearray()
        async with asyncio.timeout(self.guard.limits.body_timeout):
            while True:
                chunk = await request.content.read(16384)
                if not chunk:
                    return bytes(data)
                data += chunk
                if len(data) > ts.MAX_BODY_BYTES:
                    return None

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except ApiError as err:
            if err.is_retryable:
                raise _Unavailable(f"the API server cannot be reached: {err}") from None
            raise
        except (OSError, TimeoutError) as err:
            raise _Unavailable(f"the API server cannot be reached: {err}") from None

    async def _review(self, token: str, audience: str) -> dict[str, Any]:
        cached = self.reviews.get(token, audience)
        if cached is not None:
            status, stale = cached
            key = ReviewCache.key(token, audience)
            if stale and key not in self._refreshing:  # answer now, refresh in the background
                self._refreshing.add(key)
                task = asyncio.create_task(self._fresh_review(token, audience))
                task.add_done_callback(lambda t: self._refreshed(key, t))
            return status
        return await self._fresh_review(token, audience)

    def _refreshed(self, key: tuple[str, str], task: asyncio.Task[dict[str, Any]]) -> None:
        self._refreshing.discard(key)
        if not task.cancelled() and task.exception() is not None:  # the cached answer stays
            log.debug("background TokenReview failed: %s", task.exception())

    async def _fresh_review(self, token: str, audience: str) -> dict[str, Any]:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [audience]},
        }
        if self._waiting_reviews >= MAX_WAITING_REVIEWS:
            raise _Unavailable("too many reports of new pods at once; retry in a few seconds")
        self._waiting_reviews += 1
        try:
            async with self._reviews:
                answer = await self._call(self.client.create(TOKEN_REVIEWS, body))
        finally:
            self._waiting_reviews -= 1
        status: dict[str, Any] = dict(answer.get("status") or {})
        self.reviews.put(token, audience, status)
        return status

    # ---- writes -------------------------------------------------------------------------------
    async def _write_loop(self) -> None:
        while True:
            items, wait = self.coalescer.due()
            for key, target, report in items:
                await self._writes.acquire()
                task = asyncio.create_task(self._write(key, target, report))
                task.add_done_callback(lambda _: self._writes.release())
            self._wake.clear()
            if wait is None:
                await self._wake.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)

    async def flush(self) -> None:
        """Write every pending report now, whatever the interval (stop, tests)."""
        for state in self.coalescer.jobs.values():
            state.last_write = None
        items, _ = self.coalescer.due()
        await asyncio.gather(*(self._write(key, target, report) for key, target, report in items))

    async def _write(self, key: str, target: Target, report: dict[str, Any]) -> None:
        patch = {"status": {"trainerStatus": {name: report.get(name) for name in ts.FIELDS}}}
        try:
            await self.client.patch_status(target.ref, target.namespace, target.name, patch)
        except ApiError as err:
            if err.is_not_found:
                self.coalescer.result(key, True)
                return
            log.warning("progress of %s not written: %s", key, err)
            self.coalescer.result(key, False)
            return
        except (OSError, TimeoutError) as err:
            log.warning("progress of %s not written: %s", key, err)
            self.coalescer.result(key, False)
            return
        first = target.first and not self.coalescer.written(key)
        self.coalescer.result(key, True)
        if first:
            percent = report.get("progressPercentage")
            detail = f" ({percent}%)" if percent is not None else ""
            self.recorder.emit(
                target.job,
                "Normal",
                REASON_REPORTING,
                f"The training code started reporting progress{detail}.",
            )
