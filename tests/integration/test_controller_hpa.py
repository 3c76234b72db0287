"""The HorizontalPodAutoscaler of an elastic PyTorchJob with `elasticPolicy.metrics`
(docs/behaviour.md §4/§7), end to end on devcluster: created with the job as scale target and the
elasticPolicy's bounds and metrics, replaced when the job's maxReplicas changes, deleted when the
job finishes; a job without metrics gets none."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import HORIZONTAL_POD_AUTOSCALERS, job_resource

from .controller_support import CONTROLLER_USER_AGENT, Harness, eventually, job_manifest

PYTORCHJOBS = job_resource("PyTorchJob")

pytestmark = pytest.mark.asyncio(loop_scope="module")

HPA = HORIZONTAL_POD_AUTOSCALERS
CPU = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
    }
]


def elastic_job(name: str, metrics: list[dict[str, Any]] | None) -> dict[str, Any]:
    policy: dict[str, Any] = {"minReplicas": 1, "maxReplicas": 3}
    if metrics is not None:
        policy["metrics"] = metrics
    return job_manifest("PyTorchJob", name, {"Worker": 2}, extra_spec={"elasticPolicy": policy})


async def test_hpa_api_is_served(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    assert await h.kube.has_api("autoscaling", "v2", "horizontalpodautoscalers")


async def test_elastic_job_with_metrics_gets_an_hpa_updated_and_deleted_with_it(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("hpa")
    created = await h.create_job(elastic_job("el", CPU), ns)
    hpa = await eventually(lambda: h.get(HPA, ns, "el"), what="HPA el created")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "name": "el",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert hpa["spec"]["metrics"] == CPU
    meta = hpa["metadata"]
    assert meta["labels"]["kubetrain.io/job-name"] == "el"
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "kubetrain"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "PyTorchJob",
        "el",
        created["metadata"]["uid"],
        True,
    )
    await h.wait_pods(ns, "el", 2)

    # A new maxReplicas replaces the HPA's spec (one PUT, with the resourceVersion it saw).
    h.requests.reset()
    await h.kube.patch(PYTORCHJOBS, ns, "el", {"spec": {"elasticPolicy": {"maxReplicas": 5}}})

    async def updated() -> dict[str, Any] | None:
        obj = await h.get(HPA, ns, "el")
        return obj if obj is not None and obj["spec"]["maxReplicas"] == 5 else None

    hpa = await eventually(updated, what="HPA el maxReplicas 5")
    assert hpa["spec"]["minReplicas"] == 1 and hpa["spec"]["metrics"] == CPU
    assert hpa["metadata"]["uid"] == meta["uid"]  # replaced in place, not recreated
    puts = [
        r
        for r in h.requests.records
        if r.user_agent.startswith(CONTROLLER_USER_AGENT) and r.resource == "horizontalpodautoscalers"
    ]
    assert [r.verb for r in puts] == ["update"]

    # Finishing the job deletes its HPA (the job itself stays).
    await h.sim.finish(ns, "el-worker-0")
    await h.wait_condition("PyTorchJob", ns, "el", "Succeeded")
    await eventually(lambda: h.absent(HPA, ns, "el"), what="HPA el deleted")
    assert await h.job("PyTorchJob", ns, "el") is not None


async def test_job_without_metrics_gets_no_hpa(env: tuple[DevStack, Harness]) -> None:
    stack, h = env
    ns = await h.namespace("nohpa")
    await h.create_job(elastic_job("plain", None), ns)
    await h.wait_pods(ns, "plain", 2)
    await h.wait_condition("PyTorchJob", ns, "plain", "Running")
    controller = stack.controller
    assert controller is not None
    await eventually(lambda: len(controller.queue) == 0, what="work queue drained")
    assert await h.absent(HPA, ns, "plain")
    page = await h.kube.list(HPA, ns)
    assert page["items"] == []


async def test_removing_the_metrics_deletes_the_hpa(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("rmhpa")
    await h.create_job(elastic_job("rm", CPU), ns)
    await eventually(lambda: h.get(HPA, ns, "rm"), what="HPA rm created")
    await h.kube.patch(PYTORCHJOBS, ns, "rm", {"spec": {"elasticPolicy": {"metrics": None}}})
    await eventually(lambda: h.absent(HPA, ns, "rm"), what="HPA rm deleted")
