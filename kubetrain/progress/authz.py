"""Who may report a job's progress — pure decisions, no I/O.

A report is accepted only from a pod of that job: the bearer token must authenticate (a
TokenReview) for the job's own audience (`kubetrain.api.trainerstatus.audience`), be bound to a
pod (kube's `authentication.kubernetes.io/pod-name` and `pod-uid` extra claims, which only
pod-bound tokens carry), and that pod — still in the operator's view of the cluster, with the
token's uid — must be controlled by the job (its controller ownerReference has the job's uid),
not be terminating, and belong to the job's current attempt (`kubetrain.io/attempt`, the
job's `status.jobRestarts`). A finished job (Succeeded, a TrainJob's Complete, Failed) takes no
reports. A TrainJob has no attempt in its status: a whole-gang restart deletes every pod of the
earlier attempt at once, so their reports are refused as terminating (409) or gone (403).

| answer | when |
|---|---|
| 401 | no `Authorization: Bearer <token>` header |
| 403 | the token does not authenticate for this job's audience, is not bound to a pod, or its |
|     | pod is gone (another uid) or is not this job's |
| 404 | no such job (or not a kind this endpoint serves) |
| 409 | the job is finished; the pod is terminating or from an earlier attempt of the job |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.labels import LABEL_ATTEMPT

POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
TERMINAL = ("Succeeded", "Complete", "Failed")  # Complete: a TrainJob's success

Obj = dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    code: int
    reason: str  # metav1.StatusReason: Unauthorized, Forbidden, NotFound, Conflict
    message: str


@dataclass(frozen=True)
class PodClaim:
    namespace: str  # the ServiceAccount's namespace
    name: str
    uid: str


def bearer_token(header: str | None) -> str | None:
    """The credentials of an RFC 7235 Bearer Authorization header (scheme case-insensitive)."""
    parts = (header or "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1]


def unauthenticated() -> Refusal:
    return Refusal(401, "Unauthorized", "a bearer token is required (the pod's projected token)")


def pod_claim(review_status: Obj | None, audience: str) -> PodClaim | Refusal:
    """The pod a reviewed token is bound to, or why the token is refused for this job."""
    status = review_status or {}
    if not status.get("authenticated"):
        why = status.get("error") or "the token is not valid"
        return Refusal(
            403, "Forbidden", f"the token is not valid for audience {QUOTE.encode(audience)}: {why}"
        )
    if audience not in (status.get("audiences") or [audience]):
        return Refusal(403, "Forbidden", f"the token is not valid for audience {QUOTE.encode(audience)}")
    user = status.get("user") or {}
    extra = user.get("extra") or {}
    names, uids = extra.get(POD_NAME) or [], extra.get(POD_UID) or []
    username = str(user.get("username", ""))
    if not names or not uids or not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return Refusal(403, "Forbidden", "the token is not bound to a pod: use the pod's projected token")
    namespace = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":", 1)[0]
    return PodClaim(namespace, str(names[0]), str(uids[0]))


def _controller_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return None


def _finished(job: Obj) -> str | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in TERMINAL and cond.get("status") == "True":
            return str(cond["type"])
    return None


def admit(job: Obj, job_title: str, claim: PodClaim, pod: Obj | None) -> Refusal | None:
    """None when `claim`'s pod may report `job`'s progress now; else the refusal."""
    meta = job.get("metadata") or {}
    if claim.namespace != meta.get("namespace"):
        return Refusal(
            403, "Forbidden", f"the token's pod is not in namespace {QUOTE.encode(meta.get('namespace'))}"
        )
    if pod is None or (pod.get("metadata") or {}).get("uid") != claim.uid:
        return Refusal(403, "Forbidden", f"pod {QUOTE.encode(claim.name)} (uid {claim.uid}) no longer exists")
    if _controller_uid(pod) != meta.get("uid"):
        return Refusal(403, "Forbidden", f"pod {QUOTE.encode(claim.name)} is not a pod of {job_title}")
    finished = _finished(job)
    if finished:
        return Refusal(409, "Conflict", f"{job_title} is {finished}; it takes no more reports")
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return Refusal(
            409, "Conflict", f"pod {QUOTE.encode(claim.name)} is terminating; its reports no longer count"
        )
    attempt = int((job.get("status") or {}).get("jobRestarts") or 0)
    pod_attempt = (pod.get("metadata") or {}).get("labels", {}).get(LABEL_ATTEMPT, "0")
    if str(pod_attempt) != str(attempt):
        return Refusal(
            409,
            "Conflict",
            f"pod {QUOTE.encode(claim.name)} is from attempt {pod_attempt} of {job_title}, now at {attempt}",
        )
    return None
