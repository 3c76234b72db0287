"""`kubetrain dev --example NAME` runs every example under examples/ (the refusals under
examples/invalid/ aside) to Succeeded (a Trainer v2 TrainJob to Complete): exit 0, its progress
printed."""

from __future__ import annotations

import io

import pytest

from kubetrain.cli import build_parser
from kubetrain.commands.dev import dev, example_names, load_jobs
from kubetrain.frameworks.registry import known_kinds

RUNNABLE = [name for name in example_names() if not name.startswith("invalid/")]


def test_every_kind_has_a_runnable_example() -> None:
    kinds = {
        job["kind"]
        for name in RUNNABLE
        for job in load_jobs(build_parser().parse_args(["dev", "--example", name]))
    }
    assert kinds == {*known_kinds(), "TrainJob"}


@pytest.mark.parametrize("example", RUNNABLE)
async def test_example_runs_to_succeeded(example: str) -> None:
    args = build_parser().parse_args(["dev", "--example", example, "--run-seconds", "0.2", "--timeout", "60"])
    out = io.StringIO()
    assert await dev(args, out) == 0, out.getvalue()
    assert " Succeeded: " in out.getvalue() or " Complete: jobset completed successfully" in out.getvalue()
