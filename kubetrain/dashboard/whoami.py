"""Who a token (or the kubeconfig, in local mode) is: the user's own SelfSubjectReview
(authentication.k8s.io/v1, what `kubectl auth whoami` asks; GA since Kubernetes 1.28, every
authenticated user may create one through `system:basic-user`), so the header can name the user —
never show the token.

Answers are cached per user fingerprint for `ttl` seconds (bounded, least recently used dropped
first): a page costs at most one review per user per `ttl`. A server that does not serve the API
(before 1.28 without the beta), or RBAC that does not allow it, leaves the name unknown (the header
says "token user"); that answer is cached too. A 401 is not an answer: it propagates, and the
dashboard asks the user to sign in again.
"""

from __future__ import annotations

import logging

from kubetrain.dashboard.ttlcache import TtlCache
from kubetrain.dashboard.views.auth import Credentials
from kubetrain.kube.asuser import AsUser
from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import Clock
from kubetrain.kube.resources import SELF_SUBJECT_REVIEWS

log = logging.getLogger(__name__)

DEFAULT_TTL = 60.0
DEFAULT_MAX_ENTRIES = 10_000
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def username(review: object) -> str:
    """`status.userInfo.username` of a SelfSubjectReview answer, "" when it has none."""
    if not isinstance(review, dict):
        return ""
    info = (review.get("status") or {}).get("userInfo") or {}
    return str(info.get("username") or "") if isinstance(info, dict) else ""


class WhoAmI:
    def __init__(
        self, ttl: float = DEFAULT_TTL, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Clock | None = None
    ) -> None:
        self._names: TtlCache[str, str] = TtlCache(ttl, max_entries, clock)
        self.reviews = 0  # SelfSubjectReviews sent

    async def name(self, api: AsUser, creds: Credentials) -> str:
        """The user's name as the API server knows it, "" when it will not say."""
        fresh, known = self._names.get(creds.fingerprint)
        if fresh:
            return known or ""
        self.reviews += 1
        try:
            found = username(await api.create(SELF_SUBJECT_REVIEWS, dict(REVIEW)))
        except ApiError as err:
            if err.status == 401:
                raise
            log.info("dashboard: SelfSubjectReview refused (%s); the user is not named", err.status)
            found = ""
        self._names.put(creds.fingerprint, found)
        return found
