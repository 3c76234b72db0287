"""One admission decision from the raw body to the encoded answer, the same in every process.

`Decider` holds what a decision needs — the gang-scheduling flag, the replica limit and the
TrainingPolicy state (`PolicyAdmission`, whose index is plain data) — and nothing tied to the
process (no sockets, no event loop), so it can be pickled to a review process
(kubetrain.webhook.processes) as well as used on the event loop or in a thread.

```python
decider = Decider(gang_scheduling=True, max_replicas=1000, policies=admission)
review, answer, result = decider.answer(body, "validate")   # raises BadReview
```

`answer` is the encoded AdmissionReview (bytes); it is empty for a scale review to /validate,
which needs the job read from the API first (the server does that).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.policies import PolicyAdmission
from kubetrain.webhook.review import (
    AdmissionRequest,
    AdmissionResponse,
    decode_review,
    encode_review,
)
from kubetrain.webhook.shapebound import structure_marks, within_shape_limits
from kubetrain.webhook.shapelimits import MAX_NESTING_DEPTH, MAX_OBJECT_MEMBERS, shape_problem
from kubetrain.webhook.sharedtemplates import loads_sharing_templates
from kubetrain.webhook.trainer import is_trainer_review, mutate_trainer, needs_read, validate_trainer
from kubetrain.webhook.validate import needs_job, validate

log = logging.getLogger(__name__)

# A map of MAX_OBJECT_MEMBERS fields takes at least this many bytes of JSON.
SHAPE_CHECK_BYTES = 48 * 1024
WEBHOOKS = ("mutate", "validate")

Decide = Callable[[AdmissionRequest], AdmissionResponse]


def result_label(response: AdmissionResponse) -> str:
    if not response.allowed:
        return "error" if response.status_code == 500 else "denied"
    return "patched" if response.patch else "allowed"


def shape_denial(review: AdmissionRequest) -> AdmissionResponse | None:
    for name, obj in (("object", review.object), ("oldObject", review.old_object)):
        problem = shape_problem(obj) if obj is not None else None
        if problem is not None:
            path, what = problem
            return AdmissionResponse.deny(
                review.uid,
                f'{review.kind} "{review.name}" is invalid: {path}: Invalid: {what} (in the {name})',
            )
    return None


def encode(review: AdmissionRequest, response: AdmissionResponse) -> tuple[AdmissionRequest, bytes, str]:
    return review, orjson.dumps(encode_review(response)), result_label(response)


def shape_check_needed(body: bytes, marks: bytes | None = None) -> bool:
    """Whether the review decoded from `body` must be walked for the shape limits before it is
    decided. Not for a body up to SHAPE_CHECK_BYTES: it cannot hold a map over
    MAX_OBJECT_MEMBERS fields, and one nested too deep ends in a RecursionError, answered by
    the same check. Not for a larger body whose bytes prove both limits (few colons, shallow
    brackets: kubetrain.webhook.shapebound), the common case, at a fraction of the walk's cost.
    `marks`: shapebound.structure_marks(body), when the caller has it (`review_marks`)."""
    return len(body) > SHAPE_CHECK_BYTES and not within_shape_limits(
        body, MAX_NESTING_DEPTH, MAX_OBJECT_MEMBERS, marks
    )


def review_marks(body: bytes) -> bytes | None:
    """shapebound.structure_marks(body) when the shape proof will read them (a body over
    SHAPE_CHECK_BYTES), else None. The server computes them once for the tier
    (kubetrain.webhook.tiers) and the proof of a review it decides in this process."""
    return structure_marks(body) if len(body) > SHAPE_CHECK_BYTES else None


def decide_guarded(
    review: AdmissionRequest, webhook: str, decide: Decide, check_shape: bool = False
) -> AdmissionResponse:
    """`decide(review)` with the shape limits applied and any failure answered as a denial.
    `check_shape`: `shape_check_needed` of the review's body; without it the objects are
    checked only if deciding them overflows the stack."""
    if check_shape:
        denial = shape_denial(review)
        if denial is not None:
            return denial
    try:
        return decide(review)
    except Exception as exc:
        denial = shape_denial(review) if isinstance(exc, RecursionError) else None
        if denial is not None:
            return denial
        log.exception(
            "%s: failed to decide on %s %s/%s (uid %s)",
            webhook,
            review.kind,
            review.namespace,
            review.name,
            review.uid,
        )
        return AdmissionResponse.deny(
            review.uid,
            f"internal error in the kubetrain {webhook} webhook: {type(exc).__name__}",
            code=500,
            reason="InternalError",
        )


@dataclass(frozen=True)
class Decider:
    """What /mutate and /validate decide with; picklable."""

    gang_scheduling: bool = False
    max_replicas: int = DEFAULT_MAX_REPLICAS
    policies: PolicyAdmission | None = None
    clock: Clock = SYSTEM_CLOCK  # a TrainJob runtime patch's `time` default

    def mutate(self, request: AdmissionRequest) -> AdmissionResponse:
        if is_trainer_review(request):
            return mutate_trainer(request, self.policies, self.clock.now())
        return mutate(request, gang_scheduling=self.gang_scheduling, policies=self.policies)

    def validate(self, request: AdmissionRequest) -> AdmissionResponse:
        if is_trainer_review(request):
            return validate_trainer(request)
        return validate(request, self.policies, max_replicas=self.max_replicas)

    def answer(
        self, body: bytes, webhook: str, marks: bytes | None = None
    ) -> tuple[AdmissionRequest, bytes, str]:
        """Decode, decide and encode one review; raises BadReview. A scale review to /validate
        comes back with an empty answer: the job must be read first (so does a TrainJob review,
        whose runtime must be read, and a runtime DELETE, whose TrainJobs must be listed),
        unless it breaks the shape limits (then the denial comes back). `marks`:
        `review_marks(body)`, when the caller has computed them already."""
        check_shape = shape_check_needed(body, marks)
        # A body not to be walked is decoded with its byte-identical pod templates decoded once.
        review = decode_review(body, orjson.loads if check_shape else loads_sharing_templates)
        if webhook == "validate" and (needs_job(review) or needs_read(review)):
            # Held to the shape limits before anything is read for it, like any other review.
            denial = shape_denial(review) if check_shape else None
            if denial is not None:
                return encode(review, denial)
            return review, b"", ""
        decide = self.mutate if webhook == "mutate" else self.validate
        return encode(review, decide_guarded(review, webhook, decide, check_shape))
