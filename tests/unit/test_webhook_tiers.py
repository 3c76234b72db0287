"""Where a review is decided (kubetrain.webhook.tiers): on the event loop up to 64 KiB, or up
to 96 KiB with at most 4,096 objects and lists; anything else off the loop. Served over TLS, a
big ordinary review is answered from the loop and one with many objects from the thread pool."""

from __future__ import annotations

import json
import threading
from typing import Any

import aiohttp
import orjson
import pytest

from kubetrain.webhook.decider import Decider
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse, request_review
from kubetrain.webhook.server import WebhookServer
from kubetrain.webhook.shapebound import structure_marks
from kubetrain.webhook.tiers import INLINE_BYTES, INLINE_MAX_BRACKETS, INLINE_MAX_BYTES, decided_inline

from .test_webhook_hostile import pytorchjob


def padded(size: int, brackets: int = 0, *, in_strings: bool = False) -> bytes:
    """A JSON body of exactly `size` bytes holding `brackets` `{` bytes (in `[{},{},...]`, or
    inside one string)."""
    inner = '"' + "{" * brackets + '"' if in_strings else "[" + ",".join(["{}"] * brackets) + "]"
    head = '{"a":' + inner + ',"pad":"'
    body = (head + "x" * (size - len(head) - 2) + '"}').encode()
    assert len(body) == size and body.count(b"{") + body.count(b"[") == brackets + 1 + (not in_strings)
    return body


def test_up_to_64_kib_a_review_is_decided_inline_whatever_it_holds() -> None:
    assert decided_inline(padded(INLINE_BYTES, 20_000))
    assert not decided_inline(padded(INLINE_BYTES + 1, 20_000))


@pytest.mark.parametrize("size", [INLINE_BYTES + 1, INLINE_MAX_BYTES])
def test_up_to_96_kib_only_a_review_with_few_objects_and_lists_is_inline(size: int) -> None:
    at_limit = INLINE_MAX_BRACKETS - 2  # plus the outer map and list
    for body in (padded(size, at_limit), padded(size, at_limit + 1)):
        # the same answer from the bytes the shape proof reads (as the server asks)
        assert decided_inline(body, structure_marks(body)) == decided_inline(body)
    assert decided_inline(padded(size, at_limit))
    assert not decided_inline(padded(size, at_limit + 1))


def test_brackets_inside_strings_count_so_a_body_goes_off_the_loop_rather_than_on() -> None:
    body = padded(INLINE_MAX_BYTES, INLINE_MAX_BRACKETS, in_strings=True)
    assert not decided_inline(body)
    assert not decided_inline(body, structure_marks(body))


def test_over_96_kib_a_review_is_never_inline() -> None:
    assert not decided_inline(padded(INLINE_MAX_BYTES + 1))


def container(i: int) -> dict[str, Any]:
    env = [{"name": f"VAR_{k}", "value": "v" * 20} for k in range(20)]
    return {"name": f"c{i}", "image": f"registry.example.com/image-{i}:1.0", "env": env}


async def test_a_big_review_with_few_objects_is_answered_from_the_loop_one_with_many_from_a_thread(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    threads: list[str] = []

    class Recording(Decider):
        def validate(self, request: AdmissionRequest) -> AdmissionResponse:
            threads.append(threading.current_thread().name)
            return super().validate(request)

    server.decider = Recording  # type: ignore[method-assign]
    loop_thread = threading.current_thread().name
    few = orjson.dumps(request_review(pytorchjob(*[container(i) for i in range(70)])))
    many = orjson.dumps(request_review(pytorchjob(*[container(i) for i in range(70)], {"x": [{}] * 5000})))
    assert INLINE_BYTES < len(few) <= INLINE_MAX_BYTES and INLINE_BYTES < len(many) <= INLINE_MAX_BYTES
    for body in (few, many):
        async with session.post(
            server.url + "/validate", data=body, headers={"Content-Type": "application/json"}
        ) as r:
            assert r.status == 200
            assert "response" in json.loads(await r.read())
    assert threads[0] == loop_thread
    assert threads[1].startswith("kubetrain-review")
