"""The gang scheduler installed after the operator started (docs/behaviour.md §8): the controller
watches the PodGroup CRD by name, so jobs that waited for the PodGroup API proceed once the CRD is
Established, and report the API missing again once it is deleted — no operator restart, no polling."""

from __future__ import annotations

from typing import Any

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster import podgroup_crd
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, VOLCANO_PODGROUPS

from .controller_support import CONTROLLER_USER_AGENT, Harness, condition, eventually, job_manifest

Obj = dict[str, Any]

CRD_NAME = "podgroups.scheduling.volcano.sh"


def gang_job(name: str) -> Obj:
    return job_manifest("PyTorchJob", name, {"Master": 1, "Worker": 2}, run_policy={"schedulingPolicy": {}})


def running_message(job: Obj | None) -> str:
    cond = condition(job, "Running") or {}
    return str(cond.get("message", "")) if cond.get("reason") == "GangScheduling" else ""


async def test_podgroup_crd_installed_and_deleted_while_the_operator_runs() -> None:
    options = DevStackOptions(gang_scheduler="volcano", podgroup_crd=False, gang_simulator=False)
    async with DevStack(options) as stack:
        h = await Harness.open(stack)
        try:
            controller = stack.controller
            assert controller is not None and not controller.pod_group_api_installed
            assert controller.synced  # a missing CRD does not hold readiness back
            ns = await h.namespace("late")

            # No PodGroup API yet: the job waits and says why.
            await h.create_job(gang_job("early"), ns)
            await h.wait_job(
                "PyTorchJob", ns, "early", lambda j: "not installed" in running_message(j), "API missing"
            )
            await h.wait_event(ns, "early", "PodGroupAPIMissing")

            # The gang scheduler is installed: the waiting job gets its PodGroup, same operator.
            await h.kube.create(CUSTOM_RESOURCE_DEFINITIONS, podgroup_crd("volcano"))
            group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "early"), what="the PodGroup")
            assert group["spec"]["minMember"] == 3
            assert stack.controller is controller and controller.pod_group_api_installed
            await h.wait_job(
                "PyTorchJob",
                ns,
                "early",
                lambda j: "waiting for Volcano to admit" in running_message(j),
                "waiting for admission",
            )
            # Volcano admits it: pods are created.
            await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "early", {"status": {"phase": "Inqueue"}})
            await h.wait_pods(ns, "early", 3)
            await h.wait_condition("PyTorchJob", ns, "early", "Running")

            # The CRD is deleted: the API counts as missing again, a new job says so.
            await h.kube.delete(CUSTOM_RESOURCE_DEFINITIONS, None, CRD_NAME)
            await eventually(lambda: not controller.pod_group_api_installed, what="the API marked missing")
            await h.create_job(gang_job("after"), ns)
            await h.wait_job(
                "PyTorchJob", ns, "after", lambda j: "not installed" in running_message(j), "API missing"
            )
            assert await h.pods(ns, "after") == []

            # Event-driven: one LIST of the CRD (by name) at start, then a watch; no discovery
            # polling of the PodGroup API.
            operator = [r for r in h.requests.records if r.user_agent.startswith(CONTROLLER_USER_AGENT)]
            crd_reads = [r.verb for r in operator if r.resource == "customresourcedefinitions"]
            assert crd_reads.count("list") == 1 and "get" not in crd_reads
            assert not [r for r in operator if r.verb == "get" and r.group == "scheduling.volcano.sh"]
        finally:
            await h.close()
