"""A PodDisruptionBudget over a training job's workers, honoured by the Eviction API (what
`kubectl drain` uses): an eviction the budget allows marks the pod DisruptionTarget and deletes
it, and kubetrain recreates it without counting a restart (docs/behaviour.md §6); one more while
it is not back is refused with 429 and upstream's message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubetrain.api.labels import LABEL_JOB_NAME, LABEL_REPLICA_TYPE
from kubetrain.dev.stack import DevStack

from .controller_support import Harness, eventually, is_true, job_manifest, replica_status

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_budget_allows_one_eviction_and_the_pod_comes_back_uncounted(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    raw = h.sim.api
    ns = await h.namespace("pdb")
    pdbs = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
    pods_path = f"/api/v1/namespaces/{ns}/pods"
    await h.create_job(job_manifest("PyTorchJob", "pe", {"Master": 1, "Worker": 3}), ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "pe", 4)}
    await h.wait_condition("PyTorchJob", ns, "pe", "Running")
    selector = {"matchLabels": {LABEL_JOB_NAME: "pe", LABEL_REPLICA_TYPE: "worker"}}
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "workers"},
        "spec": {"minAvailable": 2, "selector": selector},
    }
    code, body = await raw.request("POST", pdbs, body=budget)
    assert code == 201, body

    async def allowed() -> Any:
        _, current = await raw.request("GET", f"{pdbs}/workers")
        status = current.get("status") or {}
        return status if status.get("currentHealthy") == 3 and status.get("disruptionsAllowed") == 1 else None

    status = await eventually(allowed, what="the budget's status: 3 healthy workers, 1 disruption allowed")
    assert (status["desiredHealthy"], status["expectedPods"]) == (2, 3)

    # Watch the pods from now on, to see the evicted pod's last state before it is gone.
    _, listed = await raw.request("GET", pods_path)
    seen: list[dict[str, Any]] = []

    async def watch() -> None:
        query = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
        async for event in raw.stream(pods_path, query):
            seen.append(event["object"])

    watcher = asyncio.create_task(watch())
    try:
        evict = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "pe-worker-0"}}
        code, body = await raw.request("POST", f"{pods_path}/pe-worker-0/eviction", body=evict)
        assert code == 201, body
        evict["metadata"]["name"] = "pe-worker-1"
        code, body = await raw.request("POST", f"{pods_path}/pe-worker-1/eviction", body=evict)
        assert code == 429, body
        assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
        [cause] = body["details"]["causes"]
        assert cause["reason"] == "DisruptionBudget"
        assert cause["message"] == "The disruption budget workers needs 2 healthy pods and has 2 currently"

        await h.wait_recreated(ns, "pe-worker-0", pods["pe-worker-0"]["metadata"]["uid"])
        old_uid = pods["pe-worker-0"]["metadata"]["uid"]
        marked = [
            c
            for p in seen
            if p["metadata"]["uid"] == old_uid
            for c in (p.get("status") or {}).get("conditions") or []
            if c["type"] == "DisruptionTarget"
        ]
        assert marked and (marked[0]["status"], marked[0]["reason"]) == ("True", "EvictionByEvictionAPI")
    finally:
        watcher.cancel()
    worker_1 = await h.pod(ns, "pe-worker-1")
    assert worker_1 is not None and worker_1["metadata"]["uid"] == pods["pe-worker-1"]["metadata"]["uid"]

    job = await h.wait_condition("PyTorchJob", ns, "pe", "Running")
    assert not is_true(job, "Failed")
    assert replica_status(job, "Worker").get("restarts", 0) == 0  # a disruption is not counted
    # Once the new pod is Ready the budget allows a disruption again.
    await eventually(allowed, what="the budget allowing a disruption again")
