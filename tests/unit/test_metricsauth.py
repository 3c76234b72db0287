"""The decisions of kubetrain.serving.auth: bearer tokens, review bodies and answers, the caches."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.serving.auth import (
    DecisionCache,
    MetricsAuthorizer,
    ReviewFailed,
    User,
    access_decision,
    bearer_token,
    forbidden_status,
    reviewed_user,
    subject_access_review,
    token_review,
)


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER  abc ", "abc"),
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic dXNlcjpwdw==", None),
        ("Bearer a b", None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_review_bodies() -> None:
    assert token_review("t") == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "t"},
    }
    assert token_review("t", ("aud",))["spec"]["audiences"] == ["aud"]
    user = User("u", "uid-1", ("g1", "g2"), (("scopes", ("a", "b")),))
    assert subject_access_review(user, "/metrics", "get") == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "u",
            "groups": ["g1", "g2"],
            "uid": "uid-1",
            "extra": {"scopes": ["a", "b"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


def test_reviewed_user() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {"username": "u", "uid": "1", "groups": ["g"], "extra": {"k": ["v"]}},
        }
    }
    assert reviewed_user(answer) == User("u", "1", ("g",), (("k", ("v",)),))
    assert reviewed_user({"status": {"authenticated": False, "user": {"username": "u"}}}) is None
    assert reviewed_user({"status": {"user": {}, "error": "invalid bearer token"}}) is None
    assert reviewed_user({}) is None
    assert reviewed_user({"status": {"authenticated": True, "user": {}}}) is None


def test_access_decision_denied_wins() -> None:
    assert access_decision({"status": {"allowed": True}}) == (True, "")
    assert access_decision({"status": {"allowed": True, "denied": True, "reason": "r"}}) == (False, "r")
    assert access_decision({"status": {"allowed": False, "evaluationError": "boom"}}) == (False, "boom")
    assert access_decision({}) == (False, "")


def test_forbidden_status_words_it_like_kube() -> None:
    body = forbidden_status(User("system:serviceaccount:m:p"), "get", "/metrics")
    assert body["message"] == 'forbidden: User "system:serviceaccount:m:p" cannot get path "/metrics"'
    assert (body["code"], body["reason"], body["status"]) == (403, "Forbidden", "Failure")
    assert forbidden_status(User("u"), "get", "/metrics", "no rule")["message"].endswith(": no rule")


def test_cache_expires_and_is_bounded() -> None:
    clock = Ticks()
    cache: DecisionCache[str] = DecisionCache(clock, ttl=10.0, max_entries=2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == (True, "A")  # a is now the most recently used
    cache.put("c", "C")
    assert cache.get("b") == (False, None)  # the least recently used went
    assert len(cache) == 2
    clock.now = 9.9
    assert cache.get("a") == (True, "A")
    clock.now = 10.0
    assert cache.get("a") == (False, None)
    with pytest.raises(ValueError, match="must not be negative"):
        DecisionCache(clock, ttl=-1)


class FakeReviews:
    def __init__(self, users: dict[str, dict[str, Any]], allowed: set[str]) -> None:
        self.users = users
        self.allowed = allowed
        self.calls: list[str] = []
        self.fail: str | None = None

    async def token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("TokenReview")
        if self.fail == "TokenReview":
            raise ReviewFailed("0 ClientConnectorError: no route")
        user = self.users.get(body["spec"]["token"])
        return {"status": {"authenticated": True, "user": user} if user else {"user": {}}}

    async def subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("SubjectAccessReview")
        if self.fail == "SubjectAccessReview":
            raise ReviewFailed("503 ServiceUnavailable: try later")
        return {"status": {"allowed": body["spec"]["user"] in self.allowed}}


@pytest.fixture
def api() -> FakeReviews:
    return FakeReviews({"good": {"username": "prom"}, "other": {"username": "eve"}}, {"prom"})


async def test_check_codes_and_caching(api: FakeReviews) -> None:
    clock = Ticks()
    auth = MetricsAuthorizer(api, clock=clock)
    assert (await auth.check(None, "/metrics", "get")).code == 401
    assert api.calls == []  # no token: no API call
    assert (await auth.check("Bearer nope", "/metrics", "get")).code == 401
    assert (await auth.check("Bearer nope", "/metrics", "get")).code == 401
    assert api.calls == ["TokenReview"]  # the negative answer was cached
    verdict = await auth.check("Bearer other", "/metrics", "get")
    assert verdict.code == 403 and verdict.user == User("eve")
    ok = await auth.check("Bearer good", "/metrics", "get")
    assert ok.code == 200 and ok.body is None
    calls = len(api.calls)
    for _ in range(5):
        assert (await auth.check("Bearer good", "/metrics", "get")).code == 200
        assert (await auth.check("Bearer other", "/metrics", "get")).code == 403
    assert len(api.calls) == calls
    clock.now += 10.0
    assert (await auth.check("Bearer good", "/metrics", "get")).code == 200
    assert api.calls[calls:] == ["TokenReview", "SubjectAccessReview"]


async def test_failed_reviews_are_not_cached(api: FakeReviews) -> None:
    auth = MetricsAuthorizer(api, clock=Ticks())
    api.fail = "TokenReview"
    assert (await auth.check("Bearer good", "/metrics", "get")).code == 401
    api.fail = "SubjectAccessReview"
    failed = await auth.check("Bearer good", "/metrics", "get")
    assert failed.code == 500 and failed.body is not None and failed.body["reason"] == "InternalError"
    api.fail = None
    assert (await auth.check("Bearer good", "/metrics", "get")).code == 200
