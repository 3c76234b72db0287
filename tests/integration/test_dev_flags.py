"""`kubetrain dev` with the operator-behaviour flags a real install has (`kubetrain run`'s, the
chart's values): each changes what the emulated install does, end to end."""

from __future__ import annotations

import io

from kubetrain.cli import build_parser
from kubetrain.commands._devflags import devstack_options
from kubetrain.commands.dev import dev
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import NAMESPACES, PODS, SERVICES

from .controller_support import Harness, eventually, job_manifest


async def run_dev(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = await dev(build_parser().parse_args(["dev", "--run-seconds", "0.2", *argv]), out)
    return code, out.getvalue()


async def test_max_replicas_per_job_refuses_a_job_over_it() -> None:
    code, out = await run_dev("--example", "pytorch-ddp", "--max-replicas-per-job", "2", "--timeout", "30")
    assert code == 1, out
    assert "replicas" in out and "2" in out


async def test_scheduler_name_and_per_pod_services_reach_the_pods() -> None:
    args = build_parser().parse_args(["dev", "--service-mode", "per-pod", "--scheduler-name", "my-sched"])
    stack = DevStack(DevStackOptions(**devstack_options(args)))
    await stack.start()
    h = await Harness.open(stack)
    try:
        ns = await h.namespace("devflags")
        await h.create_job(job_manifest("PyTorchJob", "ddp", {"Master": 1, "Worker": 1}), ns)
        pods = await h.wait_pods(ns, "ddp", 2)  # Running: the simulated kubelet played my-sched
        assert {p["spec"]["schedulerName"] for p in pods} == {"my-sched"}

        async def per_pod_services() -> list[str] | None:
            page = await h.kube.list(SERVICES, ns)
            names = sorted(s["metadata"]["name"] for s in page["items"])
            return names if names == ["ddp-master-0", "ddp-worker-0"] else None

        await eventually(per_pod_services, what="one Service per pod, none for the job")
    finally:
        await h.close()
        await stack.stop()


async def test_namespaces_limits_what_the_controller_reconciles() -> None:
    args = build_parser().parse_args(["dev", "--namespaces", "watched"])
    stack = DevStack(DevStackOptions(**devstack_options(args)))
    await stack.start()
    h = await Harness.open(stack)
    try:
        other = await h.namespace("unwatched")
        created = await h.create_job(job_manifest("PyTorchJob", "ddp", {"Master": 1}), other)
        assert created["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"  # admitted (webhooks see all)
        await h.kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "watched"}}
        )
        await h.create_job(job_manifest("PyTorchJob", "ddp", {"Master": 1}), "watched")
        await h.wait_pods("watched", "ddp", 1)  # the controller runs, in its namespace
        assert (await h.kube.list(PODS, other))["items"] == []
        assert (await h.job("PyTorchJob", other, "ddp") or {}).get("status") is None  # never reconciled
    finally:
        await h.close()
        await stack.stop()
