"""Long-running processes (`kubetrain webhook`, `controller`, `run`) serve with the garbage
collector's freeze policy installed before the first request: a full collection then skips the
modules, classes and functions loaded at start-up. Without it, each full collection of the
webhook process walks them all, a pause of ~60-70 ms that every in-flight review waits through
(docs/performance.md, "Where /mutate's tail came from")."""

from __future__ import annotations

import argparse
import gc
import logging
from collections.abc import Iterator

import pytest

from kubetrain.commands._process import run_service
from kubetrain.serving import gcfreeze
from kubetrain.webhook import mutate


@pytest.fixture
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gcfreeze.configure({gcfreeze.ENV: "off"})
        gc.unfreeze()
        if enabled:
            gc.enable()


def serve_and_observe(monkeypatch: pytest.MonkeyPatch, value: str | None) -> dict[str, int]:
    if value is None:
        monkeypatch.delenv(gcfreeze.ENV, raising=False)
    else:
        monkeypatch.setenv(gcfreeze.ENV, value)
    seen: dict[str, int] = {}

    async def serve(args: argparse.Namespace) -> None:
        # What a full collection would walk while the service answers requests.
        tracked = {id(obj) for obj in gc.get_objects()}
        seen["code_tracked"] = int(id(mutate.json_patch) in tracked or id(mutate.mutate) in tracked)
        seen["frozen"] = gc.get_freeze_count()

    code = run_service(
        argparse.Namespace(log_level="warning"), serve, logging.getLogger("test"), "the webhook"
    )
    assert code == 0
    return seen


def test_a_service_serves_with_its_start_up_objects_frozen(
    restore_gc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = serve_and_observe(monkeypatch, None)  # the default
    assert seen["frozen"] > 10_000
    assert seen["code_tracked"] == 0


def test_kubetrain_gc_freeze_off_leaves_everything_to_full_collections(
    restore_gc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.unfreeze()
    seen = serve_and_observe(monkeypatch, "off")
    assert seen["frozen"] == 0
    assert seen["code_tracked"] == 1
