"""JobSet's exclusive placement for a TrainJob, through the real controller against devcluster:
a runtime whose replicated job `worker` (2 jobs of 2 pods) carries
`alpha.jobset.sigs.k8s.io/exclusive-topology: topology.kubernetes.io/zone`, on the simulator's
nodes labelled with zones. The worker pods name a scheduler nobody runs, so the test binds them
itself (POST pods/NAME/binding, as kube-scheduler does) and decides when each leader is
scheduled: leaders are created with JobSet's affinities, followers only once their leader is
bound, then with its node's zone; a leader on a node without the label is a condition and an
event until the node is labelled; a leader made again in another zone takes its followers
there."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import RUNTIME

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.kubelet import nodeobjects
from kubetrain.kube.resources import NODES, PODS, PRIORITY_CLASSES, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
CONDITION = "ExclusivePlacementBlocked"


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def one_node_exclusive() -> Obj:
    """TrainJob `ex` of one node from the namespace's TrainingRuntime `exclusive`."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "ex"},
        "spec": {"runtimeRef": {"name": "exclusive", "kind": "TrainingRuntime"}, "trainer": {"numNodes": 1}},
    }


def exclusive_runtime() -> Obj:
    """torch-distributed as a TrainingRuntime, plus a replicated job `worker` of 2 jobs of 2 pods
    placed exclusively per zone, its pods left to a scheduler named `manual` (the test)."""
    runtime = copy.deepcopy(RUNTIME)
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "exclusive", "labels": runtime["metadata"]["labels"]}
    container = {"name": "worker", "image": "busybox", "command": ["sleep", "3600"]}
    runtime["spec"]["template"]["spec"]["replicatedJobs"].append(
        {
            "name": "worker",
            "replicas": 2,
            "template": {
                "metadata": {"annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": ZONE}},
                "spec": {
                    "parallelism": 2,
                    "completions": 2,
                    "template": {"spec": {"schedulerName": "manual", "containers": [container]}},
                },
            },
        }
    )
    return runtime


async def bind(h: Harness, ns: str, name: str, node: str) -> None:
    pod = await h.pod(ns, name)
    assert pod is not None
    await h.kube.request(
        "create", "POST", PODS.path(ns, name, "binding"), body=nodeobjects.binding(pod, node)
    )


async def label(h: Harness, node: str, zone: str) -> None:
    await h.kube.patch(NODES, None, node, {"metadata": {"labels": {ZONE: zone}}})


async def wait_pod(h: Harness, ns: str, name: str, *, not_uid: str = "") -> Obj:
    async def check() -> Obj | None:
        pod = await h.pod(ns, name)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod["metadata"]["uid"] == not_uid:
            return None
        return pod

    found: Obj = await eventually(check, what=f"pod {ns}/{name}")
    return found


async def condition(h: Harness, ns: str, name: str) -> Obj | None:
    tj = await h.get(TRAINJOBS, ns, name)
    conditions = ((tj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == CONDITION), None)


