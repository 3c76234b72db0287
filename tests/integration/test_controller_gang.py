"""Gang scheduling (docs/behaviour.md §8) through the real controller against devcluster, with the
PodGroup CRDs of Volcano and scheduler-plugins installed by the test (or not installed)."""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.kube.resources import SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS

from .controller_support import condition, eventually, gang_stack, job_manifest

Obj = dict[str, Any]


def gang_job(name: str, scheduling: Obj) -> Obj:
    job = job_manifest(
        "PyTorchJob",
        name,
        {"Master": 1, "Worker": 2},
        resources={"requests": {"cpu": "1", "memory": "1Gi"}},
        run_policy={"schedulingPolicy": scheduling},
    )
    # The Master asks for more: minResources sums the first minMember pods in priority order.
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    master["resources"] = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"nvidia.com/gpu": "1"}}
    return job


def check_owned(group: Obj, job: Obj) -> None:
    refs = group["metadata"]["ownerReferences"]
    assert [(r["kind"], r["name"], r["uid"], r.get("controller")) for r in refs] == [
        ("PyTorchJob", job["metadata"]["name"], job["metadata"]["uid"], True)
    ]


async def test_volcano_podgroup_and_wait_for_admission() -> None:
    async with gang_stack("volcano", True) as (_, h):
        ns = await h.namespace("vc")
        job = await h.create_job(
            gang_job("vc", {"minAvailable": 2, "queue": "research", "priorityClass": "high"}), ns
        )
        group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "vc"), what="Volcano PodGroup")
        assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
        check_owned(group, job)
        spec = group["spec"]
        assert spec["minMember"] == 2
        assert spec["queue"] == "research"
        assert spec["priorityClassName"] == "high"
        # Master (2 CPU, 2Gi, 1 GPU as limit only) + Worker 0 (1 CPU, 1Gi).
        assert spec["minResources"] == {"cpu": "3", "memory": "3Gi", "nvidia.com/gpu": "1"}

        # Not admitted yet: no pods, and the job says why.
        waiting = await h.wait_job(
            "PyTorchJob",
            ns,
            "vc",
            lambda j: (condition(j, "Running") or {}).get("reason") == "GangScheduling",
            "Running=False GangScheduling",
        )
        assert (condition(waiting, "Running") or {})["status"] == "False"
        assert "vc" in (condition(waiting, "Running") or {})["message"]
        await asyncio.sleep(0.3)
        assert await h.pods(ns, "vc") == []
        # Pending is still not admitted.
        await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "vc", {"status": {"phase": "Pending"}})
        await asyncio.sleep(0.3)
        assert await h.pods(ns, "vc") == []

        # Volcano admits the group: pods are created, for the volcano scheduler, in the group.
        await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "vc", {"status": {"phase": "Inqueue"}})
        pods = await h.wait_pods(ns, "vc", 3)
        for pod in pods:
            rtype = pod["metadata"]["labels"]["kubetrain.io/replica-type"]
            assert pod["spec"]["schedulerName"] == "volcano"
            annotations = pod["metadata"]["annotations"]
            assert annotations["scheduling.k8s.io/group-name"] == "vc"
            assert annotations["volcano.sh/task-spec"] == rtype
        await h.wait_condition("PyTorchJob", ns, "vc", "Running")
        # The PodGroup was created once (no duplicate attempts seen by the API server).
        assert h.requests.count(verb="create", resource="podgroups", user_agent="kubetrain/") == 1


async def test_volcano_running_phase_admits_too() -> None:
    async with gang_stack("volcano", True) as (_, h):
        ns = await h.namespace("vcr")
        await h.create_job(gang_job("vcr", {}), ns)
        group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "vcr"), what="Volcano PodGroup")
        assert group["spec"]["minMember"] == 3  # default: every replica
        assert "queue" not in group["spec"]
        await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "vcr", {"status": {"phase": "Running"}})
        await h.wait_pods(ns, "vcr", 3)


async def test_scheduler_plugins_podgroup_and_pods() -> None:
    async with gang_stack("scheduler-plugins", True) as (_, h):
        ns = await h.namespace("sp")
        job = await h.create_job(gang_job("sp", {"scheduleTimeoutSeconds": 120}), ns)
        group = await eventually(lambda: h.get(SCHEDULER_PLUGINS_PODGROUPS, ns, "sp"), what="PodGroup")
        assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
        check_owned(group, job)
        assert group["spec"]["minMember"] == 3
        assert group["spec"]["scheduleTimeoutSeconds"] == 120
        assert group["spec"]["minResources"] == {"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "1"}
        assert "queue" not in group["spec"]
        # No admission wait: pods come with the group (the coscheduling plugin holds them);
        # DevStack's pod simulator plays the scheduler-plugins scheduler.
        pods = await h.wait_pods(ns, "sp", 3)
        for pod in pods:
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})
        await h.wait_condition("PyTorchJob", ns, "sp", "Running")


async def test_podgroup_crd_missing_is_reported_without_crashing() -> None:
    async with gang_stack("volcano", False) as (stack, h):
        assert stack.controller is not None and not stack.controller.pod_group_api_installed
        ns = await h.namespace("nocrd")
        for name in ("a", "b"):
            await h.create_job(gang_job(name, {}), ns)
        for name in ("a", "b"):  # the controller keeps working on every job
            job = await h.wait_job(
                "PyTorchJob",
                ns,
                name,
                lambda j: (condition(j, "Running") or {}).get("reason") == "GangScheduling",
                "GangScheduling condition",
            )
            message = (condition(job, "Running") or {})["message"]
            assert "scheduling.volcano.sh/v1beta1" in message and "not installed" in message
            event = await h.wait_event(ns, name, "PodGroupAPIMissing")
            assert event["type"] == "Warning"
            assert "not installed" in event["message"]
        await asyncio.sleep(0.3)
        assert await h.pods(ns) == []
        assert all(not t.done() for t in stack.controller._workers)
