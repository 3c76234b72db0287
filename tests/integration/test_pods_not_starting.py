"""Jobs whose pods cannot start, on devcluster with the simulated kubelet (an image under the
reserved `.invalid` registry never pulls, an invalid reference never parses: kubelet/images.py):
the job gets the PodsNotStarting condition and one PodNotStarting event per (pod, container,
reason) — not one per reconcile, nor per ErrImagePull/ImagePullBackOff turn — and with
`kubetrain.io/start-deadline-seconds` fails at that exact time after the pod was scheduled,
reason StartDeadlineExceeded, its pods deleted. A kubeflow.org PyTorchJob read by the Kubeflow
training SDK 1.9 and a TrainJob made and read by the Kubeflow SDK 0.5: the extra condition
changes nothing they report. The controller and the kubelet run on one FakeClock; nothing sleeps
for a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio
from trainer_sdk import trainer_client

from kubetrain.api.metatime import parse_time
from kubetrain.api.startdeadline import ANNOTATION
from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import CONFIG_MAPS, TRAINJOBS, ResourceRef, job_resources_in
from kubetrain.operator import podstart

from .controller_support import (
    Harness,
    advance_to,
    condition,
    eventually,
    is_true,
    job_manifest,
    open_stack,
    ticking,
)

training = pytest.importorskip(
    "kubeflow.training", reason="kubeflow-training (a dev dependency) is not installed"
)
trainer = pytest.importorskip("kubeflow.trainer", reason="kubeflow (a dev dependency) is not installed")

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3  # real seconds to watch for something that must NOT happen
PYTORCHJOBS: ResourceRef = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
UNPULLABLE = "registry.invalid/train:1"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    clock = FakeClock(start=START)
    async for stack, h in open_stack(
        api_groups=("kubeflow.org", "trainer.kubeflow.org"), controller_clock=clock, simulator_clock=clock
    ):
        yield stack, h, clock


async def wait(
    h: Harness, clock: FakeClock, ref: ResourceRef, ns: str, name: str, pred: Any, what: str
) -> Obj:
    async def check() -> Obj | None:
        job = await h.get(ref, ns, name)
        return job if job is not None and pred(job) else None

    result: Obj = await ticking(clock, lambda: eventually(check, what=f"{name}: {what}"))
    return result


async def not_starting_events(h: Harness, ns: str, name: str) -> list[str]:
    return [str(e.get("message")) for e in await h.events(ns, name) if e.get("reason") == podstart.EVENT]


async def scheduled_at(h: Harness, ns: str, pod: str) -> datetime:
    live = await h.pod(ns, pod)
    assert live is not None
    cond = next(c for c in live["status"]["conditions"] if c["type"] == "PodScheduled")
    at = parse_time(cond["lastTransitionTime"])
    assert at is not None
    return at


async def test_a_kubeflow_pytorchjob_says_why_and_fails_at_its_start_deadline(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = env
    ns = await h.namespace("pull")
    job = job_manifest("PyTorchJob", "pull", {"Master": 1, "Worker": 1}, annotations={ANNOTATION: "300"})
    job["apiVersion"] = "kubeflow.org/v1"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = UNPULLABLE
    await h.kube.create(PYTORCHJOBS, job, namespace=ns)

    stuck = await wait(
        h, clock, PYTORCHJOBS, ns, "pull", lambda j: is_true(j, podstart.CONDITION), "PodsNotStarting"
    )
    cond = condition(stuck, podstart.CONDITION)
    assert cond is not None and cond["reason"] == "ImagePullBackOff"
    assert "pull-worker-0/pytorch ImagePullBackOff" in cond["message"] and "no such host" in cond["message"]
    assert stuck["status"]["conditions"][-1]["type"] == podstart.CONDITION  # kubectl get's State column

    # The kubelet's back-off begins (ErrImagePull → ImagePullBackOff): the same reason, no new event.
    async def backing_off() -> bool:
        pod = await h.pod(ns, "pull-worker-0")
        waiting = (
            ((pod or {}).get("status") or {})
            .get("containerStatuses", [{}])[0]
            .get("state", {})
            .get("waiting")
        )
        return bool(waiting and waiting.get("reason") == "ImagePullBackOff")

    await clock.advance(10.5)
    await ticking(clock, lambda: eventually(backing_off, what="the kubelet backs off pulling"))
    await asyncio.sleep(QUIET)
    [told] = await not_starting_events(h, ns, "pull")
    assert told.startswith("PyTorchJob pull: pod pull-worker-0 container pytorch cannot start: ErrImagePull")
    assert "registry.invalid" in told
    # Nor a rewrite: the condition still quotes the kubelet's first message (the controller
    # keeps what it lists, and that did not change).
    unchanged = condition(await h.get(PYTORCHJOBS, ns, "pull") or {}, podstart.CONDITION)
    assert unchanged is not None and unchanged["message"] == cond["message"]

    # The Kubeflow training SDK reads the job as it would without the condition.
    client = await asyncio.to_thread(
        training.TrainingClient,
        config_file=str(stack.cluster.kubeconfig_path),
        namespace=ns,
        job_kind="PyTorchJob",
    )
    assert await asyncio.to_thread(client.is_job_created, "pull")
    assert not await asyncio.to_thread(client.is_job_running, "pull")
    assert not await asyncio.to_thread(client.is_job_failed, "pull")
    types = [c.type for c in await asyncio.to_thread(client.get_job_conditions, "pull")]
    assert podstart.CONDITION in types
    done = await asyncio.to_thread(
        client.wait_for_job_conditions,
        "pull",
        expected_conditions={"Created"},
        wait_timeout=5,
        polling_interval=1,
    )
    assert done.metadata.name == "pull"

    # The start deadline: counted from the worker's scheduling, woken exactly then.
    scheduled = await scheduled_at(h, ns, "pull-worker-0")
    await advance_to(clock, scheduled + timedelta(seconds=299))
    await asyncio.sleep(QUIET)
    assert not is_true(await h.get(PYTORCHJOBS, ns, "pull"), "Failed")
    await advance_to(clock, scheduled + timedelta(seconds=300))
    failed = await wait(h, clock, PYTORCHJOBS, ns, "pull", lambda j: is_true(j, "Failed"), "Failed")
    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == podstart.REASON_DEADLINE
    assert "pull-worker-0" in reason["message"] and "300s" in reason["message"]
    assert await asyncio.to_thread(client.is_job_failed, "pull")
    assert podstart.REASON_DEADLINE in await h.event_reasons(ns, "pull")

    async def pods_gone() -> bool:
        return all(p["metadata"].get("deletionTimestamp") for p in await h.pods(ns, "pull"))

    await ticking(clock, lambda: eventually(pods_gone, what="the failed job's pods deleted"))
    assert len(await not_starting_events(h, ns, "pull")) == 1


async def test_a_trainjob_with_an_invalid_image_says_why_and_the_sdk_still_reads_it(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    stack, h, clock = env
    ns = await h.namespace("tjpull")
    c = await trainer_client(str(stack.cluster.kubeconfig_path), ns)
    name = await asyncio.to_thread(
        c.train,
        runtime="torch-distributed",
        trainer=trainer.CustomTrainerContainer(image="Example.com/Bad_Image:1", num_nodes=2),
    )
    stuck = await wait(
        h, clock, TRAINJOBS, ns, name, lambda j: is_true(j, podstart.CONDITION), "PodsNotStarting"
    )
    cond = condition(stuck, podstart.CONDITION)
    assert cond is not None and cond["reason"] == "InvalidImageName"
    assert set(cond) == {"type", "status", "reason", "message", "lastTransitionTime"}  # a metav1.Condition
    assert "2 container(s)" in cond["message"] and "invalid reference format" in cond["message"]
    await asyncio.sleep(QUIET)
    told = await not_starting_events(h, ns, name)
    assert sorted(m.split(" pod ")[1].split(" ")[0] for m in told) == [f"{name}-node-0-0", f"{name}-node-0-1"]

    job = await asyncio.to_thread(c.get_job, name)
    assert job.status == "Created"  # not Running, not Failed: the SDK's reading is unchanged
    assert {s.name for s in job.steps} == {"node-0", "node-1"}
    # A later reconcile (the next pod update, a clock step) writes nothing new.
    before = (await h.get(TRAINJOBS, ns, name) or {})["metadata"]["resourceVersion"]
    await clock.advance(30)
    await asyncio.sleep(QUIET)
    after = await h.get(TRAINJOBS, ns, name)
    assert after is not None and after["metadata"]["resourceVersion"] == before
    assert len(await not_starting_events(h, ns, name)) == 2


async def test_a_missing_configmap_is_told_and_the_condition_clears_once_it_exists(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await h.namespace("cfg")
    job = job_manifest("PyTorchJob", "cfg", {"Master": 1})
    job["apiVersion"] = "kubeflow.org/v1"
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "LR", "valueFrom": {"configMapKeyRef": {"name": "hparams", "key": "lr"}}}]
    await h.kube.create(PYTORCHJOBS, job, namespace=ns)
    stuck = await wait(
        h, clock, PYTORCHJOBS, ns, "cfg", lambda j: is_true(j, podstart.CONDITION), "PodsNotStarting"
    )
    cond = condition(stuck, podstart.CONDITION)
    assert cond is not None and cond["reason"] == "CreateContainerConfigError"
    assert cond["message"].endswith('Kubelet: configmap "hparams" not found')

    # The ConfigMap appears: the kubelet's next try starts the pod; the condition turns False.
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hparams"},
        "data": {"lr": "0.1"},
    }
    await h.kube.create(CONFIG_MAPS, config_map, namespace=ns)
    await clock.advance(10.5)
    started = await wait(h, clock, PYTORCHJOBS, ns, "cfg", lambda j: is_true(j, "Running"), "Running")
    cond = condition(started, podstart.CONDITION)
    assert cond is not None and cond["status"] == "False" and cond["reason"] == podstart.REASON_STARTED
    assert started["status"]["conditions"][-1]["type"] == "Running"
    [told] = await not_starting_events(h, ns, "cfg")
    assert "container pytorch cannot start: CreateContainerConfigError" in told


async def test_a_worker_larger_than_any_node_stays_unschedulable_and_never_counts_as_not_starting(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    """The simulated scheduler leaves a pod asking for 100 GPUs (a node has 8) Pending with
    kube-scheduler's condition and FailedScheduling Event; an unscheduled pod is no container
    that cannot start, so neither PodsNotStarting nor the start deadline touches the job."""
    stack, h, clock = env
    ns = await h.namespace("huge")
    job = job_manifest("PyTorchJob", "huge", {"Master": 1, "Worker": 1}, annotations={ANNOTATION: "60"})
    job["apiVersion"] = "kubeflow.org/v1"
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"nvidia.com/gpu": "100"}}
    await h.kube.create(PYTORCHJOBS, job, namespace=ns)

    async def unschedulable() -> Obj | None:
        pod = await h.pod(ns, "huge-worker-0")
        conds = ((pod or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "PodScheduled" and c["status"] == "False"), None)

    cond = await ticking(clock, lambda: eventually(unschedulable, what="the worker unschedulable"))
    assert stack.simulator is not None
    nodes = len(stack.simulator.node_names)
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == (
        f"0/{nodes} nodes are available: {nodes} Insufficient nvidia.com/gpu. preemption: 0/{nodes} nodes "
        f"are available: {nodes} No preemption victims found for incoming pod."
    )

    async def failed_scheduling() -> list[Obj]:
        return [e for e in await h.events(ns, "huge-worker-0") if e.get("reason") == "FailedScheduling"]

    # The scheduler writes its Event after the pod's condition.
    events = await eventually(failed_scheduling, what="the FailedScheduling Event")
    # events.k8s.io/v1 Events (kube-scheduler's library), seen as core/v1: no `source`
    assert {(e["type"], e["reportingComponent"], e["message"]) for e in events} == {
        ("Warning", "default-scheduler", cond["message"])
    }

    await clock.advance(120)  # twice the start deadline
    await asyncio.sleep(QUIET)
    live = await h.get(PYTORCHJOBS, ns, "huge")
    assert live is not None and not is_true(live, "Failed") and condition(live, podstart.CONDITION) is None
    assert not await not_starting_events(h, ns, "huge")
    pod = await h.pod(ns, "huge-worker-0")
    assert pod is not None and not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending"
