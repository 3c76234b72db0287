"""Which runtime a TrainJob is checked against, through the webhook and the controller on
devcluster (docs/behaviour.md §11, the fixes citing Kubeflow Trainer's issues):

- an update of a TrainJob that has its runtime snapshot is checked against that snapshot, not
  the runtime as edited since (kubeflow/trainer#3923, fixed by #3960);
- the controller checks a TrainJob against the runtime it builds it from, so a runtime changed
  between admission and the first reconcile fails the TrainJob with a condition and an Event
  naming the field, not silently (kubeflow/trainer#3975);
- an update of either runtime kind is validated as a create is (kubeflow/trainer#3686).

The runtime edit used throughout: a torch runtime becomes a JAX one, whose ML policy sets
JAX_PROCESS_ID (a variable a torch TrainJob may set) and leaves PET_* alone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.api.trainer import constants as c
from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import env_of, get_tj, training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def to_jax(runtime: Obj) -> None:
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "jax": {}}


def job_setting(name: str, var: str, *, suspend: bool) -> Obj:
    """A one-node TrainJob of the namespaced TrainingRuntime `rt` that sets `var`."""
    job = trainjob(name, num_nodes=1, runtime="rt", runtime_kind=c.TRAINING_RUNTIME, suspend=suspend)
    job["spec"]["trainer"]["env"] = [{"name": var, "value": "x"}]
    return job


async def changed_before_the_snapshot(stack: DevStack, h: Harness, ns: str, name: str, rule: Any) -> None:
    """Change runtime `rt` of `ns` to JAX while the snapshot's create is refused (`rule`), and let
    the snapshot be written only by a reconcile that read the changed runtime — the controller
    reads runtimes from its informer, so clearing the fault sooner could let a retry snapshot the
    runtime as it was. A reconcile already running when the informer saw the change may have
    read the old runtime; reconciles of one TrainJob never overlap, so once the next refusal is
    past, every reconcile began after the change was seen — or one already failed TrainJob `name`
    against the changed runtime (and tries no snapshot)."""
    try:
        await eventually(lambda: rule.fired >= 1, what="the first snapshot create refused")
        changed = await h.change(TRAINING_RUNTIMES, ns, "rt", to_jax)
        assert stack.controller is not None
        cache = stack.controller.cache
        version = changed["metadata"]["resourceVersion"]

        def seen() -> bool:
            cached = cache.get(TRAINING_RUNTIMES, ns, "rt")
            return cached is not None and cached["metadata"]["resourceVersion"] == version

        await eventually(seen, what="the operator to see the runtime changed")
        refused_before = rule.fired

        async def read_the_change() -> bool:
            if rule.fired >= refused_before + 2:
                return True
            conditions = (await get_tj(h, ns, name)).get("status", {}).get("conditions") or []
            return any(x["type"] == "Failed" and x["status"] == "True" for x in conditions)

        await eventually(read_the_change, what="a reconcile begun after the change was seen")
    finally:
        h.faults.clear()


async def refused(coro: Any) -> str:
    try:
        await coro
    except ApiError as err:
        return str(err)
    raise AssertionError("the API server accepted it")


async def test_an_update_is_checked_against_the_snapshot_not_the_edited_runtime(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("snapcheck")
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("rt"), namespace=ns)
    await h.kube.create(TRAINJOBS, job_setting("held", "JAX_PROCESS_ID", suspend=True), namespace=ns)
    await eventually(lambda: h.get(CONFIG_MAPS, ns, "held-runtime-snapshot"), what="the snapshot")
    await h.change(TRAINING_RUNTIMES, ns, "rt", to_jax)

    # The live runtime (JAX) would allow PET_NNODES; the torch snapshot the job is built from sets it.
    def add_pet(tj: Obj) -> None:
        tj["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "9"})

    message = await refused(h.change(TRAINJOBS, ns, "held", add_pet))
    assert "spec.trainer.env[1].name" in message and "PET_NNODES" in message
    assert "JAX_PROCESS_ID" not in message

    # The live runtime (JAX) would refuse JAX_PROCESS_ID; the snapshot allows it: resumed, the
    # TrainJob runs as the torch runtime it was admitted with made it.
    await h.change(TRAINJOBS, ns, "held", lambda tj: tj["spec"].update(suspend=False))
    [pod] = await h.wait_pod_names(ns, "held", ["held-node-0-0"])
    env_vars = env_of(pod)
    assert env_vars["JAX_PROCESS_ID"] == "x" and env_vars["PET_NNODES"] == "1"


async def test_a_runtime_changed_before_the_first_reconcile_fails_the_trainjob_naming_the_field(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    ns = await h.namespace("firstbuild")
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("rt"), namespace=ns)
    # The snapshot cannot be written until the runtime has changed: the first reconcile that
    # builds the TrainJob does so from a runtime its admission never saw.
    rule = h.faults.fail(verb="create", resource="configmaps", namespace=ns, count=10**6)
    await h.kube.create(TRAINJOBS, job_setting("late", "JAX_PROCESS_ID", suspend=False), namespace=ns)
    await changed_before_the_snapshot(stack, h, ns, "late", rule)
    tj = await wait_condition(h, ns, "late", "Failed")
    [failed] = [x for x in tj["status"]["conditions"] if x["type"] == "Failed"]
    assert failed["reason"] == c.REASON_RUNTIME_NOT_SUPPORTED
    assert "spec.trainer.env[0].name" in failed["message"] and "JAX_PROCESS_ID" in failed["message"]
    event = await h.wait_event(ns, "late", c.REASON_RUNTIME_NOT_SUPPORTED)
    assert event["type"] == "Warning" and "spec.trainer.env[0].name" in event["message"]
    assert await h.pods(ns, "late") == []


async def test_a_valid_trainjob_still_runs_from_a_runtime_changed_before_its_first_reconcile(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    ns = await h.namespace("firstok")
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("rt"), namespace=ns)
    rule = h.faults.fail(verb="create", resource="configmaps", namespace=ns, count=10**6)
    await h.kube.create(TRAINJOBS, job_setting("fine", "CUSTOM", suspend=False), namespace=ns)
    await changed_before_the_snapshot(stack, h, ns, "fine", rule)
    [pod] = await h.wait_pod_names(ns, "fine", ["fine-node-0-0"])
    assert env_of(pod)["JAX_PROCESS_ID"] == {
        "fieldRef": {
            "apiVersion": "v1",
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
        }
    }
    assert not (await get_tj(h, ns, "fine")).get("status", {}).get("conditions")


def without_node(runtime: Obj) -> None:
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "trainer"


@pytest.mark.parametrize("kind", [c.TRAINING_RUNTIME, c.CLUSTER_TRAINING_RUNTIME])
async def test_a_runtime_update_is_validated_as_a_create(env: tuple[DevStack, Harness], kind: str) -> None:
    _, h = env
    ns = await h.namespace("rtupdate")
    ref = TRAINING_RUNTIMES if kind == c.TRAINING_RUNTIME else CLUSTER_TRAINING_RUNTIMES
    namespace = ns if kind == c.TRAINING_RUNTIME else None
    runtime = training_runtime(f"{ns}-rt")
    runtime["kind"] = kind
    bad = copy.deepcopy(runtime)
    without_node(bad)
    create_refusal = await refused(h.kube.create(ref, bad, namespace=namespace))
    await h.kube.create(ref, runtime, namespace=namespace)
    stored = await h.kube.get(ref, namespace, runtime["metadata"]["name"])
    without_node(stored)
    update_refusal = await refused(h.kube.replace(ref, stored))
    for message in (create_refusal, update_refusal):
        assert "spec.template.spec.replicatedJobs" in message and 'a replicated job named "node"' in message
    # A valid update is admitted.
    stored = await h.kube.get(ref, namespace, runtime["metadata"]["name"])
    stored["spec"]["mlPolicy"]["numNodes"] = 3
    replaced = await h.kube.replace(ref, stored)
    assert replaced["spec"]["mlPolicy"]["numNodes"] == 3
    if kind == c.CLUSTER_TRAINING_RUNTIME:
        await h.kube.delete(ref, None, runtime["metadata"]["name"])
