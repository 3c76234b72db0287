"""Who may read /metrics: bearer tokens checked with a TokenReview, access with a
SubjectAccessReview — what controller-runtime's `filters.WithAuthenticationAndAuthorization`
and kube-rbac-proxy do (docs/operations.md, "Scraping secure metrics").

```python
auth = MetricsAuthorizer(AccessReviews(client))     # kubetrain.kube.access
verdict = await auth.check(request.headers.get("Authorization"), "/metrics", "get")
verdict.code        # 200, 401 (no or unknown token), 403 (not allowed) or 500 (review failed)
verdict.body        # the kube-like Status to answer with when code != 200
```

1. `bearer_token(header)`: the token of `Authorization: Bearer <token>` (scheme
   case-insensitive, as RFC 6750 and kube-apiserver read it); anything else is no token → 401.
2. Authentication: a TokenReview (authentication.k8s.io/v1) of the token; `status.authenticated`
   true gives the user (name, uid, groups, extra). Not authenticated, or the review failed → 401
   (kube-apiserver's authentication filter also answers 401 on an authenticator error).
3. Authorization: a SubjectAccessReview (authorization.k8s.io/v1) of that user with
   `nonResourceAttributes: {path: /metrics, verb: get}` — what an RBAC rule `nonResourceURLs:
   ["/metrics"], verbs: ["get"]` grants. `status.allowed` and not `status.denied` → 200;
   otherwise 403 `forbidden: User "u" cannot get path "/metrics"`; a failed review → 500.
4. Both decisions are cached (`DecisionCache`: bounded, 10 s, 1,000 entries by default; both
   positive and negative answers; a failed review is not cached), so a Prometheus scrape every
   15-30 s costs at most two API calls per token per 10 s. Tokens are cached by their SHA-256,
   never in clear.

Everything but `MetricsAuthorizer.check` is pure; `check` does I/O only through the `ReviewApi`
it is given.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

DEFAULT_TTL = 10.0
DEFAULT_MAX_ENTRIES = 1000

V = TypeVar("V")


@dataclass(frozen=True)
class User:
    """An authenticated identity, as a TokenReview's `status.user` gives it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Verdict:
    code: int  # 200, 401, 403 or 500
    body: dict[str, Any] | None = None  # the Status to answer with when code != 200
    user: User | None = None


class ReviewFailed(Exception):
    """A TokenReview or SubjectAccessReview that got no answer, or an error answer."""


class ReviewApi(Protocol):
    """The two review creates (`kubetrain.kube.access.AccessReviews`); a failed review raises
    `ReviewFailed`."""

    async def token_review(self, body: dict[str, Any]) -> dict[str, Any]: ...
    async def subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]: ...


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def token_review(token: str, audiences: tuple[str, ...] = ()) -> dict[str, Any]:
    """The TokenReview to create for `token` (no audiences: the API server's own)."""
    spec: dict[str, Any] = {"token": token}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def reviewed_user(review: Mapping[str, Any]) -> User | None:
    """The user of an answered TokenReview, or None when the token did not authenticate."""
    status = review.get("status") or {}
    if not isinstance(status, Mapping) or status.get("authenticated") is not True:
        return None
    user = status.get("user") or {}
    if not isinstance(user, Mapping) or not user.get("username"):
        return None
    extra = user.get("extra") or {}
    return User(
        username=str(user["username"]),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items()))
        if isinstance(extra, Mapping)
        else (),
    )


