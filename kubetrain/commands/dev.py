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
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.cron import KUBEDL_GROUP
from kubetrain.api.errors import QUOTE
from kubetrain.api.gangschedulers import NONE
from kubetrain.api.groups import JOB_GROUP_VERSIONS, JOB_GROUPS, KUBETRAIN_GROUP, TRAINER_GROUP, group_of
from kubetrain.api.manifests import load_all, yaml_problem
from kubetrain.api.trainer import constants as trainer
from kubetrain.commands._devflags import add_behaviour_flags, devstack_options
from kubetrain.commands._devprogress import describe_progress, follow
from kubetrain.commands._flags import GANG_SCHEDULERS, api_groups_arg
from kubetrain.commands._historyflags import add_history_flags
from kubetrain.commands._process import ConfigError, configure_gc, install_stop_signals
from kubetrain.commands.devcron import cron_ref, is_cron, wait_for_first_job
from kubetrain.dashboard.local import local_dashboard
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dev.kubectlcache import forget_discovery
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster.apiserver.storage.compaction import DEFAULT_COMPACTION_INTERVAL
from kubetrain.devcluster.apiserver.storage.eventttl import DEFAULT_EVENT_TTL
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    NAMESPACES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    ResourceRef,
    job_resource_id,
    job_resources_in,
)

# Kubeflow Trainer v2's kinds (applied as they are; `kubetrain dev` serves the group when a
# manifest is of it).
TRAINER_REFS = {ref.kind: ref for ref in (TRAINJOBS, TRAINING_RUNTIMES, CLUSTER_TRAINING_RUNTIMES)}

log = logging.getLogger(__name__)

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
DEFAULT_EXAMPLE = "pytorch-ddp"
DEFAULT_RUN_SECONDS = 12.0
__all__ = ["describe_progress", "follow"]  # what `kubetrain dev` prints (commands/_devprogress.py)


def example_names() -> list[str]:
    if not EXAMPLES_DIR.is_dir():
        return []
    names = [p.stem for p in sorted(EXAMPLES_DIR.glob("*.yaml"))]
    names += [f"trainer/{p.stem}" for p in sorted((EXAMPLES_DIR / "trainer").glob("*.yaml"))]
    names += [f"invalid/{p.stem}" for p in sorted((EXAMPLES_DIR / "invalid").glob("*.yaml"))]
    return names