async def test_followers_wait_for_their_leaders_domain(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    nodes = h.sim.node_names  # three simulated nodes: zone-a, zone-b, and one without a zone
    await label(h, nodes[0], "zone-a")
    await label(h, nodes[1], "zone-b")
    ns = await h.namespace("excl")
    await h.kube.create(TRAINING_RUNTIMES, exclusive_runtime(), namespace=ns)
    await h.kube.create(TRAINJOBS, one_node_exclusive(), namespace=ns)

    # The leaders (and the trainer, not placed exclusively) are made; the followers are not,
    # even once the trainer runs (reconciles after the leaders' creation have passed).
    await h.wait_pod_names(ns, "ex", ["ex-node-0-0", "ex-worker-0-0", "ex-worker-1-0"])
    await h.wait_pods(ns, "ex", 1)
    assert sorted(p["metadata"]["name"] for p in await h.pods(ns, "ex")) == [
        "ex-node-0-0",
        "ex-worker-0-0",
        "ex-worker-1-0",
    ]
    leader = await wait_pod(h, ns, "ex-worker-0-0")
    job_key = leader["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"]
    assert leader["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] == "0"
    affinity = leader["spec"]["affinity"]
    [together] = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert together == {
        "labelSelector": {
            "matchExpressions": [{"key": "jobset.sigs.k8s.io/job-key", "operator": "In", "values": [job_key]}]
        },
        "topologyKey": ZONE,
        "namespaceSelector": {},
    }
    [apart] = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert apart["labelSelector"]["matchExpressions"][1] == {
        "key": "jobset.sigs.k8s.io/job-key",
        "operator": "NotIn",
        "values": [job_key],
    }
    trainer = await wait_pod(h, ns, "ex-node-0-0")
    assert "affinity" not in trainer["spec"]

    # Leader 0 scheduled in zone-a: its follower is made there.
    await bind(h, ns, "ex-worker-0-0", nodes[0])
    follower = await wait_pod(h, ns, "ex-worker-0-1")
    assert follower["spec"]["nodeSelector"] == {ZONE: "zone-a"}
    assert "affinity" not in follower["spec"]
    assert await h.pod(ns, "ex-worker-1-1") is None

    # Leader 1 on the node without a zone: a condition and an event name node and key.
    await bind(h, ns, "ex-worker-1-0", nodes[2])

    async def blocked() -> Obj | None:
        cond = await condition(h, ns, "ex")
        return cond if cond is not None and cond["status"] == "True" else None

    cond = await eventually(blocked, what="ExclusivePlacementBlocked")
    assert cond["reason"] == "NodeMissingTopologyLabel"
    assert f"node {nodes[2]} has no label {ZONE}" in cond["message"]
    event = await h.wait_event(ns, "ex", "NodeMissingTopologyLabel")
    assert event["type"] == "Warning" and nodes[2] in event["message"]
    assert await h.pod(ns, "ex-worker-1-1") is None

    # The node labelled: the follower is made in its zone, the condition goes.
    await label(h, nodes[2], "zone-c")
    follower1 = await wait_pod(h, ns, "ex-worker-1-1")
    assert follower1["spec"]["nodeSelector"] == {ZONE: "zone-c"}
    await eventually(lambda: _gone(h, ns), what="the condition removed")

    # Leader 0 deleted and made again, now scheduled in zone-b: its follower follows it.
    old_follower = follower["metadata"]["uid"]
    await h.kube.delete(PODS, ns, "ex-worker-0-0")
    await wait_pod(h, ns, "ex-worker-0-0", not_uid=leader["metadata"]["uid"])
    await bind(h, ns, "ex-worker-0-0", nodes[1])
    moved = await wait_pod(h, ns, "ex-worker-0-1", not_uid=old_follower)
    assert moved["spec"]["nodeSelector"] == {ZONE: "zone-b"}
    await h.wait_event(ns, "ex", "ExclusivePlacementViolation")


async def _gone(h: Harness, ns: str) -> bool:
    return await condition(h, ns, "ex") is None


async def test_a_leader_naming_a_priority_class_is_labelled_with_its_value(
    env: tuple[DevStack, Harness],
) -> None:
    """Worker pods naming only a priorityClassName: the API server's Priority admission gives
    them the class's value, and the operator's PriorityClass cache labels the leader with it and
    keeps the other jobs of that priority out of its domain — as JobSet's webhook after the
    admission does."""
    _, h = env
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "team-high"}}
    await h.kube.create(PRIORITY_CLASSES, {**high, "value": 1000}, namespace=None)
    ns = await h.namespace("excl-priority")
    runtime = exclusive_runtime()
    worker = runtime["spec"]["template"]["spec"]["replicatedJobs"][-1]
    worker["template"]["spec"]["template"]["spec"]["priorityClassName"] = "team-high"
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(TRAINJOBS, one_node_exclusive(), namespace=ns)
    leader = await wait_pod(h, ns, "ex-worker-0-0")
    assert leader["spec"]["priority"] == 1000
    assert leader["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] == "1000"
    [apart] = leader["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert apart["labelSelector"]["matchExpressions"][2] == {
        "key": "jobset.sigs.k8s.io/priority",
        "operator": "In",
        "values": ["1000"],
    }
