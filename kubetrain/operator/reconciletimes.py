"""What one reconcile's duration is made of, as histograms next to
`kubetrain_reconcile_duration_seconds` (whose meaning is unchanged: the whole reconcile).

    with RequestTimes.recording() as times:
        ...decide, apply...
    observe_reconcile(kind, total_seconds, times)

`kubetrain_reconcile_rate_limiter_wait_seconds`: wall-clock time at least one of the reconcile's
API requests waited for the client-side rate limiter (`--qps`/`--burst`): by design, the price
of a bounded request rate. `kubetrain_reconcile_api_wait_seconds`: time at least one was in
flight while none waited — the API server's answer (and the network). The rest,
`kubetrain_reconcile_own_duration_seconds`: the decision (also alone in
`kubetrain_reconcile_plan_duration_seconds`), the operator's own work between requests, and
its turns waiting for the event loop. Each reconcile observes all three (0 when a part is absent),
so their counts equal the reconcile count.
"""

from __future__ import annotations

from kubetrain.kube.requesttimes import RequestTimes
from kubetrain.serving.metrics import (
    RECONCILE_API_WAIT,
    RECONCILE_DURATION,
    RECONCILE_OWN_DURATION,
    RECONCILE_RATE_LIMITER_WAIT,
)


def observe_reconcile(kind: str, total: float, times: RequestTimes) -> None:
    """Observe one reconcile of `total` seconds whose requests were recorded in `times`."""
    limiter = min(times.limiter_seconds(), total)
    api = min(times.api_seconds(), total - limiter)
    RECONCILE_DURATION.labels(kind=kind).observe(total)
    RECONCILE_RATE_LIMITER_WAIT.labels(kind=kind).observe(limiter)
    RECONCILE_API_WAIT.labels(kind=kind).observe(api)
    RECONCILE_OWN_DURATION.labels(kind=kind).observe(max(0.0, total - limiter - api))