def subject_access_review(user: User, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview asking whether `user` may `verb` the non-resource URL `path`."""
    spec: dict[str, Any] = {
        "user": user.username,
        "groups": list(user.groups),
        "nonResourceAttributes": {"path": path, "verb": verb},
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def access_decision(review: Mapping[str, Any]) -> tuple[bool, str]:
    """(allowed, reason) of an answered SubjectAccessReview. `denied` wins over `allowed`, as the
    API documents (an authorizer may deny explicitly)."""
    status = review.get("status") or {}
    if not isinstance(status, Mapping):
        return False, ""
    reason = str(status.get("reason") or status.get("evaluationError") or "")
    allowed = status.get("allowed") is True and status.get("denied") is not True
    return allowed, reason


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }


def unauthorized_status() -> dict[str, Any]:
    """kube-apiserver's 401 body."""
    return _status(401, "Unauthorized", "Unauthorized")


def forbidden_status(user: User, verb: str, path: str, reason: str = "") -> dict[str, Any]:
    """kube-apiserver's 403 body for a non-resource request."""
    message = f'forbidden: User "{user.username}" cannot {verb} path "{path}"'
    if reason:
        message += f": {reason}"
    return _status(403, "Forbidden", message)


def internal_error_status(message: str) -> dict[str, Any]:
    return _status(500, "InternalError", f"Internal error occurred: {message}")


@dataclass
class DecisionCache(Generic[V]):
    """Answers kept for `ttl` seconds of `clock`, at most `max_entries` (least recently used
    goes first). `get` returns `(True, value)` for a live entry, `(False, None)` otherwise."""

    clock: Callable[[], float]
    ttl: float = DEFAULT_TTL
    max_entries: int = DEFAULT_MAX_ENTRIES
    _entries: OrderedDict[Any, tuple[float, V]] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        if self.ttl < 0 or self.max_entries < 0:
            raise ValueError("ttl and max_entries must not be negative")

    def get(self, key: Any) -> tuple[bool, V | None]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, value

    def put(self, key: Any, value: V) -> None:
        if self.max_entries == 0 or self.ttl == 0:
            return
        self._entries[key] = (self.clock() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def _token_key(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class MetricsAuthorizer:
    """Authenticates (TokenReview) and authorizes (SubjectAccessReview) requests, with caches."""

    def __init__(
        self,
        api: ReviewApi,
        *,
        clock: Callable[[], float],
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        audiences: tuple[str, ...] = (),
    ) -> None:
        self.api = api
        self.audiences = audiences
        self.users: DecisionCache[User | None] = DecisionCache(clock, ttl, max_entries)
        self.decisions: DecisionCache[tuple[bool, str]] = DecisionCache(clock, ttl, max_entries)

    async def authenticate(self, token: str) -> User | None:
        """The token's user, None when it does not authenticate; ReviewFailed when the review failed."""
        key = _token_key(token)
        hit, user = self.users.get(key)
        if hit:
            return user
        user = reviewed_user(await self.api.token_review(token_review(token, self.audiences)))
        self.users.put(key, user)
        return user

    async def authorize(self, user: User, path: str, verb: str) -> tuple[bool, str]:
        """(allowed, reason); ReviewFailed when the review failed."""
        key = (user, path, verb)
        hit, decision = self.decisions.get(key)
        if hit and decision is not None:
            return decision
        answer = await self.api.subject_access_review(subject_access_review(user, path, verb))
        decision = access_decision(answer)
        self.decisions.put(key, decision)
        return decision

    async def check(self, authorization: str | None, path: str, verb: str) -> Verdict:
        token = bearer_token(authorization)
        if token is None:
            return Verdict(401, unauthorized_status())
        try:
            user = await self.authenticate(token)
        except ReviewFailed as exc:
            log.warning("TokenReview failed, answering 401: %s", exc)
            return Verdict(401, unauthorized_status())
        if user is None:
            return Verdict(401, unauthorized_status())
        try:
            allowed, reason = await self.authorize(user, path, verb)
        except ReviewFailed as exc:
            log.warning("SubjectAccessReview for %s failed: %s", user.username, exc)
            return Verdict(500, internal_error_status("cannot check access; see the operator's log"), user)
        if not allowed:
            return Verdict(403, forbidden_status(user, verb, path, reason), user)
        return Verdict(200, None, user)
