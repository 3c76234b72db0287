"""`kubetrain run --status-server-process`: the training-progress endpoint served by a child
process (`kubetrain status-server`) with its own informers. A pod's report moves the job's
status through the child; the parent's /metrics adds the child's report histogram and exports
the progress gauges from the job's status; the child is restarted when it dies; another job's
pod is refused by the child as by the in-process endpoint."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families
from serving import free_port

from kubetrain.api import trainerstatus as ts
from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.cli import build_parser
from kubetrain.commands import run as run_command
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import NAMESPACES, job_resource
from kubetrain.serving.metrics import REGISTRY

from .controller_support import eventually, job_manifest, pod_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
WITHIN = 120.0  # a child process starts in ~1 s; this bounds a loaded 2-core machine
NS = "reports"


class Operator:
    def __init__(self, stack: DevStack, tmp: Path) -> None:
        self.stack = stack
        self.cert_dir = tmp / "certs"
        bundle = generate_bundle(["localhost"], ["127.0.0.1"])
        write_cert_dir(self.cert_dir, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
        self.ssl = ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
        self.status_port, self.metrics_port = free_port(), free_port()
        self.args = build_parser().parse_args(
            [
                "run",
                f"--kubeconfig={stack.cluster.kubeconfig_path}",
                "--no-leader-elect",
                "--no-training-policies",
                f"--cert-dir={self.cert_dir}",
                "--webhook-host=127.0.0.1",
                f"--webhook-port={free_port()}",
                "--metrics-bind-address=127.0.0.1",
                f"--metrics-port={self.metrics_port}",
                f"--status-server-port={self.status_port}",
                f"--status-server-url=https://127.0.0.1:{self.status_port}",
                "--status-server-interval=0.2",
                "--status-server-process",
            ]
        )
        self.stop = asyncio.Event()

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as resp,
        ):
            text = await resp.text()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def op(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Operator]:
    stack = DevStack(DevStackOptions(webhook=False, controller=False, simulated_nodes=2))
    await stack.start()
    operator = Operator(stack, tmp_path_factory.mktemp("status-process"))
    task = asyncio.create_task(run_command.serve(operator.args, operator.stop))
    try:
        await eventually(status_servers, within=WITHIN, what="the status-server child")
        await stack.kube.create(NAMESPACES, {"metadata": {"name": NS}})
        yield operator
    finally:
        operator.stop.set()
        await asyncio.wait_for(task, 60)
        await stack.stop()


def status_servers() -> list[int]:
    """This process's children running `kubetrain status-server`."""
    pids: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            # A thread may end between listing the tasks and reading its children.
            children = (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        for pid in children:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except FileNotFoundError:
                continue
            if b"status-server" in argv:
                pids.append(int(pid))
    return pids


async def running_job(op: Operator, name: str) -> Obj:
    """A one-worker PyTorchJob whose master pod runs; that pod, as the API server has it."""
    await op.stack.kube.create(
        job_resource("PyTorchJob"), job_manifest("PyTorchJob", name, {"Master": 1}), NS
    )

    async def running() -> Obj | None:
        pod = op.stack.cluster.get_object("pods", NS, f"{name}-master-0")
        return pod if pod and (pod.get("status") or {}).get("phase") == "Running" else None

    pod: Obj = await eventually(running, within=WITHIN, what=f"{name}'s pod running")
    return pod


async def post(op: Operator, pod: Obj, body: Obj, url: str | None = None) -> int:
    """The answer's status code (0: nothing listens yet — the child is starting)."""
    assert op.stack.simulator is not None
    files = await op.stack.simulator.files(NS, pod["metadata"]["name"])
    token = files[f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = url or pod_env(pod)[ts.ENV_URL]
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=json.dumps(body), headers=headers, ssl=op.ssl) as r,
        ):
            return r.status
    except aiohttp.ClientConnectorError:
        return 0


def own_reports() -> float:
    """The reports this (the parent's) process answered 200."""
    return REGISTRY.get_sample_value("kubetrain_status_report_duration_seconds_count", {"code": "200"}) or 0.0


def reports(samples: dict[Any, float], code: str) -> float:
    return samples.get(("kubetrain_status_report_duration_seconds_count", (("code", code),)), 0.0)


async def test_the_parent_is_ready_when_the_child_serves(op: Operator) -> None:
    async def verbose() -> str:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{op.metrics_port}/readyz?verbose") as resp,
        ):
            return await resp.text()

    async def ready() -> bool:
        return "[+]progress-endpoint ok" in await verbose()

    await eventually(ready, within=WITHIN, what="the child's /readyz through the parent's")


async def test_a_report_moves_the_status_through_the_child(op: Operator) -> None:
    pod = await running_job(op, "first")
    before = await op.metrics()
    own = own_reports()

    async def accepted() -> bool:  # 503 until the child's informers have the pod
        return await post(op, pod, {"trainerStatus": {"progressPercentage": 42}}) == 200

    await eventually(accepted, within=WITHIN, what="the child accepting the report")

    async def written() -> Obj | None:
        job = op.stack.cluster.get_object("pytorchjobs", NS, "first", "kubetrain.io")
        status = ((job or {}).get("status") or {}).get("trainerStatus") or {}
        return job if status.get("progressPercentage") == 42 else None

    await eventually(written, within=WITHIN, what="status.trainerStatus written")
    # The report was served by the child: this process counted none; its /metrics adds the child's.
    assert (
        REGISTRY.get_sample_value("kubetrain_status_report_duration_seconds_count", {"code": "200"}) or 0
    ) == own
    after = await op.metrics()
    assert reports(after, "200") >= reports(before, "200") + 1
    labels = (("kind", "PyTorchJob"), ("name", "first"), ("namespace", NS))

    async def gauge() -> bool:  # the parent's controller exports it from the job's status
        return (await op.metrics()).get(("kubetrain_job_progress_ratio", labels)) == 0.42

    await eventually(gauge, within=WITHIN, what="the progress gauge in the parent's /metrics")


async def test_another_jobs_pod_is_refused_by_the_child(op: Operator) -> None:
    mine, other = await running_job(op, "mine"), await running_job(op, "other")
    url = pod_env(mine)[ts.ENV_URL]

    async def answered() -> int | None:
        code = await post(op, other, {"trainerStatus": {"progressPercentage": 5}}, url=url)
        return code if code not in (0, 503) else None

    assert await eventually(answered, within=WITHIN, what="an answer from the child") == 403
    job = op.stack.cluster.get_object("pytorchjobs", NS, "mine", "kubetrain.io")
    assert not ((job or {}).get("status") or {}).get("trainerStatus")


async def test_the_child_is_restarted_when_it_dies(op: Operator) -> None:
    [pid] = status_servers()
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: status_servers() not in ([], [pid]), within=WITHIN, what="a new child")
    pod = await running_job(op, "after")

    async def accepted() -> bool:
        return await post(op, pod, {"trainerStatus": {"progressPercentage": 7}}) == 200

    await eventually(accepted, within=WITHIN, what="the new child accepting reports")
