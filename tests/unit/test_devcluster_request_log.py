"""devcluster's request log keeps the newest `limit` requests, counts every one, and refuses to
count over requests it dropped (kubetrain.devcluster.apiserver.harness.accounting)."""

from __future__ import annotations

import pytest

from kubetrain.devcluster.apiserver.harness.accounting import RequestLog, RequestLogTruncated, RequestRecord


def record(name: str, verb: str = "get") -> RequestRecord:
    return RequestRecord(verb, "pods", "", "default", name, "kubetrain/1.0")


def test_the_log_keeps_the_newest_requests_up_to_its_limit() -> None:
    log = RequestLog(limit=3)
    for i in range(5):
        log.add(record(f"p{i}"))
    assert [r.name for r in log.records] == ["p2", "p3", "p4"]
    assert log.total == 5 and log.dropped == 2


def test_counting_over_dropped_requests_is_refused_until_reset() -> None:
    log = RequestLog(limit=2)
    for i in range(3):
        log.add(record(f"p{i}"))
    with pytest.raises(RequestLogTruncated, match="newest 2 requests and 1 of the 3"):
        log.count(verb="get")
    with pytest.raises(RequestLogTruncated):
        log.by_verb()
    log.reset()
    log.add(record("q", verb="delete"))
    assert log.count(verb="delete") == 1 and log.total == 1 and log.dropped == 0
    assert log.summary() == {("delete", "pods"): 1}


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="request log limit must be at least 1, not 0"):
        RequestLog(limit=0)
