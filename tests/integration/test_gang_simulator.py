"""Gang scheduling end to end in the dev stack: DevStack installs the PodGroup CRD of the chosen
gang scheduler and runs `GangSchedulerSimulator` (kubetrain.devcluster.gang.simulator), so a job goes
GangScheduling -> Running -> Succeeded with no test playing Volcano by hand. Waits are on
observable API state (watches, conditions), never on time."""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import Any

from pods import pod_manifest

from kubetrain.cli import build_parser
from kubetrain.commands.dev import dev
from kubetrain.dev.stack import DevStack
from kubetrain.devcluster.gang.simulator import BINDINGS_KEPT, GangSchedulerSimulator, pod_requests
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import PODS, SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS, ResourceRef

from .controller_support import WAIT, Harness, condition, eventually, is_true, job_manifest, running_stack

Obj = dict[str, Any]
RUN = {"sim.kubetrain.io/run-seconds": "0.2"}


class PhaseRecorder:
    """Every phase the API server's watch shows for one PodGroup, in order (repeats dropped)."""

    def __init__(self, client: KubeClient, ref: ResourceRef, namespace: str, name: str) -> None:
        self.client, self.ref, self.namespace, self.name = client, ref, namespace, name
        self.phases: list[str] = []
        self.last: Obj | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> PhaseRecorder:
        page = await self.client.list(self.ref, self.namespace)
        assert page["items"] == []
        self._task = asyncio.create_task(self._run(str(page["metadata"]["resourceVersion"])))
        return self

    async def _run(self, rv: str) -> None:
        async for etype, obj in self.client.watch(
            self.ref, self.namespace, resource_version=rv, field_selector=f"metadata.name={self.name}"
        ):
            if etype in ("ADDED", "MODIFIED"):
                self.last = obj
                phase = (obj.get("status") or {}).get("phase") or ""
                if not self.phases or self.phases[-1] != phase:
                    self.phases.append(phase)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def stack(gang: str, **options: Any) -> contextlib.AbstractAsyncContextManager[tuple[DevStack, Harness]]:
    return running_stack(gang_scheduler=gang, **options)


def gang_job(name: str, replicas: dict[str, int], resources: Obj, run: Obj = RUN, **extra: Any) -> Obj:
    return job_manifest(
        "PyTorchJob",
        name,
        replicas,
        resources=resources,
        pod_annotations={rtype: run for rtype in replicas},
        **extra,
    )


def unschedulable(group: Obj | None) -> Obj | None:
    for cond in ((group or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
            return dict(cond)
    return None


async def test_volcano_job_goes_through_podgroup_phases_to_succeeded() -> None:
    async with stack("volcano") as (s, h):
        assert s.gang_simulator is not None
        ns = await h.namespace("vsim")
        phases = await PhaseRecorder(h.kube, VOLCANO_PODGROUPS, ns, "ddp").start()
        history = await h.history("PyTorchJob", ns, "ddp")
        try:
            job = gang_job("ddp", {"Master": 1, "Worker": 2}, {"requests": {"cpu": "2", "memory": "4Gi"}})
            await h.create_job(job, ns)
            await h.wait_condition("PyTorchJob", ns, "ddp", "Succeeded")
            await eventually(
                lambda: "Running" in phases.phases, what=lambda: f"phase Running in {phases.phases}"
            )
            # What Volcano does: Pending, admitted (Inqueue), then Running once the gang is bound.
            assert phases.phases[:4] == ["", "Pending", "Inqueue", "Running"], phases.phases
            # The job waited for admission first (no pods meanwhile), then ran.
            waiting = history.first(
                lambda j: (condition(j, "Running") or {}).get("reason") == "GangScheduling"
            )
            assert waiting is not None
            running = history.first(lambda j: is_true(j, "Running"))
            assert running is not None and history.versions.index(waiting) < history.versions.index(running)
            # Every pod was bound by the gang scheduler (schedulerName volcano), none by the kubelet sim.
            bound = {pod for ns_, pod, _ in s.gang_simulator.bindings if ns_ == ns}
            assert bound == {"ddp-master-0", "ddp-worker-0", "ddp-worker-1"}
            # The finished job's PodGroup is deleted by the operator.
            await eventually(lambda: _gone(h, ns, "ddp"), what="PodGroup ddp deleted")
        finally:
            await phases.stop()
            await history.stop()


async def test_volcano_binds_pods_only_once_the_whole_gang_exists() -> None:
    # No operator: the test creates the PodGroup and the pods the way an operator would.
    async with stack("volcano", controller=False) as (s, h):
        assert s.gang_simulator is not None
        ns = await h.namespace("allornone")
        group = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": {"minMember": 3, "minResources": {"cpu": "3", "memory": "3Gi"}},
        }
        await h.kube.create(VOLCANO_PODGROUPS, group, namespace=ns)
        await eventually(lambda: _phase_is(h, ns, "g", "Inqueue"), what="PodGroup g admitted (Inqueue)")

        def pod(name: str) -> Obj:
            return {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "annotations": {"scheduling.k8s.io/group-name": "g"}},
                "spec": {
                    "schedulerName": "volcano",
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ],
                },
            }

        for name in ("p0", "p1"):
            await h.kube.create(PODS, pod(name), namespace=ns)
        # The gang scheduler saw both and says why it waits; neither pod is bound.
        cond = await eventually(
            lambda: _unschedulable_with(h, ns, "g", "2 Pending"), what="NotEnoughTasks with 2 pods"
        )
        assert cond["reason"] == "NotEnoughTasks"
        for name in ("p0", "p1"):
            assert not ((await h.pod(ns, name)) or {})["spec"].get("nodeName")
        assert [b for b in s.gang_simulator.bindings if b[0] == ns] == []

        await h.kube.create(PODS, pod("p2"), namespace=ns)
        for name in ("p0", "p1", "p2"):
            await s.simulator.wait_for_phase(ns, name, "Running", 30)  # type: ignore[union-attr]
        assert sorted(b[1] for b in s.gang_simulator.bindings if b[0] == ns) == ["p0", "p1", "p2"]
        final = await eventually(
            lambda: _phase_is(h, ns, "g", "Running", running=3), what="PodGroup g Running, 3 running"
        )
        assert unschedulable(final) is None


