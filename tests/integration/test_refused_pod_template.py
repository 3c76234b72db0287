"""A job whose pod template kube-apiserver's pod validation refuses: every create of those pods
is answered 422, and the job says so — one Running=False `FailedCreatePod` condition and one
Warning event carrying the API server's message — instead of waiting in silence. devcluster
refuses such a pod as a cluster does (kinds/probevalidation.py), so `kubetrain dev` shows the
same path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack

from .controller_support import Harness, condition, eventually, job_manifest, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

REFUSAL = (
    "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack():
        yield pair


def running_false(job: dict[str, Any]) -> bool:
    cond = condition(job, "Running")
    return cond is not None and cond["status"] == "False" and cond["reason"] == "FailedCreatePod"


async def test_a_worker_template_with_an_invalid_probe_gets_the_refusal_as_condition_and_event(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("badprobe")
    job = job_manifest("PyTorchJob", "probe", {"Master": 1, "Worker": 2})
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["livenessProbe"] = {"exec": {"command": ["true"]}, "periodSeconds": -1}
    await h.create_job(job, ns)
    stored = await h.wait_job("PyTorchJob", ns, "probe", running_false, "Running=False FailedCreatePod")
    message = (condition(stored, "Running") or {})["message"]
    assert 'Pod "probe-worker-0" is invalid' in message and REFUSAL in message

    async def refusals() -> list[dict[str, Any]]:
        return [e for e in await h.events(ns, "probe") if e.get("reason") == "FailedCreatePod"]

    refused = await eventually(refusals, what="the FailedCreatePod event")
    assert len(refused) == 1 and refused[0]["type"] == "Warning" and REFUSAL in refused[0]["message"]
    # The master's template is valid: its pod exists; no worker pod was stored.
    assert sorted(p["metadata"]["name"] for p in await h.pods(ns, "probe")) == ["probe-master-0"]
