"""Who a request is and whether it may proceed: bearer-token authentication (the admin token,
ServiceAccount tokens, bound JWTs), TokenReview answers, and RBAC authorization with the 403s
recorded, as kube-apiserver's authentication and authorization stages.

```python
auth = Authentication(store, clock, token="admin-token")
auth.identities["tok"] = rbac.service_account_user("ns", "sa")
auth.authorizer = rbac.Authorizer(store)     # None (the default): every request is allowed
user = auth.authenticate(request.headers)    # raises ApiError 401
auth.authorize(user, method, path, query, user_agent, requests)   # raises ApiError 403
auth.denials                                  # the newest 10,000 403s, oldest first
```
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from datetime import datetime

from kubetrain.devcluster.apiserver.auth import accessreviews, rbac, tokens
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.harness.accounting import RequestLog, RequestRecord
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.devcluster.apiserver.verbs.core import ADMIN_USER

DENIALS_KEPT = 10_000  # refused requests kept for tests (like the request log, a bounded window)
ADMIN = rbac.UserInfo(str(ADMIN_USER["username"]), tuple(ADMIN_USER["groups"]))


class Authentication:
    def __init__(self, store: Store, clock: Callable[[], datetime], token: str | None) -> None:
        self.store = store
        self.token = token
        # Bearer tokens besides the admin token -> who they authenticate as (ServiceAccount tokens).
        self.identities: dict[str, rbac.UserInfo] = {}
        self.authorizer: rbac.Authorizer | None = None  # None: every request is allowed
        self.denials: deque[rbac.Denial] = deque(maxlen=DENIALS_KEPT)  # the newest, oldest first
        self.denials_total = 0  # every refusal, kept or dropped
        self.tokens = tokens.TokenIssuer(store, clock)

    def authenticate(self, headers: Mapping[str, str]) -> rbac.UserInfo:
        header = headers.get("Authorization", "")
        if not header:
            return rbac.ANONYMOUS
        if not header.startswith("Bearer ") or not self.token or header[7:] == self.token:
            return ADMIN
        if tokens.looks_like_jwt(header[7:]):
            bound = self.tokens.authenticate(header[7:], [])
            if isinstance(bound, str):
                raise ApiError(401, "Unauthorized", "Unauthorized")
            return bound.user
        user = self.identities.get(header[7:])
        if user is None or not self.account_exists(user):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return user

    def review_token(self, token: str, audiences: list[str]) -> tokens.Authenticated | str:
        """A TokenReview's answer: who `token` is for `audiences`, or why it does not authenticate."""
        if tokens.looks_like_jwt(token):
            return self.tokens.authenticate(token, audiences)
        user = ADMIN if self.token and token == self.token else self.identities.get(token)
        if user is None or not self.account_exists(user):
            return "unknown token"
        if audiences and accessreviews.API_AUDIENCE not in audiences:
            return (
                f'token audiences ["{accessreviews.API_AUDIENCE}"] is invalid for the target audiences '
                + json.dumps(audiences)
            )
        return tokens.Authenticated(user, (accessreviews.API_AUDIENCE,))

    def account_exists(self, user: rbac.UserInfo) -> bool:
        """A ServiceAccount token authenticates only while its ServiceAccount exists (as in kube)."""
        if not user.username.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
            return True
        namespace, _, name = user.username[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")
        return self.store.get("serviceaccounts", namespace, name) is not None

    def denied(self, user: rbac.UserInfo, info: rbac.RequestInfo, error: ApiError) -> None:
        self.denials.append(rbac.denial(user, info, error))
        self.denials_total += 1

    def keep_denials(self, limit: int) -> None:
        """Keep the newest `limit` refusals (a long-running cluster's denials do not grow without end)."""
        if limit < 1:
            raise ValueError(f"denials limit must be at least 1, not {limit}")
        self.denials = deque(self.denials, maxlen=limit)

    def authorize(
        self,
        user: rbac.UserInfo,
        method: str,
        path: str,
        query: Mapping[str, str],
        user_agent: str,
        requests: RequestLog,
    ) -> None:
        """Raises the 403 when the authorizer refuses; a refused resource request is also logged."""
        if self.authorizer is None:
            return
        info = rbac.request_info(method, path, query)
        decision = self.authorizer.authorize(user, info)
        if decision.allowed:
            return
        error = rbac.forbidden(user, info, decision.reason)
        self.denied(user, info, error)
        if info.resource_request:
            resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
            requests.add(
                RequestRecord(
                    info.verb,
                    resource,
                    info.api_group,
                    info.namespace,
                    info.name,
                    user_agent,
                    403,
                    user.username,
                )
            )
        raise error