async def test_the_binding_log_keeps_only_the_newest_bindings() -> None:
    """`bindings` is a test API of a long-running simulator: it keeps the newest `bindings_kept`
    (default 10,000), so churn does not grow it without end."""
    assert BINDINGS_KEPT == 10_000
    async with stack("volcano", controller=False) as (s, h):
        assert s.gang_simulator is not None and s.simulator is not None
        await s.gang_simulator.stop()  # replaced by one that keeps two bindings
        sim = GangSchedulerSimulator(
            s.cluster.kubeconfig_path, "volcano", node_names=s.simulator.node_names, bindings_kept=2
        )
        await sim.start()
        try:
            ns = await h.namespace("bindlog")
            group = {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {"minMember": 4},
            }
            await h.kube.create(VOLCANO_PODGROUPS, group, namespace=ns)
            names = [f"b{i}" for i in range(4)]
            for name in names:
                pod = pod_manifest(
                    name,
                    namespace=ns,
                    container="c",
                    annotations={"scheduling.k8s.io/group-name": "g"},
                    schedulerName="volcano",
                )
                await h.kube.create(PODS, pod, namespace=ns)
            for name in names:
                await s.simulator.wait_for_phase(ns, name, "Running", 30)
            bound = {name: ((await h.pod(ns, name)) or {})["spec"].get("nodeName") for name in names}
            assert all(bound.values()), bound  # all four were bound by the gang scheduler...
            kept = list(sim.bindings)
            assert len(kept) == 2  # ...and the log holds the newest two, with their nodes
            assert all(b[0] == ns and bound[b[1]] == b[2] for b in kept), (kept, bound)
        finally:
            await sim.stop()


async def test_gang_that_does_not_fit_stays_pending_while_a_smaller_one_runs() -> None:
    # 3 simulated nodes x 8 GPUs = 24; the big gang needs 4 x 8 = 32.
    async with stack("volcano") as (s, h):
        ns = await h.namespace("nofit")
        big = gang_job("big", {"Master": 1, "Worker": 3}, {"limits": {"nvidia.com/gpu": "8"}})
        await h.create_job(big, ns)
        group = await eventually(
            lambda: _unschedulable_with(h, ns, "big", "minResources"), what="big unschedulable"
        )
        assert group["reason"] == "NotEnoughResources"
        assert "nvidia.com/gpu=32" in group["message"] and "nvidia.com/gpu=24" in group["message"]
        job = await h.wait_job(
            "PyTorchJob",
            ns,
            "big",
            lambda j: (condition(j, "Running") or {}).get("reason") == "GangScheduling",
            "Running=False GangScheduling",
        )
        assert not is_true(job, "Running")

        # A gang that fits is admitted and runs to the end past the waiting one.
        small = gang_job("small", {"Master": 1, "Worker": 1}, {"limits": {"nvidia.com/gpu": "4"}})
        await h.create_job(small, ns)
        await h.wait_condition("PyTorchJob", ns, "small", "Succeeded")
        assert ((await h.get(VOLCANO_PODGROUPS, ns, "big")) or {})["status"]["phase"] == "Pending"
        assert await h.pods(ns, "big") == []
        assert not [b for b in s.gang_simulator.bindings if b[1].startswith("big-")]  # type: ignore[union-attr]


