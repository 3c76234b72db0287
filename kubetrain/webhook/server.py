"""The admission webhook HTTPS server: `/mutate`, `/validate`, `/convert` (MPIJob's CRD
conversion webhook), `/healthz`, `/readyz`.

```python
server = WebhookServer(cert_dir="/tmp/kubetrain/certs", host="0.0.0.0", port=9443,
                       gang_scheduling=True)
await server.start()        # server.port is the bound port (port=0 picks a free one)
server.ready                # True once a certificate is loaded (what /readyz reports)
server.tls.reload()         # re-check the certificate directory now (it is also polled)
await server.stop()
```

Pass `tls=ReloadingTLS(...)` instead of `cert_dir` to share one certificate source (the
self-managed certificate manager writes into the directory the ReloadingTLS follows).

Every answer to a well-formed AdmissionReview is HTTP 200 with an AdmissionReview (a denial is
`allowed: false`, never an HTTP error). A request that is not one — wrong method, wrong content
type, a body over `max_body_bytes`, invalid JSON, wrong apiVersion/kind, no `request.uid` — is
answered HTTP 400 with a plain-text message. An object nested deeper than MAX_NESTING_DEPTH, or
a map with more than MAX_OBJECT_MEMBERS fields, is denied as a field error naming the path. An
unexpected failure while deciding is logged with its traceback and answered as a denial with
status code 500 in a well-formed AdmissionReview, so the client never sees a traceback. `dryRun`
requests get the same answer as real ones: deciding has no side effects. Every request is timed
in `kubetrain_webhook_request_duration_seconds`.

Hostile or huge reviews cannot starve the process (docs/operations.md, "Threat model"):
- the body is limited to `max_body_bytes` (default 7 MiB: kube-apiserver accepts objects up to
  3 MiB and an UPDATE review carries the object and the old object) and must arrive within
  `limits.body_timeout`; the bodies being read at once are limited to `max_inflight_bytes` in
  total (a request past it gets HTTP 429);
- a review over PROCESS_BYTES (256 KiB) is decoded, decided and encoded in one of
  `review_processes` worker processes (kubetrain.webhook.processes: time limit, then HTTP 503;
  bounded queue, then HTTP 429 with Retry-After), one over 64 KiB that kubetrain.webhook.tiers
  does not keep inline — or any, with `review_processes=0` — in a thread pool (`review_threads`),
  not on the event loop that also serves /healthz, the controller and leader election; the
  rest (up to 64 KiB, or up to 96 KiB with at most 4,096 objects and lists) is decided inline
  (bounded to milliseconds; a thread hand-off would cost more CPU than the review). The work
  per review is bounded (validation stops after a fixed number of errors; messages and
  warnings are capped);
- connections get header, idle and body deadlines and are capped in number
  (kubetrain.serving.guard); an upload the client aborts is logged once at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from kubetrain.api.errors import QUOTE
from kubetrain.certs.tls import ReloadingTLS
from kubetrain.frameworks import mpiconversion
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS
from kubetrain.serving.guard import ConnectionGuard, ConnectionLimits, abort_later
from kubetrain.serving.metrics import WEBHOOK_REQUEST_DURATION
from kubetrain.webhook.body import BodyReader
from kubetrain.webhook.decider import Decider, review_marks
from kubetrain.webhook.mutate import is_job_kind
from kubetrain.webhook.policies import PolicyAdmission
from kubetrain.webhook.processes import MAX_QUEUE, PROCESS_BYTES, TIME_LIMIT, ReviewProcesses
from kubetrain.webhook.quietgc import decided_without_collections
from kubetrain.webhook.reads import Answer, JobReader, answer_scale, answer_trainer
from kubetrain.webhook.refusals import Refusal, refuse
from kubetrain.webhook.requestmetrics import instrumented
from kubetrain.webhook.review import AdmissionRequest, BadReview
from kubetrain.webhook.tiers import INLINE_MAX_BYTES, decided_inline
from kubetrain.webhook.trainer import TrainerReader, needs_read

log = logging.getLogger(__name__)

__all__ = ["JobReader", "WebhookServer"]

# kube-apiserver refuses object writes over 3 MiB; an UPDATE review carries two such objects.
MAX_BODY_BYTES = 7 * 1024 * 1024
MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
REVIEW_THREADS = 4
# The paths the API server calls (kubetrain.webhook.configurations): the `webhook` label of
# controller-runtime's webhook series (kubetrain.webhook.requestmetrics).
WEBHOOK_PATHS = ("/mutate", "/validate", "/convert")
JSON_CONTENT_TYPES = frozenset({"application/json"})


def _send(request: web.Request, refusal: Refusal) -> web.Response:
    """The HTTP answer of a refusal. With `close`, the connection is closed after it: the unread
    rest of the body is not drained (aiohttp would otherwise keep reading it to reuse the
    connection). With `abort`, a client that stalled or overfilled the server, which may never
    read the answer nor finish the TLS shutdown, has its connection aborted
    `serving.guard.ABORT_GRACE` seconds after the answer (`abort_later`)."""
    if refusal.abort:
        abort_later(request)
    response = web.Response(status=refusal.status, text=refusal.text, headers=refusal.headers or None)
    if refusal.close:
        response.force_close()
    return response


def _check_content_type(request: web.Request) -> None:
    if request.content_type not in JSON_CONTENT_TYPES:
        raise BadReview(
            "Content-Type must be application/json, got "
            f"{QUOTE.encode(request.content_type) if request.content_type else 'none'}"
        )


class WebhookServer:
    """aiohttp HTTPS server answering AdmissionReview v1 for every job kind."""

    def __init__(
        self,
        *,
        cert_dir: str | None = None,
        tls: ReloadingTLS | None = None,
        host: str = "0.0.0.0",
        port: int = 9443,
        gang_scheduling: bool = False,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_inflight_bytes: int = MAX_INFLIGHT_BYTES,
        cert_poll_interval: float = 2.0,
        policies: PolicyAdmission | None = None,
        max_replicas: int = DEFAULT_MAX_REPLICAS,
        limits: ConnectionLimits | None = None,
        review_threads: int = REVIEW_THREADS,
        reuse_port: bool = False,
        job_reader: JobReader | None = None,
        trainer_reader: TrainerReader | None = None,
        review_processes: int = 0,
        review_time_limit: float = TIME_LIMIT,
        review_queue: int = MAX_QUEUE,
    ) -> None:
        if tls is None:
            if cert_dir is None:
                raise ValueError("WebhookServer needs cert_dir or tls")
            tls = ReloadingTLS(cert_dir, poll_interval=cert_poll_interval)
        self.tls = tls
        self.host = host
        self.port = port
        self.gang_scheduling = gang_scheduling
        self.max_body_bytes = max_body_bytes
        self.max_inflight_bytes = max(max_inflight_bytes, max_body_bytes)
        self.policies = policies  # TrainingPolicy defaults and limits (kubetrain.webhook.policies)
        self.max_replicas = max_replicas
        self.guard = ConnectionGuard(limits)
        self.review_threads = review_threads
        self.reuse_port = reuse_port  # several processes serving one port (--webhook-workers)
        self.job_reader = job_reader  # for scale-subresource reviews
        self.trainer_reader = trainer_reader  # for TrainJob and runtime DELETE reviews
        self.bodies = BodyReader(
            max_body_bytes=max_body_bytes,
            max_inflight_bytes=max_inflight_bytes,
            timeout=self.guard.limits.body_timeout,
        )
        self._executor: ThreadPoolExecutor | None = None
        # Reviews over PROCESS_BYTES go to worker processes (kubetrain.webhook.processes).
        self.processes = (
            ReviewProcesses(review_processes, time_limit=review_time_limit, max_queue=review_queue)
            if review_processes > 0
            else None
        )
        self._runner: web.AppRunner | None = None

    @property
    def ready(self) -> bool:
        """Serving: the server is listening and a certificate is loaded."""
        return self._runner is not None and self.tls.loaded

    def certificates_loaded(self) -> bool:
        """Readiness check for a HealthServer (`add_readiness_check("webhook-certs", ...)`)."""
        return self.tls.loaded

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"https://{host}:{self.port}"

    def build_app(self) -> web.Application:
        # Bodies are read (and limited) by hand so that an oversized one gets a clear 400.
        app = web.Application(
            client_max_size=self.max_body_bytes + 1,
            middlewares=[instrumented(WEBHOOK_PATHS), self.guard.middleware],
        )
        app.router.add_post("/mutate", self._handle_mutate)
        app.router.add_post("/validate", self._handle_validate)
        app.router.add_post("/convert", self._handle_convert)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    def decider(self) -> Decider:
        """What a decision needs, as configured now (sent along with a review to a process)."""
        return Decider(self.gang_scheduling, self.max_replicas, self.policies)

    async def _handle_mutate(self, request: web.Request) -> web.Response:
        return await self._review(request, "mutate")

    async def _handle_validate(self, request: web.Request) -> web.Response:
        return await self._review(request, "validate")

    async def _handle_convert(self, request: web.Request) -> web.Response:
        """The CRD conversion webhook of mpijobs.kubeflow.org (kubetrain.frameworks.mpiconversion): a
        ConversionReview in, its answer out; 400 for a body that is not one."""
        try:
            _check_content_type(request)
            answer = mpiconversion.answer(await self._read_body(request))
        except mpiconversion.BadConversionReview as exc:
            return self._refuse_convert(request, BadReview(str(exc)))
        except Exception as exc:
            return self._refuse_convert(request, exc)
        return web.Response(body=answer, content_type="application/json")

    def _refuse_convert(self, request: web.Request, exc: Exception) -> web.Response:
        refusal = refuse(exc, what="ConversionReview", max_inflight_bytes=self.max_inflight_bytes)
        if refusal is None:
            raise exc
        if refusal.status == 400:
            log.info("convert: %s", refusal.log_line(request.remote))
        return _send(request, refusal)

    async def _read_body(self, request: web.Request) -> bytes:
        content = request.content
        if content.is_eof():  # the whole body is buffered already: nothing to wait for
            return self.bodies.take(request.content_length, content.read_nowait)
        return await self.bodies.read(request.content_length, content.read)

    async def _answer_scale(self, review: AdmissionRequest) -> Answer:
        return await answer_scale(
            review, self.job_reader, max_replicas=self.max_replicas, executor=self._executor
        )

    def _observe(self, webhook: str, operation: str, kind: str, result: str, started: float) -> None:
        WEBHOOK_REQUEST_DURATION.labels(webhook, operation, kind, result).observe(
            time.perf_counter() - started
        )

    async def _decode_and_decide(self, body: bytes, webhook: str) -> Answer:
        # One pass over the bytes for the tier and the shape proof (kubetrain.webhook.shapebound).
        marks = review_marks(body) if len(body) <= INLINE_MAX_BYTES else None
        if decided_inline(body, marks):
            decider = self.decider()
            return decided_without_collections(lambda: decider.answer(body, webhook, marks))
        if self.processes is not None and len(body) > PROCESS_BYTES:
            review, answer, result = await self.processes.answer(body, webhook, self.decider())
            if answer:
                return review, answer, result
            # A scale review (the worker sent back no object): decode it here, then read the job.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.decider().answer, body, webhook, marks)

    async def _review(self, request: web.Request, webhook: str) -> web.Response:
        started = time.perf_counter()
        body = b""
        try:
            _check_content_type(request)
            body = await self._read_body(request)
            review, answer, result = await self._decode_and_decide(body, webhook)
            if not answer:
                if needs_read(review):
                    review, answer, result = await answer_trainer(review, self.trainer_reader, self.policies)
                else:
                    review, answer, result = await self._answer_scale(review)
        except Exception as exc:
            refusal = refuse(
                exc,
                max_inflight_bytes=self.max_inflight_bytes,
                max_queue=self.processes.max_queue if self.processes else 0,
                time_limit=self.processes.time_limit if self.processes else 0,
                body_bytes=len(body),
            )
            if refusal is None:
                raise
            self._observe(webhook, "", "", refusal.result, started)
            log.log(refusal.log_level, "%s: %s", webhook, refusal.log_line(request.remote))
            return _send(request, refusal)
        kind = review.kind if is_job_kind(review.kind) else "other"
        self._observe(webhook, review.operation, kind, result, started)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s %s %s %s/%s uid=%s dryRun=%s -> %s",
                webhook,
                review.operation,
                review.kind,
                review.namespace,
                review.name,
                review.uid,
                review.dry_run,
                result,
            )
        return web.Response(body=answer, content_type="application/json")

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.tls.loaded:
            return web.Response(text="ok")
        return web.Response(status=503, text=f"no serving certificate loaded from {self.tls.cert_dir}\n")

    async def start(self) -> None:
        if self._runner is not None:
            return
        await self.tls.start()
        self._executor = ThreadPoolExecutor(self.review_threads, thread_name_prefix="kubetrain-review")
        app = self.build_app()
        if self.processes is not None:
            await self.processes.start()
        self._runner, self.port = await self.guard.serve(
            app,
            self.host,
            self.port,
            ssl_context=self.tls.ssl_context,
            reuse_address=True,
            reuse_port=self.reuse_port or None,
        )
        log.info(
            "webhook serving /mutate and /validate on https://%s:%d (certificate %s)",
            self.host,
            self.port,
            "loaded" if self.tls.loaded else "not loaded yet",
        )

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if self.processes is not None:
            await self.processes.stop()
        await self.tls.stop()

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
