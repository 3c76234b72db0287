"""Which steps of a TrainJob its PodGroup gangs (jobs/trainjob/gang.py, `gang_steps`;
docs/behaviour.md §11): a runtime with initializers the nodes wait for (`dependsOn` `Complete`)
gangs the nodes only — counting the initializers too left a gang that could never form, so the
TrainJob never started — and a step made once others are Ready (DeepSpeed's launcher, every step
after the first under `startupPolicy: InOrder`) joins the gang without being counted, as the
MPI Launcher does (§8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainjobs import trainer_test_runtime, trainjob_pod, warmup_first_runtime

from kubetrain.jobs.trainjob.gang import gang_steps
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import trainjob_shape
from kubetrain.operator.desired import desired_children
from kubetrain.operator.jobchildren import build_pod_group
from kubetrain.operator.statusprojection import TRAINER

from .test_trainplan import gang_plan, trainjob

Obj = dict[str, Any]
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
INITIALIZERS = ("dataset-initializer", "model-initializer")


def initializer_runtime(policy: Obj) -> Obj:
    """Trainer's test runtime with its two initializers, the nodes waiting for both to Complete
    (as Trainer's torchtune runtimes wait), under `policy` (the runtime's podGroupPolicy)."""
    runtime = trainer_test_runtime(name="torch-distributed", kind="ClusterTrainingRuntime")
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[2]["dependsOn"] = [{"name": name, "status": "Complete"} for name in INITIALIZERS]
    runtime["spec"]["podGroupPolicy"] = policy
    return runtime


def steps_of(runtime: Obj, nodes: int = 3) -> Any:
    resolved, errors = resolve(trainjob(nodes=nodes), runtime)
    assert resolved is not None, errors
    return gang_steps(resolved)


def pod_group_and_pods(runtime: Obj, gang: str, nodes: int = 3) -> tuple[Obj, dict[str, Obj]]:
    """The PodGroup and every pod (by name) the operator running with `gang` makes."""
    job = trainjob(nodes=nodes)
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    shape = trainjob_shape(job, resolved, runtime["spec"]["template"]["spec"], TRAINER, gang)
    group = build_pod_group(shape, gang)
    assert group is not None
    desired = desired_children(shape, gang_scheduler=gang)
    pods = {p["metadata"]["name"]: p for p in desired.all() if p.get("kind") == "Pod"}
    return group, pods


@pytest.mark.parametrize(
    ("policy", "gang", "marker"),
    [({"coscheduling": {}}, "scheduler-plugins", GROUP_LABEL), ({"volcano": {}}, "volcano", VOLCANO_GROUP)],
)
def test_the_gang_is_the_nodes_and_the_initializers_are_scheduled_pod_by_pod(
    policy: Obj, gang: str, marker: str
) -> None:
    group, pods = pod_group_and_pods(initializer_runtime(policy), gang)
    # The 3 nodes, each requesting 1 CPU and 4Gi: not the 2 initializers they wait for.
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "3", "memory": "12Gi"}
    for name in ("tj-dataset-initializer-0-0", "tj-model-initializer-0-0"):
        meta = pods[name]["metadata"]
        assert "schedulerName" not in pods[name]["spec"]  # the default scheduler's
        assert marker not in (meta.get("labels") or {}) and marker not in (meta.get("annotations") or {})
    for k in range(3):
        node = pods[f"tj-node-0-{k}"]
        assert node["spec"]["schedulerName"] in ("scheduler-plugins-scheduler", "volcano")
        meta = node["metadata"]
        assert {**meta.get("labels", {}), **meta.get("annotations", {})}[marker] == "tj"


def test_under_coscheduling_the_gang_forms_once_the_initializers_are_done() -> None:
    """scheduler-plugins' PreFilter refuses a pod while fewer than minMember pods of its group
    exist (terminated ones not counted): at no stage may the gang wait for pods that are only
    made after it runs."""
    runtime = warmup_first_runtime()
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    job = trainjob(nodes=2)
    first = gang_plan(job, runtime, "scheduler-plugins", [], None)
    assert first.create_pod_group is not None
    min_member = first.create_pod_group["spec"]["minMember"]
    assert min_member == 2  # the nodes; before: 3, with the warmup pod the nodes wait for
    [warmup] = first.create_pods
    assert warmup["metadata"]["name"] == "tj-warmup-0-0"
    assert GROUP_LABEL not in warmup["metadata"]["labels"]  # runs alone, as a pod of no gang
    group = {"metadata": {"name": "tj"}, "spec": first.create_pod_group["spec"]}
    done = [trainjob_pod("tj-warmup-0-0", phase="Succeeded")]
    nodes = gang_plan(job, runtime, "scheduler-plugins", done, group).create_pods
    assert [p["metadata"]["name"] for p in nodes] == ["tj-node-0-0", "tj-node-0-1"]
    members = [p for p in nodes if p["metadata"]["labels"].get(GROUP_LABEL) == "tj"]
    assert len(members) >= min_member  # PreFilter lets them through: the gang can form


def test_a_step_made_once_the_nodes_are_ready_joins_the_gang_uncounted() -> None:
    """DeepSpeed's and MPI's launcher waits for the nodes to be Ready (`dependsOn` `Ready`): a
    gang counting it could never form (mpi-operator issue 608), so it joins the running gang."""
    runtime = initializer_runtime({"coscheduling": {}})
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    launcher = copy.deepcopy(rjobs[2])
    launcher["name"] = "launcher"
    launcher["dependsOn"] = [{"name": "node", "status": "Ready"}]
    launcher["template"]["metadata"] = {}
    rjobs.append(launcher)
    steps = steps_of(runtime)
    assert (steps.counted, steps.joining) == ({"node"}, {"launcher"})
    group, pods = pod_group_and_pods(runtime, "scheduler-plugins")
    assert group["spec"]["minMember"] == 3
    assert pods["tj-launcher-0-0"]["metadata"]["labels"][GROUP_LABEL] == "tj"


def test_in_order_startup_counts_the_first_step_only() -> None:
    """Under `startupPolicy: InOrder` each step is made once every pod of those before it is
    Ready: the later steps join the first one's gang."""
    runtime = trainer_test_runtime(name="torch-distributed", kind="ClusterTrainingRuntime")
    runtime["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    steps = steps_of(runtime)
    assert steps.counted == {"dataset-initializer"}
    assert steps.joining == {"model-initializer", "node"}


def test_without_dependencies_every_step_is_counted() -> None:
    steps = steps_of(trainer_test_runtime(name="torch-distributed", kind="ClusterTrainingRuntime"))
    assert steps.counted == {"dataset-initializer", "model-initializer", "node"} and not steps.joining


def test_what_an_initializer_waits_for_runs_before_the_gang_too() -> None:
    """dataset-initializer -> model-initializer (Ready) -> node (Complete on the model
    initializer): both initializers run before the nodes."""
    runtime = trainer_test_runtime(name="torch-distributed", kind="ClusterTrainingRuntime")
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[1]["dependsOn"] = [{"name": "dataset-initializer", "status": "Ready"}]
    rjobs[2]["dependsOn"] = [{"name": "model-initializer", "status": "Complete"}]
    steps = steps_of(runtime)
    assert (steps.counted, steps.joining) == ({"node"}, frozenset())
    assert steps.members == {"node"}
