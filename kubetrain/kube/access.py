"""TokenReview and SubjectAccessReview creates: how a server kubetrain runs asks the API server
who a bearer token belongs to and whether that user may do something.

    reviews = AccessReviews(client)                      # client: a KubeClient
    answer = await reviews.token_review(body)            # POST tokenreviews (authentication.k8s.io/v1)
    answer = await reviews.subject_access_review(body)   # POST subjectaccessreviews (authorization.k8s.io/v1)

The bodies and the reading of the answers are `kubetrain.serving.auth`'s (pure); this module only
sends them, so the requests count in `kubetrain_api_requests_total` and share the client's rate
limit. RBAC used: `create` on both resources (the chart's `<release>-auth-delegator` ClusterRole,
what the built-in `system:auth-delegator` grants).
"""

from __future__ import annotations

from typing import Any

from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS
from kubetrain.serving.auth import ReviewFailed


class AccessReviews:
    """The two review creates over a `KubeClient`; an `ApiError` is raised as `ReviewFailed`."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.client.create(TOKEN_REVIEWS, body)
        except ApiError as exc:
            raise ReviewFailed(str(exc)) from exc

    async def subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.client.create(SUBJECT_ACCESS_REVIEWS, body)
        except ApiError as exc:
            raise ReviewFailed(str(exc)) from exc
