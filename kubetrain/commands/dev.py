"""`kubetrain dev`: the real operator and webhook against the built-in emulated control plane.

Starts devcluster (the emulated API server), installs the CRDs, runs the admission webhooks,
the controller, the training-progress endpoint (on loopback) and the simulated kubelet, applies
an example job, prints its state and the progress its pods report (commands/_devprogress.py),
and exits 0 when it succeeds (1 when it fails or is refused, 2 on timeout). `--keep-running`
leaves everything up and prints the kubeconfig for kubectl.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from kubetrain.api.cron import KUBEDL_GROUP
from kubetrain.api.gangschedulers import NONE
from kubetrain.api.groups import KUBETRAIN_GROUP, TRAINER_GROUP, group_of
from kubetrain.api.trainer import constants as trainer
from kubetrain.commands._devflags import add_behaviour_flags, devstack_options
from kubetrain.commands._devmanifests import (
    DevError,
    apply_manifest,
    example_names,
    job_ref,
    load_jobs,
)
from kubetrain.commands._devprogress import describe_progress, follow
from kubetrain.commands._flags import GANG_SCHEDULERS, api_groups_arg
from kubetrain.commands._historyflags import add_history_flags
from kubetrain.commands._process import ConfigError, configure_gc, install_stop_signals
from kubetrain.commands.devcron import is_cron, wait_for_first_job
from kubetrain.dashboard.local import local_dashboard
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dev.kubectlcache import forget_discovery
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster.apiserver.storage.compaction import DEFAULT_COMPACTION_INTERVAL
from kubetrain.devcluster.apiserver.storage.eventttl import DEFAULT_EVENT_TTL
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

DEFAULT_EXAMPLE = "pytorch-ddp"
DEFAULT_RUN_SECONDS = 12.0
__all__ = ["describe_progress", "follow"]  # what `kubetrain dev` prints (commands/_devprogress.py)


async def cluster_only(
    out: Any,
    watch_window: int,
    event_ttl: float = DEFAULT_EVENT_TTL,
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL,
) -> int:
    """Serve devcluster alone (no CRDs, webhooks, controller or kubelet) until Ctrl-C: an empty
    cluster for `pytest -m e2e` or for running `kubetrain run` against it by hand."""
    async with DevStack(
        DevStackOptions(
            webhook=False,
            controller=False,
            simulator=False,
            install_crds=False,
            watch_window=watch_window,
            event_ttl=event_ttl,
            compaction_interval=compaction_interval,
        )
    ) as stack:
        print(f"devcluster API server: {stack.cluster.url}", file=out)
        forget_discovery(stack.cluster.url)  # kubectl's, of an earlier cluster on this port
        print(f"kubeconfig: {stack.cluster.kubeconfig_path}", file=out)
        print("Press Ctrl-C to stop.", file=out, flush=True)
        stop = asyncio.Event()
        install_stop_signals(stop)
        await stop.wait()
    return 0


@contextlib.asynccontextmanager
async def dev_dashboard(stack: DevStack, args: argparse.Namespace) -> AsyncIterator[DashboardServer | None]:
    """The web dashboard on loopback, acting as the kubeconfig's user (`--no-dashboard`: none)."""
    if getattr(args, "no_dashboard", False):
        yield None
        return
    async with local_dashboard(
        stack.kube, stack.options.api_groups, getattr(args, "dashboard_port", 0)
    ) as server:
        yield server


def served_groups(args: argparse.Namespace, jobs: list[dict[str, Any]]) -> tuple[str, ...]:
    """--api-groups (default kubetrain.io), plus trainer.kubeflow.org when a manifest is of it."""
    groups = list(getattr(args, "api_groups", None) or (KUBETRAIN_GROUP,))
    if any(group_of(j.get("apiVersion")) == TRAINER_GROUP for j in jobs) and TRAINER_GROUP not in groups:
        groups.append(TRAINER_GROUP)
    if (
        any(is_cron(j) and group_of(j.get("apiVersion")) == KUBEDL_GROUP for j in jobs)
        and KUBEDL_GROUP not in groups
    ):
        groups.append(KUBEDL_GROUP)  # KubeDL's Cron: served when a manifest is one
    return tuple(groups)


