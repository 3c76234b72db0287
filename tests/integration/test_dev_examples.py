"""`kubetrain dev --example NAME` runs every example under examples/ (the refusals under
examples/invalid/ aside) to Succeeded (a Trainer v2 TrainJob to Complete): exit 0, its progress
printed."""

from __future__ import annotations

import asyncio
import io
import re
from datetime import UTC, datetime

import pytest

from kubetrain.cli import build_parser
from kubetrain.commands._devmanifests import example_names, load_jobs
from kubetrain.commands.dev import dev
from kubetrain.frameworks.registry import known_kinds
from kubetrain.kube.clock import FakeClock

from .controller_support import WAIT, eventually

RUNNABLE = [name for name in example_names() if not name.startswith("invalid/")]


def test_every_kind_has_a_runnable_example() -> None:
    kinds = {
        job["kind"]
        for name in RUNNABLE
        for job in load_jobs(build_parser().parse_args(["dev", "--example", name]))
    }
    assert kinds == {*known_kinds(), "TrainJob", "ClusterTrainingRuntime"}


@pytest.mark.parametrize("example", RUNNABLE)
async def test_example_runs_to_succeeded(example: str) -> None:
    args = build_parser().parse_args(["dev", "--example", example, "--run-seconds", "0.2", "--timeout", "60"])
    out = io.StringIO()
    assert await dev(args, out) == 0, out.getvalue()
    assert " Succeeded: " in out.getvalue() or " Complete: jobset completed successfully" in out.getvalue()


@pytest.mark.parametrize("example", ["pytorch-ddp", "trainer/trainjob-torch"])
async def test_the_reporting_examples_print_their_rising_progress(example: str) -> None:
    """The examples whose training loop reports (and whose pods carry the simulated kubelet's
    report-progress annotation): `kubetrain dev` prints the reports as they arrive through the
    training-progress endpoint — at the start, 5 s later, and the last one, 100 % when training
    ended, before the verdict. The kubelet and the endpoint run on a FakeClock the test moves
    only once the previous report is printed, so a busy machine changes no percentage."""
    args = build_parser().parse_args(["dev", "--example", example, "--run-seconds", "9", "--timeout", "60"])
    out = io.StringIO()
    clock = FakeClock(start=datetime.now(UTC))  # lastUpdatedTime stays near the controller's time
    run = asyncio.create_task(dev(args, out, clock=clock))
    try:
        await printed(run, out, [0])
        # The pod's reporting loop sleeps its 5 s (the SDK's interval) after the first report.
        await eventually(lambda: clock.next_deadline() == 5.0, what="the reporting loop's next report")
        await clock.advance(5)
        await printed(run, out, [0, 55])  # 5 of 9 s
        await clock.advance(4)  # the run ends: the last report, then the pod succeeds
        assert await asyncio.wait_for(run, WAIT) == 0, out.getvalue()
    finally:
        run.cancel()
    text = out.getvalue()
    assert percents(text) == [0, 55, 100], text
    verdict = re.search(r" (Succeeded|Complete): ", text)
    assert verdict is not None and text.index("100%  ETA 0:00") < verdict.start(), text
    assert "loss " in text


def percents(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"^ +progress \[[#.]+\] +(\d+)%  ETA ", text, re.M)]


async def printed(run: asyncio.Task[int], out: io.StringIO, expected: list[int]) -> None:
    """Wait until `kubetrain dev` printed the progress bars `expected` (failing at once if it
    ended or printed others)."""

    def check() -> bool:
        seen = percents(out.getvalue())
        if run.done() or seen != expected[: len(seen)]:
            pytest.fail(f"expected the progress {expected} printed, got {seen}:\n{out.getvalue()}")
        return seen == expected

    await eventually(check, what=lambda: f"progress {expected} printed; printed:\n{out.getvalue()}")
