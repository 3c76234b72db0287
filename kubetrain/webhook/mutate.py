"""The mutating webhook: write the defaults of BEHAVIOUR.md §2 into the stored job.

The defaulted object comes from the same pure function the controller uses
(`kubetrain.api.defaulting.default_job`); the answer is the JSONPatch from the request's object to
the defaulted one, computed by the `jsonpatch` library. Requests for kinds that are not ours (a
misconfigured webhook rule) are allowed untouched, with a warning in the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import jsonpatch

from kubetrain.api.defaulting import default_job
from kubetrain.frameworks.registry import get_framework
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

if TYPE_CHECKING:
    from kubetrain.webhook.policies import PolicyAdmission

log = logging.getLogger(__name__)


def is_job_kind(kind: str) -> bool:
    return get_framework(kind) is not None


def mutate(
    request: AdmissionRequest, *, gang_scheduling: bool = False, policies: PolicyAdmission | None = None
) -> AdmissionResponse:
    """Answer one mutating AdmissionReview request (TrainingPolicy defaults after the built-in ones)."""
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    if not is_job_kind(request.kind):
        log.warning(
            "mutate: %s %s/%s is not a kubetrain job kind; allowed unchanged "
            "(check the webhook configuration's rules)",
            request.kind,
            request.namespace,
            request.name,
        )
        return AdmissionResponse.allow(request.uid)
    original = request.object
    assert original is not None  # decode_review guarantees an object for CREATE/UPDATE
    defaulted = default_job(original, gang_scheduling=gang_scheduling)
    result = defaulted.obj if policies is None else policies.apply_defaults(request, defaulted.obj).obj
    patch = jsonpatch.make_patch(original, result).patch
    response = AdmissionResponse.allow(request.uid, defaulted.warnings)
    response.patch = list(patch) or None
    return response
