"""No write storms on namespace deletion and name reuse: the operator sends no creates into a
terminating namespace (kube answers 403 NamespaceTerminating) beyond the first that finds out,
writes no Event there, and never POSTs a pod whose name an older pod still holds (no stream of
409 AlreadyExists). devcluster's namespace controller is paced so that, as on a busy
kube-apiserver, a namespace's pods go one by one while its jobs still exist."""

from __future__ import annotations

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import NAMESPACES, PODS, SERVICES, job_resource
from kubetrain.serving.metrics import REGISTRY

from .controller_support import (
    CONTROLLER_USER_AGENT,
    Harness,
    eventually,
    is_true,
    job_manifest,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

WORKERS = 15  # + 1 master


STACK_OPTIONS = {"webhook": False, "training_policies": False}


def creates(code: str) -> float:
    """Creates answered `code`, by every KubeClient of this process (only the controller's fail)."""
    return REGISTRY.get_sample_value("kubetrain_api_requests_total", {"verb": "create", "code": code}) or 0.0


def controller_creates(h: Harness, ns: str, resource: str) -> int:
    return h.requests.count(verb="create", resource=resource, user_agent=CONTROLLER_USER_AGENT, namespace=ns)


async def run_job(h: Harness, ns: str, name: str) -> None:
    await h.create_job(job_manifest("PyTorchJob", name, {"Master": 1, "Worker": WORKERS}), ns)
    await h.wait_pods(ns, name, WORKERS + 1)
    await h.wait_condition("PyTorchJob", ns, name, "Running")


async def namespace_gone(h: Harness, ns: str) -> bool:
    try:
        await h.kube.get(NAMESPACES, None, ns)
    except ApiError as err:
        if err.is_not_found:
            return True
        raise
    return False


async def delete_namespace(stack: DevStack, h: Harness, ns: str) -> None:
    stack.cluster.controllers.namespace_delete_interval = 0.05  # pods go one by one, jobs last
    try:
        await h.kube.delete(NAMESPACES, None, ns)
        await eventually(lambda: namespace_gone(h, ns), what=f"namespace {ns} gone")
    finally:
        stack.cluster.controllers.namespace_delete_interval = 0.0


async def test_deleting_the_namespace_of_a_running_job_creates_nothing_into_it(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    ns = await h.namespace("nsdel")
    await run_job(h, ns, "big")
    pods_before, events_before = controller_creates(h, ns, "pods"), controller_creates(h, ns, "events")
    forbidden_before = creates("403")

    await delete_namespace(stack, h, ns)

    # At most the one create that finds the namespace terminating; no Event written into it.
    assert controller_creates(h, ns, "pods") - pods_before <= 1
    assert creates("403") - forbidden_before <= 1
    assert controller_creates(h, ns, "events") - events_before == 0


async def test_recreating_the_namespace_and_the_job_sends_no_already_exists(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    ns = "cycle"
    exists_before, forbidden_before = creates("409"), creates("403")
    for _ in range(2):
        await h.kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        h.requests.reset()
        await run_job(h, ns, "same")
        assert controller_creates(h, ns, "pods") == WORKERS + 1  # each pod once, none refused
        await delete_namespace(stack, h, ns)
    assert creates("409") - exists_before == 0
    assert creates("403") - forbidden_before <= 2  # at most one per namespace deletion


async def test_a_new_job_waits_for_the_old_pods_holding_its_pod_names(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("reuse")
    await run_job(h, ns, "same")
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await h.pods(ns, "same")}
    # The job goes, its pods stay (orphaned, as pods of a deleted job do while they terminate):
    # they hold the names the next job of that name wants.
    await h.kube.delete(job_resource("PyTorchJob"), ns, "same", propagation_policy="Orphan")
    await eventually(lambda: h.absent(job_resource("PyTorchJob"), ns, "same"), what="old job gone")

    async def orphaned() -> bool:
        return all(not p["metadata"].get("ownerReferences") for p in await h.pods(ns, "same"))

    await eventually(orphaned, what="old pods orphaned")
    await h.kube.delete(SERVICES, ns, "same")  # the orphaned Service would block the new job
    exists_before = creates("409")
    h.requests.reset()
    await h.create_job(job_manifest("PyTorchJob", "same", {"Master": 1, "Worker": WORKERS}), ns)
    await h.wait_job("PyTorchJob", ns, "same", lambda j: is_true(j, "Created"), "condition Created=True")
    assert controller_creates(h, ns, "pods") == 0  # every name is taken: nothing sent

    for name in old:  # the old pods go; the new job gets its own, each created once
        await h.kube.delete(PODS, ns, name)
    await run_job_pods_replaced(h, ns, "same", old)
    assert controller_creates(h, ns, "pods") == WORKERS + 1
    assert creates("409") - exists_before == 0


async def run_job_pods_replaced(h: Harness, ns: str, name: str, old: dict[str, str]) -> None:
    async def replaced() -> bool:
        pods = await h.pods(ns, name)
        return len(pods) == len(old) and all(
            p["metadata"]["uid"] != old[p["metadata"]["name"]]
            and (p.get("status") or {}).get("phase") == "Running"
            for p in pods
        )

    await eventually(replaced, what="the new job's own pods Running")
    await h.wait_condition("PyTorchJob", ns, name, "Running")