class DevError(Exception):
    """Bad input to `kubetrain dev`; the message says what is valid. `code` is the exit code:
    2 for a bad flag value (as argparse), 1 for a manifest that cannot be read (as `kubetrain
    validate` and `render` exit for one, and as `dev` exits for a refused job)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def load_jobs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The manifests to apply: every document of the example or file, in order."""
    if args.file:
        path = Path(args.file)
    else:
        path = EXAMPLES_DIR / f"{args.example}.yaml"
        if not path.is_file():
            valid = ", ".join(example_names()) or f"none found in {EXAMPLES_DIR}"
            raise DevError(
                f"--example {QUOTE.encode(args.example)}: no such example (valid: {valid})", code=2
            )
    try:
        docs = [d for d in load_all(path.read_text()) if d is not None]
    except FileNotFoundError:
        raise DevError(f"{path}: cannot read: no such file") from None
    except IsADirectoryError:
        raise DevError(f"{path}: cannot read: is a directory") from None
    except UnicodeDecodeError:
        raise DevError(f"{path}: cannot read: not UTF-8 text") from None
    except OSError as err:
        raise DevError(f"{path}: cannot read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise DevError(f"{path}: not valid YAML: {yaml_problem(err)}") from None
    if not docs:
        raise DevError(f"{path}: no manifest in it (expected a job as a YAML mapping)")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise DevError(
                f"{path}: document {i + 1} is a {type(doc).__name__}, not a manifest (a YAML mapping)"
            )
    return docs


def job_ref(job: dict[str, Any]) -> ResourceRef:
    """The API resource of a job manifest, by its kind and its apiVersion's group (kubetrain.io/v1,
    kubeflow.org/v1 or training.kubedl.io/v1alpha1); KeyError says what is valid."""
    kind = str(job.get("kind"))
    api_version = str(job.get("apiVersion") or "")
    group = api_version.split("/")[0] if "/" in api_version else KUBETRAIN_GROUP
    if group == TRAINER_GROUP and kind in TRAINER_REFS:
        return TRAINER_REFS[kind]
    if is_cron(job):
        ref: ResourceRef = cron_ref(job)
        return ref
    refs = job_resources_in(JOB_GROUPS)
    try:
        return refs[job_resource_id(kind, group)]
    except KeyError:
        kinds = sorted({ref.kind for ref in refs.values()})
        raise KeyError(
            f"unknown job {QUOTE.encode(kind)} of {api_version or 'no apiVersion'}; known kinds: "
            f"{', '.join(kinds)} "
            f"of {', '.join(JOB_GROUP_VERSIONS)}"
        ) from None


def manifest_label(job: dict[str, Any], namespaced: bool = True) -> str:
    """`PyTorchJob kubeflow/mnist`, `PyTorchJob kubeflow/mnist-*` for a generateName, or
    `ClusterTrainingRuntime flux-distributed` for a cluster-scoped object."""
    raw = job.get("metadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else "(no name)")
    return (
        f"{job.get('kind')} {meta.get('namespace') or 'default'}/{name}"
        if namespaced
        else f"{job.get('kind')} {name}"
    )


async def ensure_namespace(stack: DevStack, namespace: str, out: Any) -> None:
    """Create the manifest's namespace when it is missing, as a user would with
    `kubectl create namespace` before `kubectl apply` (Kubeflow's examples use `kubeflow`)."""
    try:
        await stack.kube.get(NAMESPACES, None, namespace)
    except ApiError as err:
        if err.status != 404:
            raise
        await stack.kube.create(NAMESPACES, {"metadata": {"name": namespace}})
        print(
            f"created namespace {namespace} (as `kubectl create namespace {namespace}` would)",
            file=out,
            flush=True,
        )


def unserved_group(job: dict[str, Any], served: tuple[str, ...]) -> str:
    """Why a job of a job group the cluster does not serve cannot be created (the API server
    would only say "the server could not find the requested resource"), naming the flag that
    serves it; empty when its group is served."""
    group = group_of(job.get("apiVersion"))
    if group not in JOB_GROUPS or group in served:
        return ""
    flag = ",".join((*served, group))
    return f"{group} is not served: add it with `--api-groups {flag}` (the chart's apiGroups)"


async def apply_manifest(stack: DevStack, job: dict[str, Any], out: Any) -> dict[str, Any] | None:
    """Create one manifest as `kubectl create -f` does: unknown fields are an error
    (fieldValidation=Strict) and the server's warnings are printed. The created job, or None
    when it is refused."""
    metadata = job.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        print(f"{job.get('kind')}: metadata must be a mapping (name, namespace, …)", file=out, flush=True)
        return None
    warnings: list[str] = []
    refusal = ""
    try:
        ref = job_ref(job)
    except KeyError as err:
        print(f"cannot apply: {err.args[0]}", file=out, flush=True)
        return None
    unserved = unserved_group(job, stack.options.api_groups)
    if unserved:
        print(f"{manifest_label(job, ref.namespaced)} refused: {unserved}", file=out, flush=True)
        return None
    namespace = metadata.setdefault("namespace", "default") if ref.namespaced else None
    try:
        if namespace is not None:
            await ensure_namespace(stack, str(namespace), out)
        created: dict[str, Any] = await stack.kube.create(
            ref, job, namespace=namespace, field_validation="Strict", warnings=warnings
        )
    except ApiError as err:
        created = {}
        refusal = f"{manifest_label(job, ref.namespaced)} refused: {err.message}"
    for warning in warnings:
        print(f"Warning: {warning}", file=out, flush=True)
    if not created:
        print(refusal, file=out, flush=True)
        return None
    print(f"applied {manifest_label(created, ref.namespaced)}", file=out, flush=True)
    return created


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


async def dev(args: argparse.Namespace, out: Any = sys.stdout) -> int:
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
            code = await follow(stack, runs[0], job_ref(runs[0]), args.timeout, out) if runs else 1
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
