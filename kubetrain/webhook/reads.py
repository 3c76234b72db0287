"""The reviews that need the API read first: a scale-subresource review (the job being scaled)
and a TrainJob or training-runtime review (the runtime a TrainJob names, or the TrainJobs naming
a runtime being deleted). The readers are the I/O; the decisions are
kubetrain.webhook.validate.validate_scale and kubetrain.webhook.trainer.validate_trainer.

```python
review, answer, result = await answer_scale(review, job_reader, max_replicas=1000, executor=pool)
review, answer, result = await answer_trainer(review, trainer_reader, policies)
```

A reader that fails (or is missing) gives a denial with code 500 asking for a retry, never an
HTTP error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from kubetrain.webhook.decider import decide_guarded, encode
from kubetrain.webhook.policies import PolicyAdmission
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse
from kubetrain.webhook.trainer import TrainerFacts, TrainerReader, validate_trainer
from kubetrain.webhook.validate import validate_scale

log = logging.getLogger("kubetrain.webhook.server")

# Reads the job a scale-subresource review is about (None when it does not exist).
JobReader = Callable[[AdmissionRequest], Awaitable[dict[str, Any] | None]]
Answer = tuple[AdmissionRequest, bytes, str]


def _read_failed(review: AdmissionRequest, message: str) -> Answer:
    return encode(review, AdmissionResponse.deny(review.uid, message, code=500, reason="InternalError"))


async def answer_scale(
    review: AdmissionRequest, job_reader: JobReader | None, *, max_replicas: int, executor: Executor | None
) -> Answer:
    if job_reader is None:
        return _read_failed(review, "the kubetrain webhook has no API client to read the job being scaled")
    try:
        job = await job_reader(review)
    except Exception as exc:
        log.warning(
            "validate: cannot read %s/%s for its scale review: %s", review.namespace, review.name, exc
        )
        return _read_failed(
            review, f"cannot read the job to check the scale change: {type(exc).__name__}; retry"
        )

    def decide(request: AdmissionRequest) -> AdmissionResponse:
        return validate_scale(request, job, max_replicas=max_replicas)

    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        executor, lambda: encode(review, decide_guarded(review, "validate", decide))
    )


async def answer_trainer(
    review: AdmissionRequest, trainer_reader: TrainerReader | None, policies: PolicyAdmission | None
) -> Answer:
    """A TrainJob (its runtime read first) or a runtime DELETE (its TrainJobs listed first)."""
    if trainer_reader is None:
        facts = TrainerFacts()
    else:
        try:
            facts = await trainer_reader(review)
        except Exception as exc:
            log.warning("validate: cannot read what %s %s needs: %s", review.kind, review.name, exc)
            return _read_failed(
                review,
                f"cannot read the runtime or TrainJobs to check this {review.kind}: "
                f"{type(exc).__name__}; retry",
            )
    return encode(review, decide_guarded(review, "validate", lambda r: validate_trainer(r, facts, policies)))