async def test_scheduler_plugins_job_runs_to_succeeded() -> None:
    async with stack("scheduler-plugins") as (s, h):
        assert s.gang_simulator is not None
        ns = await h.namespace("spsim")
        phases = await PhaseRecorder(h.kube, SCHEDULER_PLUGINS_PODGROUPS, ns, "sp").start()
        try:
            # The PodGroup controller goes Scheduled -> Finished without Running when its pass
            # (every 0.2 s) first sees the pods already Succeeded, as scheduler-plugins' does:
            # pods that run for 3 s are seen Running however loaded the machine is.
            job = gang_job(
                "sp",
                {"Master": 1, "Worker": 3},
                {"requests": {"cpu": "1"}},
                {"sim.kubetrain.io/run-seconds": "3"},
                run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 60}},
            )
            await h.create_job(job, ns)
            await h.wait_condition("PyTorchJob", ns, "sp", "Succeeded")
            await eventually(lambda: "Running" in phases.phases, what=lambda: f"Running in {phases.phases}")
            assert phases.phases[0] == ""
            assert "Scheduled" in phases.phases
            assert phases.phases.index("Scheduled") < phases.phases.index("Running")
            assert phases.last is not None and phases.last["status"]["scheduled"] >= 4
            bound = sorted(p for ns_, p, _ in s.gang_simulator.bindings if ns_ == ns)
            assert bound == ["sp-master-0", "sp-worker-0", "sp-worker-1", "sp-worker-2"]
        finally:
            await phases.stop()


def test_pod_requests_count_limits_without_requests_and_init_containers() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}},
                {"resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}},
            ],
            "initContainers": [{"resources": {"requests": {"memory": "4Gi"}}}],
        }
    }
    req = pod_requests(pod)
    assert req["cpu"] == 2 and req["nvidia.com/gpu"] == 1 and req["memory"] == 4 * 2**30 and req["pods"] == 1


async def test_kubetrain_dev_with_volcano_exits_0() -> None:
    args = build_parser().parse_args(
        ["dev", "--gang-scheduler", "volcano", "--run-seconds", "0.2", "--timeout", "60"]
    )
    out = io.StringIO()
    assert await dev(args, out) == 0, out.getvalue()
    assert "Succeeded" in out.getvalue()


async def test_kubetrain_dev_without_podgroup_crd_reports_the_missing_api() -> None:
    """The job waits, saying why, until `--timeout` passes — on a FakeClock moved only once
    the reason is printed, so however slowly the machine starts the stack, the reason is seen."""
    args = build_parser().parse_args(
        ["dev", "--gang-scheduler", "volcano", "--no-podgroup-crd", "--run-seconds", "0.2", "--timeout", "1"]
    )
    out = io.StringIO()
    clock = FakeClock()
    run = asyncio.create_task(dev(args, out, clock=clock))
    try:
        await eventually(
            lambda: "scheduling.volcano.sh/v1beta1 is not installed" in out.getvalue() or run.done(),
            what=lambda: f"the missing API printed; printed:\n{out.getvalue()}",
        )
        await clock.advance(1)
        assert await asyncio.wait_for(run, WAIT) == 2, out.getvalue()  # waits (timeout), never runs pods
    finally:
        run.cancel()
    text = out.getvalue()
    assert "GangScheduling" in text and "scheduling.volcano.sh/v1beta1 is not installed" in text
    assert "GangScheduling no pods" in text and "not finished after 1s" in text, text


async def _phase_is(h: Harness, ns: str, name: str, phase: str, running: int | None = None) -> Obj | None:
    group = await h.get(VOLCANO_PODGROUPS, ns, name)
    status = (group or {}).get("status") or {}
    if status.get("phase") != phase or (running is not None and status.get("running") != running):
        return None
    return group


async def _unschedulable_with(h: Harness, ns: str, name: str, text: str) -> Obj | None:
    cond = unschedulable(await h.get(VOLCANO_PODGROUPS, ns, name))
    return cond if cond is not None and text in cond.get("message", "") else None


async def _gone(h: Harness, ns: str, name: str) -> bool:
    return await h.get(VOLCANO_PODGROUPS, ns, name) is None
