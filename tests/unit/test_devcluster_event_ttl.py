"""Event expiry's decisions on a bare store (kubetrain.devcluster.apiserver.storage.eventttl): a TTL of 0
keeps Events forever (kube-apiserver's --event-ttl=0 attaches no etcd lease), a bad TTL is
refused naming what is valid, and `kubetrain dev --event-ttl` checks its value the same way."""

from __future__ import annotations

import math

import pytest

from kubetrain.cli import build_parser
from kubetrain.devcluster.apiserver.storage.eventttl import EventExpiry
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.kube.clock import FakeClock


def event(name: str, rkey: str = "events") -> tuple[str, dict[str, object]]:
    return rkey, {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}


async def test_expiry_deletes_in_write_order_and_a_rewrite_moves_an_event_to_the_back() -> None:
    clock, store = FakeClock(), Store()
    expiry = EventExpiry(store, clock.now, ttl=100)
    store.create(*event("a"))
    await clock.advance(10)
    store.create(*event("b"))
    await clock.advance(10)
    a = store.get("events", "default", "a")
    assert a is not None
    store.update("events", {**a, "note": "again"}, None)  # a now expires at 120, after b (110)
    await clock.advance(90)  # t = 110
    assert expiry.sweep() == 1
    assert store.get("events", "default", "b") is None
    assert store.get("events", "default", "a") is not None
    await clock.advance(10)  # t = 120
    assert expiry.sweep() == 1 and store.count("events") == 0 and len(expiry) == 0
    assert expiry.expired == 2


async def test_a_ttl_of_zero_keeps_events_forever() -> None:
    clock, store = FakeClock(), Store()
    expiry = EventExpiry(store, clock.now, ttl=0)
    store.create(*event("kept"))
    await clock.advance(10 * 365 * 24 * 3600)
    assert expiry.sweep() == 0 and store.count("events") == 1 and len(expiry) == 0


@pytest.mark.parametrize("ttl", [-1.0, math.nan, math.inf])
def test_a_ttl_that_is_not_zero_or_positive_is_refused(ttl: float) -> None:
    with pytest.raises(ValueError, match=r"event TTL must be 0 \(Events never expire\) or a positive number"):
        EventExpiry(Store(), FakeClock().now, ttl=ttl)


def test_kubetrain_dev_event_ttl_flag(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(["dev", "--event-ttl", "90"]).event_ttl == 90.0
    assert parser.parse_args(["dev"]).event_ttl == 3600.0
    with pytest.raises(SystemExit):
        parser.parse_args(["dev", "--event-ttl", "-5"])
    err = capsys.readouterr().err
    assert '--event-ttl: invalid value "-5": seconds, 0 (Events never expire) or a positive number' in err
