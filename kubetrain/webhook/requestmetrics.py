"""controller-runtime's webhook series for the admission and conversion paths.

    app = web.Application(middlewares=[instrumented(("/mutate", "/validate", "/convert")), ...])

As controller-runtime's `InstrumentedHook` (pkg/webhook/internal/metrics/metrics.go) wraps each
webhook handler in promhttp's `InstrumentHandlerDuration`, `InstrumentHandlerCounter` and
`InstrumentHandlerInFlight`: per request to one of `paths` (label `webhook`: the URL path the API
server calls), `controller_runtime_webhook_requests_in_flight` is up while it is answered,
`controller_runtime_webhook_requests_total{code}` counts its HTTP status code and
`controller_runtime_webhook_latency_seconds` observes the time to answer it. The middleware is
outermost, so a request refused before its handler (429: too many bodies in flight) counts too.
Codes 200 and 500 of each path are present from the start (at 0), as upstream initialises them.
A request whose client went away before the answer (the handler cancelled) counts in no code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import Counter, Gauge, Histogram

from kubetrain.serving.crmetrics import WEBHOOK_IN_FLIGHT, WEBHOOK_LATENCY, WEBHOOK_REQUESTS

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class _PathSeries:
    """One path's series, looked up once: a request then pays no label lookup (a code other
    than 200 and 500 is looked up when it first occurs, then kept)."""

    path: str
    in_flight: Gauge
    latency: Histogram
    by_code: dict[int, Counter]

    def requests(self, code: int) -> Counter:
        counter = self.by_code.get(code)
        if counter is None:
            counter = self.by_code[code] = WEBHOOK_REQUESTS.labels(self.path, str(code))
        return counter


def _path_series(path: str) -> _PathSeries:
    return _PathSeries(
        path=path,
        in_flight=WEBHOOK_IN_FLIGHT.labels(path),
        latency=WEBHOOK_LATENCY.labels(path),
        by_code={code: WEBHOOK_REQUESTS.labels(path, str(code)) for code in (200, 500)},
    )


def instrumented(paths: Iterable[str]) -> Middleware:
    """An aiohttp middleware keeping the webhook series of requests to `paths`."""
    served = {path: _path_series(path) for path in paths}

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        series = served.get(request.path)
        if series is None:
            return await handler(request)
        in_flight = series.in_flight
        in_flight.inc()
        started = time.perf_counter()
        code = 500  # an exception other than an HTTP one: aiohttp answers 500
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        except asyncio.CancelledError:
            code = -1  # no answer was sent
            raise
        finally:
            in_flight.dec()
            if code != -1:
                series.requests(code).inc()
                series.latency.observe(time.perf_counter() - started)

    return middleware
