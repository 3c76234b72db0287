"""Who a token is, for the header: one SelfSubjectReview per user per TTL, refusals cached as
"unknown", a 401 passed on (the dashboard then asks the user to sign in again)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dashboard.views.auth import Credentials
from kubetrain.dashboard.whoami import WhoAmI
from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock


class Api:
    """Answers SelfSubjectReviews as the API server would for `username` (or fails)."""

    def __init__(self, username: str = "", error: int = 0) -> None:
        self.username = username
        self.error = error
        self.bodies: list[dict[str, Any]] = []

    async def create(self, ref: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        assert ref.plural == "selfsubjectreviews" and ref.group == "authentication.k8s.io"
        if self.error:
            raise ApiError(self.error, "Refused", "no")
        return {**body, "status": {"userInfo": {"username": self.username, "groups": ["g"]}}}


async def test_one_review_per_user_per_ttl() -> None:
    clock = FakeClock()
    who = WhoAmI(ttl=60, clock=clock)
    api = Api("system:serviceaccount:team-a:alice")
    alice, bob = Credentials(token="a-token"), Credentials(token="b-token")
    assert await who.name(api, alice) == "system:serviceaccount:team-a:alice"  # type: ignore[arg-type]
    assert await who.name(api, alice) == "system:serviceaccount:team-a:alice"  # type: ignore[arg-type]
    assert who.reviews == 1
    assert api.bodies == [{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}]
    await who.name(api, bob)  # type: ignore[arg-type]
    assert who.reviews == 2
    await clock.advance(61)
    await who.name(api, alice)  # type: ignore[arg-type]
    assert who.reviews == 3


@pytest.mark.parametrize("status", [403, 404, 500])
async def test_a_refusal_leaves_the_user_unnamed_and_is_cached(status: int) -> None:
    who = WhoAmI(clock=FakeClock())
    api = Api(error=status)
    assert await who.name(api, Credentials(token="t")) == ""  # type: ignore[arg-type]
    assert await who.name(api, Credentials(token="t")) == ""  # type: ignore[arg-type]
    assert who.reviews == 1


async def test_an_expired_token_is_not_an_answer() -> None:
    who = WhoAmI(clock=FakeClock())
    with pytest.raises(ApiError):
        await who.name(Api(error=401), Credentials(token="t"))  # type: ignore[arg-type]
    assert who.reviews == 1
    with pytest.raises(ApiError):  # not cached: asked again
        await who.name(Api(error=401), Credentials(token="t"))  # type: ignore[arg-type]


async def test_the_cache_is_bounded() -> None:
    who = WhoAmI(max_entries=2, clock=FakeClock())
    api = Api("u")
    for token in ("a", "b", "c"):
        await who.name(api, Credentials(token=token))  # type: ignore[arg-type]
    await who.name(api, Credentials(token="a"))  # type: ignore[arg-type]  # dropped: asked again
    assert who.reviews == 4
