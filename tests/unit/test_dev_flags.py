"""`kubetrain dev` takes every `kubetrain run` flag that changes what the operator does, with the
same name, type, default and choices; the rest are listed with a reason
(kubetrain.commands._devflags.RUN_ONLY). A new `kubetrain run` flag fails this test until it is
given to `kubetrain dev` or listed as deployment-only."""

from __future__ import annotations

import argparse

from kubetrain.cli import build_parser
from kubetrain.commands._devflags import RUN_ONLY, SHARED, devstack_options
from kubetrain.dev.stack import DevStackOptions


def options(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    # A flag is its first long option (`--x` of a `--x/--no-x` pair); internal ones (no help) are not
    # user flags.
    return {
        next(s for s in a.option_strings if s.startswith("--")): a
        for a in sub.choices[command]._actions
        if any(s.startswith("--") for s in a.option_strings) and a.help != argparse.SUPPRESS
    }


def test_every_run_flag_is_a_dev_flag_or_deployment_only() -> None:
    run, dev = options("run"), options("dev")
    missing = sorted(f for f in run if f not in dev and f not in RUN_ONLY and f != "--help")
    assert missing == [], f"give these to `kubetrain dev` or list them in RUN_ONLY: {missing}"
    assert not set(RUN_ONLY) & set(dev)
    assert set(RUN_ONLY) <= set(run)
    for flag in [*SHARED, "--gang-scheduler", "--api-groups"]:
        r, d = run[flag], dev[flag]
        assert (r.default, r.type, r.choices, r.nargs, type(r)) == (
            d.default,
            d.type,
            d.choices,
            d.nargs,
            type(d),
        ), flag


def test_the_flags_reach_the_dev_stack() -> None:
    args = build_parser().parse_args(
        [
            "dev",
            "--service-mode",
            "per-pod",
            "--scheduler-name",
            "my-sched",
            "--max-replicas-per-job",
            "2",
            "--no-training-policies",
            "--namespaces",
            "team-a,team-b",
            "--workers",
            "7",
        ]
    )
    opts = DevStackOptions(**devstack_options(args))
    assert (opts.service_mode, opts.scheduler_name, opts.max_replicas) == ("per-pod", "my-sched", 2)
    assert (opts.training_policies, opts.namespaces, opts.workers) == (False, ("team-a", "team-b"), 7)
    defaults = DevStackOptions(**devstack_options(build_parser().parse_args(["dev"])))
    assert defaults == DevStackOptions()