async def dev(args: argparse.Namespace, out: Any = sys.stdout, clock: Clock | None = None) -> int:
    """`clock` (None: the real one) paces the simulated kubelet (run-seconds, progress reports),
    the training-progress endpoint's write interval and the `--timeout` of a job (a cron's
    stays on the real clock the cron runs on): tests drive a FakeClock, so that what they
    check does not depend on how loaded the machine is."""
    if args.cluster_only:
        return await cluster_only(out, args.watch_window, args.event_ttl, args.compaction_interval)
    jobs = load_jobs(args)
    options = DevStackOptions(
        default_run_seconds=args.run_seconds,
        gang_scheduler=args.gang_scheduler,
        podgroup_crd=not getattr(args, "no_podgroup_crd", False),
        api_groups=served_groups(args, jobs),
        progress=True,  # the training-progress endpoint: pods get its URL, token and CA
        event_ttl=args.event_ttl,
        compaction_interval=args.compaction_interval,
        simulator_clock=clock,
        progress_clock=clock,
        **devstack_options(args),
    )
    async with DevStack(options) as stack, dev_dashboard(stack, args) as dashboard:
        print(f"devcluster API server: {stack.cluster.url}", file=out)
        forget_discovery(stack.cluster.url)  # kubectl's, of an earlier cluster on this port
        print(f"kubeconfig: {stack.cluster.kubeconfig_path}", file=out, flush=True)
        if dashboard is not None:
            print(f"dashboard: {dashboard.url}", file=out, flush=True)
        accepted: list[dict[str, Any]] = []
        for job in jobs:
            created = await apply_manifest(stack, job, out)
            if created is not None:
                accepted.append(created)
        # Follow the first accepted job (not a runtime); a manifest with none accepted exits 1.
        runs = [
            j
            for j in accepted
            if j.get("kind") not in (trainer.TRAINING_RUNTIME, trainer.CLUSTER_TRAINING_RUNTIME)
        ]
        if runs and is_cron(runs[0]):  # a cron: wait for its first job, then follow that
            started = time.monotonic()
            first = await wait_for_first_job(stack, runs[0], args.timeout, out)
            remaining = args.timeout - (time.monotonic() - started)
            code = await follow(stack, first, job_ref(first), remaining, out) if first is not None else 2
        else:
            ticks = clock or SYSTEM_CLOCK
            code = await follow(stack, runs[0], job_ref(runs[0]), args.timeout, out, ticks) if runs else 1
        if args.keep_running:
            path = stack.cluster.kubeconfig_path
            print(f"\nkubetrain dev is running. Try:\n  kubectl --kubeconfig {path} get kubetrain", file=out)
            if dashboard is not None:
                print(f"  open {dashboard.url} (the web dashboard)", file=out)
            print("Press Ctrl-C to stop.", file=out, flush=True)
            stop = asyncio.Event()
            install_stop_signals(stop)
            with contextlib.suppress(asyncio.CancelledError):
                await stop.wait()
        return code


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        configure_gc()  # devcluster's store is what full collections would traverse
        return asyncio.run(dev(args))
    except DevError as err:
        print(f"kubetrain dev: {err}", file=sys.stderr)
        return err.code
    except ConfigError as err:
        print(f"kubetrain dev: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run kubetrain (operator + webhooks) against a built-in emulated cluster and apply an example",
        description="Start the built-in emulated API server, install the CRDs, run the admission "
        "webhooks, the controller and a simulated kubelet, apply an example job and follow it to "
        "the end. Exit 0 when the job succeeds, 1 when it fails or is refused (or the manifest cannot "
        "be read), 2 on timeout or a bad flag value.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--example",
        default=DEFAULT_EXAMPLE,
        help=f"example under examples/ (default {DEFAULT_EXAMPLE}; valid: {', '.join(example_names())})",
    )
    group.add_argument("-f", "--file", help="apply this job manifest instead of an example")
    parser.add_argument(
        "--run-seconds",
        type=float,
        default=DEFAULT_RUN_SECONDS,
        help=f"how long each simulated container runs before exiting 0 (default {DEFAULT_RUN_SECONDS:g}: "
        "long enough to see the example's reported progress move)",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="give up after this many seconds")
    parser.add_argument(
        "--gang-scheduler",
        choices=GANG_SCHEDULERS,
        default=NONE,
        help="gang-schedule the job: install that scheduler's PodGroup CRD and run a simulated "
        "Volcano / scheduler-plugins that admits and binds whole gangs (default none)",
    )
    parser.add_argument(
        "--no-podgroup-crd",
        action="store_true",
        help="with --gang-scheduler: do not install the PodGroup CRD (the job then waits with "
        "'PodGroup API not installed')",
    )
    parser.add_argument(
        "--api-groups",
        type=api_groups_arg,
        default=[KUBETRAIN_GROUP],
        metavar="GROUP[,GROUP]",
        help="API groups whose job kinds are served: kubetrain.io (default), kubeflow.org (a "
        "Kubeflow manifest applies with no change at all), training.kubedl.io (KubeDL's jobs), "
        "in any combination; trainer.kubeflow.org and apps.kubedl.io are added when a manifest "
        "is of them",
    )
    add_behaviour_flags(parser)
    parser.add_argument(
        "--keep-running", action="store_true", help="leave the cluster up afterwards (Ctrl-C stops it)"
    )
    parser.add_argument(
        "--dashboard-port",
        type=int,
        default=0,
        help="serve the web dashboard on this loopback port (default 0: any free port; the URL is printed)",
    )
    parser.add_argument("--no-dashboard", action="store_true", help="do not serve the web dashboard")
    parser.add_argument(
        "--cluster-only",
        action="store_true",
        help="serve only the emulated API server (no CRDs, webhooks, controller or kubelet) until "
        "Ctrl-C, e.g. as the KUBECONFIG of `pytest -m e2e`",
    )
    add_history_flags(parser)
    parser.set_defaults(func=run)
