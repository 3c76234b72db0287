"""`kubetrain dev --example NAME` runs every example under examples/ (the refusals under
examples/invalid/ aside) to Succeeded (a Trainer v2 TrainJob to Complete): exit 0, its progress
printed."""

from __future__ import annotations

import io
import re

import pytest

from kubetrain.cli import build_parser
from kubetrain.commands._devmanifests import example_names, load_jobs
from kubetrain.commands.dev import dev
from kubetrain.frameworks.registry import known_kinds

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
    training-progress endpoint — at the start, then 5 s later, and the last one, 100 % when
    training ended, before the verdict. The run is 9 s long so that the 5-s report still falls
    inside it when the first report (a TLS handshake and a TokenReview) is slow on a busy machine."""
    args = build_parser().parse_args(["dev", "--example", example, "--run-seconds", "9", "--timeout", "60"])
    out = io.StringIO()
    assert await dev(args, out) == 0, out.getvalue()
    text = out.getvalue()
    percents = [int(p) for p in re.findall(r"^ +progress \[[#.]+\] +(\d+)%  ETA ", text, re.M)]
    assert percents[:1] == [0] and len(percents) >= 3 and 0 < percents[-2] < 100, text
    assert percents == sorted(set(percents)), text  # each report further than the last
    verdict = re.search(r" (Succeeded|Complete): ", text)
    assert percents[-1] == 100 and verdict is not None and text.index("100%  ETA 0:00") < verdict.start(), (
        text
    )
    assert "loss " in out.getvalue()
