"""The simulated gang schedulers place a gang's pods through kube-scheduler's filters, as Volcano's
`predicates` plugin and the coscheduling plugin (inside kube-scheduler) do: a gang whose pods
cannot all be placed is bound not at all, with the scheduler's reasons, and node selectors and
taints steer every member. Waits are on observable API state, never on time."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.kube.resources import NODES, SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS

from .controller_support import JOB_NAME_LABEL, Harness, eventually, job_manifest, running_stack

Obj = dict[str, Any]
GANGS = ["volcano", "scheduler-plugins"]
RUN = {"sim.kubetrain.io/run-seconds": "0.2"}


def gang_job(name: str, workers: int, pod_spec: Obj) -> Obj:
    """A PyTorchJob of one master and `workers` workers whose pods carry `pod_spec`'s fields."""
    replicas = {"Master": 1, "Worker": workers}
    job = job_manifest(
        "PyTorchJob",
        name,
        replicas,
        resources={"requests": {"cpu": "1"}},
        pod_annotations={rtype: RUN for rtype in replicas},
    )
    for rtype in replicas:
        job["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"].update(pod_spec)
    return job


def scheduled_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


async def _unschedulable_pod(h: Harness, ns: str, job: str, text: str) -> Obj | None:
    for pod in await h.pods(ns, job):
        cond = scheduled_condition(pod) or {}
        if cond.get("status") == "False" and text in str(cond.get("message", "")):
            return pod
    return None


@pytest.mark.parametrize("gang", GANGS)
async def test_gang_with_more_anti_affine_pods_than_nodes_is_bound_not_at_all(gang: str) -> None:
    async with running_stack(gang_scheduler=gang) as (s, h):
        assert s.gang_simulator is not None and s.simulator is not None
        nodes = len(s.simulator.node_names)
        ns = await h.namespace("antiaff")
        spread_out = {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {JOB_NAME_LABEL: "ddp"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        }
        # One pod more than there are nodes: each node takes one pod of the job, so the last
        # member fits nowhere and the whole gang waits.
        await h.create_job(gang_job("ddp", nodes, spread_out), ns)
        reason = f"{nodes} node(s) didn't match pod anti-affinity rules"
        pod = await eventually(
            lambda: _unschedulable_pod(h, ns, "ddp", reason), what=f"a pod says {reason!r}"
        )
        assert pod["metadata"]["name"] == f"ddp-worker-{nodes - 1}"  # the last member tried
        cond = scheduled_condition(pod) or {}
        assert cond["reason"] == "Unschedulable"
        available = "unavailable" if gang == "volcano" else "available"
        assert cond["message"].startswith(f"0/{nodes} nodes are {available}: {reason}."), cond
        if gang == "volcano":
            # The PodGroup's status is written after the pods' conditions, in the same cycle.
            async def group_unschedulable() -> Obj:
                group = await h.get(VOLCANO_PODGROUPS, ns, "ddp")
                assert group is not None and group["status"]["phase"] == "Inqueue"
                [unschedulable] = [c for c in group["status"]["conditions"] if c["type"] == "Unschedulable"]
                assert unschedulable["reason"] == "NotEnoughResources", unschedulable
                return unschedulable

            unschedulable = await eventually(group_unschedulable, what="the PodGroup says NotEnoughResources")
            # minAvailable less the members placed before: 1 task of the gang is unschedulable.
            assert unschedulable["message"] == (
                f"1/{nodes + 1} tasks in gang unschedulable: pod group is not ready, "
                f"{nodes + 1} Pending, {nodes + 1} minAvailable; "
                f"Pending: 1 Unschedulable, {nodes} Schedulable. "
                f"Origin reason is ddp-worker-{nodes - 1}: 0/{nodes} nodes are unavailable: {reason}."
            )
        else:
            group = await h.get(SCHEDULER_PLUGINS_PODGROUPS, ns, "ddp")
            assert group is not None and not (group.get("status") or {}).get("scheduled")
        # Nothing of the gang is bound: no pod has a node, the gang scheduler bound none.
        pods = await h.pods(ns, "ddp")
        assert len(pods) == nodes + 1
        assert [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")] == []
        assert [b for b in s.gang_simulator.bindings if b[0] == ns] == []


@pytest.mark.parametrize("gang", GANGS)
async def test_node_selector_and_taint_steer_every_member_to_the_allowed_node(gang: str) -> None:
    async with running_stack(gang_scheduler=gang) as (s, h):
        sim = s.gang_simulator
        assert sim is not None and s.simulator is not None
        first, second, *_ = s.simulator.node_names
        # Both nodes are in the pool; the second is tainted, so only the first takes the pods.
        for name in (first, second):
            await h.kube.patch(NODES, None, name, {"metadata": {"labels": {"pool": "train"}}})
        taint = {"key": "dedicated", "value": "other", "effect": "NoSchedule"}
        await h.kube.patch(NODES, None, second, {"spec": {"taints": [taint]}})

        async def seen() -> bool:
            node = sim.node(second) or {}
            return bool((node.get("spec") or {}).get("taints"))

        await eventually(seen, what="the gang scheduler sees the taint")
        ns = await h.namespace("steer")
        await h.create_job(gang_job("steer", 3, {"nodeSelector": {"pool": "train"}}), ns)
        await h.wait_condition("PyTorchJob", ns, "steer", "Succeeded")
        bound = {pod: node for ns_, pod, node in sim.bindings if ns_ == ns}
        assert set(bound) == {"steer-master-0", "steer-worker-0", "steer-worker-1", "steer-worker-2"}
        assert set(bound.values()) == {first}, bound
