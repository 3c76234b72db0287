"""Which HTTP answer a request gets when it is not answered with an AdmissionReview: the
decision, apart from the server that sends it.

```python
refusal = refuse(exc, max_inflight_bytes=..., max_queue=4, time_limit=10.0)
# None: not a refusal (let the exception propagate)
refusal.status, refusal.text, refusal.result      # 400/408/429/503, the body, the metric label
refusal.close                # close the connection after answering (the rest is not drained)
refusal.abort                # also abort it shortly after (the client stalled or overfilled us)
refusal.headers              # e.g. Retry-After
refusal.log_line("10.0.0.7")  # what to log (at refusal.log_level), naming the client
```
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kubetrain.webhook.body import Aborted, TooBusy
from kubetrain.webhook.processes import PoolBusy, ReviewFailed, ReviewTimedOut
from kubetrain.webhook.review import BadReview


@dataclass(frozen=True)
class Refusal:
    status: int
    text: str
    result: str  # the kubetrain_webhook_request_duration_seconds result label
    log_level: int
    log_message: str
    close: bool = True
    abort: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def log_line(self, remote: str | None) -> str:
        return self.log_message.replace("{remote}", str(remote), 1)


def refuse(
    exc: BaseException,
    *,
    what: str = "AdmissionReview",
    max_inflight_bytes: int = 0,
    max_queue: int = 0,
    time_limit: float = 0.0,
    body_bytes: int = 0,
) -> Refusal | None:
    """The answer to a request whose handling raised `exc`; `what` names the kind of review."""
    if isinstance(exc, BadReview):
        return Refusal(
            400,
            f"bad {what} request: {exc}\n",
            "bad_request",
            logging.INFO,
            "400 Bad Request from {remote}: " + str(exc),
        )
    if isinstance(exc, TooBusy):
        return Refusal(
            429,
            "too many large requests in flight; retry\n",
            "busy",
            logging.WARNING,
            f"429 from {{remote}}: request bodies in flight exceed {max_inflight_bytes} bytes",
            abort=True,
        )
    if isinstance(exc, PoolBusy):
        return Refusal(
            429,
            "too many large reviews queued; retry\n",
            "busy",
            logging.WARNING,
            f"429 to {{remote}}: every review process is busy and {max_queue} large reviews are queued",
            close=False,
            headers={"Retry-After": "1"},
        )
    if isinstance(exc, ReviewTimedOut | ReviewFailed):
        failure = (
            f"was not decided within {time_limit:g}s"
            if isinstance(exc, ReviewTimedOut)
            else "could not be decided: its review process died"
        )
        return Refusal(
            503,
            f"the {what} {failure}\n",
            "error",
            logging.ERROR,
            f"503 to {{remote}}: a review of {body_bytes} bytes {failure}",
        )
    if isinstance(exc, Aborted):
        return Refusal(
            408,
            "the request body was not received in time\n",
            "aborted",
            logging.DEBUG,
            "{remote} did not send its whole request body (" + str(exc) + ")",
            abort=True,
        )
    return None
