"""A review decided inline runs with the garbage collector paused and is freed before it
resumes (kubetrain.webhook.quietgc): no collection for the review's own objects, the same
answer, the collector's state as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from jobs import big_tf_job

from kubetrain.webhook.decider import Decider, review_marks
from kubetrain.webhook.quietgc import Answer, decided_without_collections, header_only
from kubetrain.webhook.review import AdmissionRequest, decode_review, request_review


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    enabled = gc.isenabled()
    gc.enable()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)
        if not enabled:
            gc.disable()


def header_fields(review: AdmissionRequest) -> tuple[Any, ...]:
    return tuple(getattr(review, f) for f in HEADER)


HEADER = ("uid", "group", "version", "kind", "operation", "name", "namespace", "sub_resource", "dry_run")


def xlarge_body() -> bytes:
    return orjson.dumps(request_review(big_tf_job("big", 16)))


@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_a_big_review_makes_no_collection_and_leaves_the_allocation_count_where_it_was(
    webhook: str, collections: list[int]
) -> None:
    body = xlarge_body()
    decider = Decider()
    decider.answer(body, webhook)  # the template cache warm, as in a running server
    gc.collect()
    collections.clear()  # only the reviews' from here
    before = gc.get_count()[0]
    for _ in range(5):  # ~5,000 tracked objects each: several young collections without the pause
        decided_without_collections(lambda: decider.answer(body, webhook, review_marks(body)))
    assert collections == []
    assert gc.isenabled()
    # What is left counted: a few objects, not the ~2,000 of each decoded review.
    assert gc.get_count()[0] - before < 300


@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_the_answer_is_the_deciders_and_the_review_keeps_its_header(webhook: str) -> None:
    body = xlarge_body()
    plain_review, plain_answer, plain_result = Decider().answer(body, webhook)
    review, answer, result = decided_without_collections(lambda: Decider().answer(body, webhook))
    assert (answer, result) == (plain_answer, plain_result) and answer
    assert header_fields(review) == header_fields(plain_review)
    assert (review.object, review.old_object, review.raw) == (None, None, {})


def test_a_review_still_to_be_read_keeps_its_objects() -> None:
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 3}}
    review = request_review(scale, operation="UPDATE", old=scale, sub_resource="scale")
    body = orjson.dumps(review)
    decided, answer, _ = decided_without_collections(lambda: Decider().answer(body, "validate"))
    assert answer == b""
    assert decided.object == scale and decided.raw


def test_the_collector_resumes_after_a_failure_and_stays_off_if_it_was_off() -> None:
    def fail() -> Answer:
        assert not gc.isenabled()
        raise ValueError("boom")

    enabled = gc.isenabled()
    try:
        gc.enable()
        with pytest.raises(ValueError, match="boom"):
            decided_without_collections(fail)
        assert gc.isenabled()
        gc.disable()
        body = xlarge_body()
        decided_without_collections(lambda: Decider().answer(body, "validate"))
        assert not gc.isenabled()
    finally:
        (gc.enable if enabled else gc.disable)()


def test_header_only_drops_the_objects_and_nothing_else() -> None:
    review = decode_review(xlarge_body())
    header = header_only(review)
    assert header_fields(header) == header_fields(review)
    assert header.object is None and header.old_object is None and header.raw == {}
