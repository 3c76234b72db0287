"""Shared helpers for the controller integration tests (tests/integration/test_controller_*.py).

Everything runs against devcluster through `kubetrain.dev.stack.DevStack` (real API server
emulation over HTTPS, real admission webhooks, the real controller, the pod simulator):

- `Harness(stack)`: a test-side `KubeClient` with its own User-Agent (`kubetrain-tests`) so
  request accounting can tell the controller's calls from the test's, plus helpers to create a
  namespace per test, create jobs, read them back, list pods and events.
- `eventually(fn, within=..., progress=...)`: polling of a sync or async function until it
  returns something truthy (never a fixed sleep); `within` is a hang guard, and with `progress`
  it bounds a stall (no change of the progress value), not the whole wait.
- `job_manifest(...)`: a minimal job of any kind; pods run until the test finishes them with the
  pod simulator (`stack.simulator.finish(...)`), unless annotated.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import aiohttp
import jobs

from kubetrain.api.labels import LABEL_JOB_ROLE
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.devcluster import podgroup_crd
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    EVENTS,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    ResourceRef,
    job_resource,
)
from kubetrain.serving.health import HealthServer

Obj = dict[str, Any]

TEST_USER_AGENT = "kubetrain-tests"
CONTROLLER_USER_AGENT = "kubetrain/"  # KubeClient's default agent: the controller in DevStack
JOB_NAME_LABEL = "kubetrain.io/job-name"
WAIT = 30.0  # generous upper bound for one asynchronous step on a loaded 2-core CI machine

# Per kind, from the framework registry: a new kind needs no line here.
CONTAINERS = {kind: jobs.container_name(kind) for kind in FRAMEWORKS}  # MPIJob: container 0
REPLICA_MAP = {kind: jobs.replica_field(kind) for kind in FRAMEWORKS}

_ns_counter = itertools.count()


class Timeout(AssertionError):
    pass


async def eventually(
    fn: Callable[[], Any],
    *,
    within: float = WAIT,
    interval: float = 0.02,
    what: str | Callable[[], str] = "condition",
    progress: Callable[[], Any] | None = None,
) -> Any:
    """Poll `fn` (sync or async) until it returns a truthy value; return that value.
    AssertionErrors raised by `fn` count as "not yet" (the last one is reported on timeout).

    `within` is a hang guard, not a performance budget. With `progress` (called after each
    poll: a value that changes as the awaited work advances, e.g. how many pods run) it bounds
    a stall instead: the wait fails only after `within` seconds without a change, so a large
    wave that keeps moving on a loaded machine is never cut short."""
    deadline = time.monotonic() + within
    last_error: AssertionError | None = None
    value: Any = None
    seen: Any = progress() if progress is not None else None
    while True:
        try:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            last_error = None
        except AssertionError as err:
            last_error = err
        if progress is not None and (now := progress()) != seen:
            seen, deadline = now, time.monotonic() + within
        if time.monotonic() >= deadline:
            desc = what() if callable(what) else what
            detail = f": {last_error}" if last_error else f" (last value {value!r})"
            stalled = " without progress" if progress is not None else ""
            raise Timeout(f"timed out after {within:.0f}s{stalled} waiting for {desc}{detail}")
        await asyncio.sleep(interval)


def job_manifest(
    kind: str,
    name: str,
    replicas: dict[str, int],
    *,
    restart_policy: str | dict[str, str] | None = None,
    run_policy: Obj | None = None,
    annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, dict[str, str]] | None = None,
    resources: Obj | None = None,
    extra_spec: Obj | None = None,
) -> Obj:
    """A job (tests/jobs.py `job`) with one framework container per replica type that exits 0.
    `restart_policy` is one policy for every type or a per-type dict; `pod_annotations` are per
    replica type."""
    specs = {
        rtype: jobs.replica(
            kind,
            n,
            image="busybox:1.36",
            container_extra={"command": ["sh", "-c", "true"]},
            restart_policy=restart_policy.get(rtype) if isinstance(restart_policy, dict) else restart_policy,
            resources=resources,
            template_metadata=(
                {"annotations": dict(pod_annotations[rtype])}
                if pod_annotations and rtype in pod_annotations
                else None
            ),
        )
        for rtype, n in replicas.items()
    }
    return jobs.job(
        kind,
        name,
        specs,
        namespace=None,
        run_policy=run_policy or None,
        spec_extra=extra_spec,
        metadata_extra={"annotations": annotations} if annotations else None,
    )


def pod_env(pod: Obj, container: str | None = None) -> dict[str, str]:
    containers = pod["spec"]["containers"]
    c = next((c for c in containers if c["name"] == container), containers[0]) if container else containers[0]
    return {e["name"]: e.get("value", "") for e in c.get("env") or ()}


def condition(job: Obj | None, ctype: str) -> Obj | None:
    for cond in ((job or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def is_true(job: Obj | None, ctype: str) -> bool:
    cond = condition(job, ctype)
    return cond is not None and cond.get("status") == "True"


def replica_status(job: Obj | None, rtype: str) -> Obj:
    return dict((((job or {}).get("status") or {}).get("replicaStatuses") or {}).get(rtype) or {})


class Harness:
    """Test-side API access to a DevStack (own client, own User-Agent)."""

    def __init__(self, stack: DevStack, client: KubeClient) -> None:
        self.stack = stack
        self.kube = client

    @classmethod
    async def open(cls, stack: DevStack) -> Harness:
        client = await KubeClient.connect(stack.cluster.kubeconfig_path, qps=0)
        client.user_agent = TEST_USER_AGENT
        return cls(stack, client)

    async def close(self) -> None:
        await self.kube.close()

    @property
    def requests(self) -> Any:
        return self.stack.cluster.requests

    @property
    def faults(self) -> Any:
        return self.stack.cluster.faults

    @property
    def sim(self) -> Any:
        assert self.stack.simulator is not None
        return self.stack.simulator

    async def namespace(self, prefix: str = "t") -> str:
        name = f"{prefix}-{next(_ns_counter)}-{time.monotonic_ns() % 100000}"
        await self.kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name

    async def create_job(self, job: Obj, namespace: str) -> Obj:
        return await self.kube.create(job_resource(str(job["kind"])), job, namespace=namespace)

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
        """The object, or None when it does not exist (404)."""
        try:
            return await self.kube.get(ref, namespace, name)
        except ApiError as err:
            if err.is_not_found:
                return None
            raise

    async def wait_true(self, ref: ResourceRef, namespace: str, name: str, ctype: str) -> Obj:
        """The job of `ref` (any group) once its condition `ctype` is True."""

        async def check() -> Obj | None:
            job = await self.get(ref, namespace, name)
            return job if is_true(job, ctype) else None

        found: Obj = await eventually(check, what=f"{ref.kind} {namespace}/{name} {ctype}=True")
        return found

    async def change(self, ref: ResourceRef, namespace: str, name: str, edit: Callable[[Obj], None]) -> Obj:
        """Replace the object with `edit` applied to its latest version, read again after a
        conflict (the controller writes its status meanwhile): what a client that means "this
        change, to whatever is stored" does. Any other refusal is raised."""
        for _ in range(20):
            obj = await self.kube.get(ref, namespace, name)
            edit(obj)
            try:
                result: Obj = await self.kube.replace(ref, obj)
                return result
            except ApiError as err:
                if not err.is_conflict:
                    raise
        raise AssertionError(f"{name}: 20 conflicts in a row")

    async def absent(self, ref: ResourceRef, namespace: str, name: str) -> bool:
        return await self.get(ref, namespace, name) is None

    async def job(self, kind: str, namespace: str, name: str) -> Obj | None:
        return await self.get(job_resource(kind), namespace, name)

    async def pods(self, namespace: str, job_name: str | None = None) -> list[Obj]:
        selector = f"{JOB_NAME_LABEL}={job_name}" if job_name else JOB_NAME_LABEL
        page = await self.kube.list(PODS, namespace, label_selector=selector)
        return sorted(page["items"], key=lambda p: p["metadata"]["name"])

    async def pod(self, namespace: str, name: str) -> Obj | None:
        return await self.get(PODS, namespace, name)

    async def assert_ready_by(self, namespace: str, names: Sequence[str], when: str) -> None:
        """Every pod of `names` exists and is Ready, and became Ready no later than `when` (an
        RFC 3339 time, such as another pod's creationTimestamp)."""
        for name in names:
            pod = await self.pod(namespace, name)
            assert pod is not None
            ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
            assert ready["status"] == "True" and ready["lastTransitionTime"] <= when

    async def running_pod(self, namespace: str, name: str, *, not_uid: str | None = None) -> Obj | None:
        """The pod `name` when it is Running and not terminating (and, with `not_uid`, is a
        new pod under the same name), else None."""
        pod = await self.pod(namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod["metadata"]["uid"] == not_uid:
            return None
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    async def wait_recreated(self, namespace: str, name: str, old_uid: str) -> Obj:
        """Wait for the pod `name` to exist again with another uid, Running."""
        return await eventually(
            lambda: self.running_pod(namespace, name, not_uid=old_uid),
            what=f"pod {namespace}/{name} recreated (not uid {old_uid}) and Running",
        )

    async def service(self, namespace: str, name: str) -> Obj | None:
        return await self.get(SERVICES, namespace, name)

    async def events(self, namespace: str, name: str) -> list[Obj]:
        page = await self.kube.list(EVENTS, namespace, field_selector=f"involvedObject.name={name}")
        return list(page["items"])

    async def event_reasons(self, namespace: str, name: str) -> list[str]:
        return [str(e.get("reason")) for e in await self.events(namespace, name)]

    async def history(
        self, kind: str, namespace: str, name: str, ref: ResourceRef | None = None
    ) -> JobHistory:
        return await JobHistory(self.kube, kind, namespace, name, ref).start()

    async def wait_job(
        self,
        kind: str,
        namespace: str,
        name: str,
        pred: Callable[[Obj], bool],
        what: str,
        within: float = WAIT,
    ) -> Obj:
        last: list[Obj | None] = [None]

        async def check() -> Obj | None:
            job = await self.job(kind, namespace, name)
            last[0] = job
            return job if job is not None and pred(job) else None

        def describe() -> str:
            status = (last[0] or {}).get("status")
            return f"{kind} {namespace}/{name}: {what}; status now {json.dumps(status, indent=1)}"

        return await eventually(check, within=within, what=describe)

    async def wait_condition(
        self, kind: str, namespace: str, name: str, ctype: str, within: float = WAIT
    ) -> Obj:
        return await self.wait_job(
            kind, namespace, name, lambda j: is_true(j, ctype), f"condition {ctype}=True", within
        )

    async def wait_pods(
        self, namespace: str, job_name: str, n: int, *, phase: str | None = "Running"
    ) -> list[Obj]:
        """Wait until exactly `n` of the job's pods (terminating ones aside) are in `phase`. The
        wait fails after WAIT seconds in which that count did not move: a wave of hundreds of
        pods takes as long as the machine's load makes it, a stalled one still fails."""
        counted = [-1]

        async def check() -> list[Obj] | None:
            pods = [
                p for p in await self.pods(namespace, job_name) if not p["metadata"].get("deletionTimestamp")
            ]
            if phase is not None:
                pods = [p for p in pods if (p.get("status") or {}).get("phase") == phase]
            counted[0] = len(pods)
            return pods if len(pods) == n else None

        # Polled every 0.1 s: each poll lists every pod of the job with its managedFields (as a
        # real API server answers), and a faster poll of 300 pods starves the in-process simulator.
        return await eventually(
            check,
            interval=0.1,
            what=lambda: f"{n} pods of {namespace}/{job_name} in phase {phase} (now {counted[0]})",
            progress=lambda: counted[0],
        )

    async def wait_pod_names(self, namespace: str, job_name: str, names: list[str]) -> list[Obj]:
        """Wait until exactly the pods `names` exist for the job (terminating ones count as gone)."""
        last: list[list[str]] = [[]]

        async def check() -> list[Obj] | None:
            pods = [
                p for p in await self.pods(namespace, job_name) if not p["metadata"].get("deletionTimestamp")
            ]
            last[0] = [p["metadata"]["name"] for p in pods]
            return pods if sorted(last[0]) == sorted(names) else None

        if not names:
            await eventually(
                lambda: self._none_left(namespace, job_name), what=f"no pods of {namespace}/{job_name}"
            )
            return []
        return await eventually(
            check, what=lambda: f"pods {sorted(names)} of {namespace}/{job_name} (now {last[0]})"
        )

    async def _none_left(self, namespace: str, job_name: str) -> bool:
        return not await self.pods(namespace, job_name)

    async def wait_event(self, namespace: str, name: str, reason: str) -> Obj:
        async def check() -> Obj | None:
            return next((e for e in await self.events(namespace, name) if e.get("reason") == reason), None)

        return await eventually(check, what=f"an event {reason} on {namespace}/{name}")

    async def finish_all(self, namespace: str, job_name: str, exit_code: int = 0) -> None:
        pods = await self.pods(namespace, job_name)
        # The master-role pod last: its success can end the job, and cleanPodPolicy then
        # deletes the pods still running before they could be finished.
        pods.sort(key=lambda p: (p["metadata"].get("labels") or {}).get(LABEL_JOB_ROLE) == "master")
        for pod in pods:
            await self.sim.finish(namespace, pod["metadata"]["name"], exit_code=exit_code)

    async def end_ok_bad_and_rs(self, namespace: str) -> None:
        """The metrics tests' three jobs, once their pods exist: `ok` (2 pods) succeeds, `bad` (1)
        fails with exit code 1, and `rs`'s Master (restartPolicy ExitCode) is killed (137:
        retryable, so it restarts)."""
        await self.wait_pods(namespace, "ok", 2)
        await self.wait_pods(namespace, "bad", 1)
        await self.wait_pods(namespace, "rs", 1)
        await self.finish_all(namespace, "ok")
        await self.finish_all(namespace, "bad", exit_code=1)
        await self.sim.finish(namespace, "rs-master-0", exit_code=137)

    async def install_crd(self, crd: Obj) -> None:
        await self.kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        spec = crd["spec"]
        version = spec["versions"][0]["name"]
        await eventually(
            lambda: self.kube.has_api(spec["group"], version, spec["names"]["plural"]),
            what=f"API {spec['group']}/{version} {spec['names']['plural']} served",
        )


class JobHistory:
    """Every version of one job as a watch delivers it (so transient states such as a short
    Restarting are seen however fast the controller moves on). Survives dropped watches and
    expired resourceVersions (reconnects / relists)."""

    def __init__(
        self, client: KubeClient, kind: str, namespace: str, name: str, ref: ResourceRef | None = None
    ) -> None:
        self.client, self.kind, self.namespace, self.name = client, kind, namespace, name
        self.ref = ref or job_resource(kind)  # kubetrain.io's kind unless another group's is given
        self.versions: list[Obj] = []
        self.deleted = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> JobHistory:
        ref = self.ref
        page = await self.client.list(ref, self.namespace, field_selector=f"metadata.name={self.name}")
        self.versions.extend(page["items"])
        self._task = asyncio.create_task(self._run(str(page["metadata"]["resourceVersion"])))
        return self

    async def _run(self, rv: str) -> None:
        ref = self.ref
        while True:
            try:
                async for etype, obj in self.client.watch(
                    ref, self.namespace, resource_version=rv, field_selector=f"metadata.name={self.name}"
                ):
                    rv = str(obj.get("metadata", {}).get("resourceVersion") or rv)
                    if etype in ("ADDED", "MODIFIED"):
                        self.versions.append(obj)
                    elif etype == "DELETED":
                        self.deleted = True
            except ApiError as err:
                if err.status == 410:
                    page = await self.client.list(
                        ref, self.namespace, field_selector=f"metadata.name={self.name}"
                    )
                    self.versions.extend(page["items"])
                    rv = str(page["metadata"]["resourceVersion"])
                else:
                    await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def first(self, pred: Callable[[Obj], bool]) -> Obj | None:
        return next((v for v in self.versions if pred(v)), None)

    async def wait(self, pred: Callable[[Obj], bool], what: str, within: float = WAIT) -> Obj:
        def describe() -> str:
            last = self.versions[-1].get("status") if self.versions else None
            return (
                f"{self.kind} {self.namespace}/{self.name}: {what}; last status {json.dumps(last, indent=1)}"
            )

        return await eventually(lambda: self.first(pred), within=within, what=describe)

    def statuses_written(self) -> int:
        """How many distinct status versions the job went through (status-changing writes)."""
        seen: list[Any] = []
        for v in self.versions:
            status = v.get("status")
            if status and (not seen or seen[-1] != status):
                seen.append(status)
        return len(seen)


# The API groups a stack serves for the Trainer v2 tests and for the Kubeflow training-operator's.
TRAINER_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")
KUBEFLOW_API_GROUPS = ("kubetrain.io", "kubeflow.org")


async def open_stack(**options: Any) -> AsyncIterator[tuple[DevStack, Harness]]:
    """Async generator body for fixtures: a started DevStack and a Harness on it."""
    stack = DevStack(DevStackOptions(**options))
    await stack.start()
    harness = await Harness.open(stack)
    try:
        yield stack, harness
    finally:
        await harness.close()
        await stack.stop()


async def label_nodes(stack: DevStack, h: Harness, *labels: dict[str, str]) -> None:
    """Add `labels[i]` to the i-th simulated node: the labels a cluster's nodes carry for the
    nodeSelectors a test's pods name (Kueue's flavors, topology domains, a runtime's node type);
    the simulated scheduler binds a pod only to a node its nodeSelector matches."""
    assert stack.simulator is not None
    for node, extra in zip(stack.simulator.node_names, labels, strict=False):
        await h.kube.patch(NODES, None, node, {"metadata": {"labels": extra}})


# The three simulated nodes as the Kueue tests' ResourceFlavors (`cloud.example.com/flavor`,
# `flavor`) and Topology (`topology.example.com/block`) select them.
KUEUE_NODE_LABELS = (
    {"cloud.example.com/flavor": "a", "topology.example.com/block": "b1", "flavor": "a"},
    {"cloud.example.com/flavor": "a", "topology.example.com/block": "b1"},
    {"cloud.example.com/flavor": "b", "topology.example.com/block": "b1"},
)


# `async with running_stack(**options) as (stack, harness):` — `open_stack` inside one test.
running_stack = contextlib.asynccontextmanager(open_stack)


@contextlib.asynccontextmanager
async def gang_stack(gang: str, with_crd: bool = True) -> AsyncIterator[tuple[DevStack, Harness]]:
    """A stack for gang scheduler `gang` ("volcano" or "scheduler-plugins") whose controller
    starts after the PodGroup CRD (if any) is served (a CRD installed later:
    test_controller_gang_late_crd.py)."""
    stack = DevStack(DevStackOptions(gang_scheduler=gang, controller=False, podgroup_crd=False))
    await stack.start()
    h = await Harness.open(stack)
    try:
        if with_crd:
            await h.install_crd(podgroup_crd(gang))
        await stack.start_controller()
        yield stack, h
    finally:
        await h.close()
        await stack.stop()


# --------------------------------------------------------------------------------------------
# A controller on a FakeClock (time-driven behaviour: deadlines, TTLs, crons, stalls)

T = TypeVar("T")


async def open_clocked_stack(
    start: datetime, **options: Any
) -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    """`open_stack` with the controller on a FakeClock starting at `start`."""
    clock = FakeClock(start=start)
    async for stack, harness in open_stack(controller_clock=clock, **options):
        yield stack, harness, clock


async def ticking(clock: FakeClock, fn: Callable[[], Awaitable[T]]) -> T:
    """Wait for an API-driven step while nudging the fake clock forward 1 ms per poll, so the
    controller's work-queue back-offs (5 ms and up, on the fake clock) still fire. Deadline
    checks never use this: they advance to an exact instant (`advance_to`)."""
    task = asyncio.ensure_future(fn())
    try:
        while not task.done():
            await clock.advance(0.001)
            await asyncio.sleep(0.02)
        return task.result()
    finally:
        task.cancel()


async def advance_to(clock: FakeClock, when: datetime) -> None:
    """Advance the fake clock to the instant `when` (not back, if it is past). FakeClock keeps
    float seconds, so a 1 µs margin (below any timestamp's resolution) absorbs the rounding."""
    await clock.advance(max((when - clock.now()).total_seconds(), 0) + 1e-6)


async def refusal(coro: Any) -> str:
    """The API server's refusal of a request (its error as text); AssertionError if it accepted."""
    try:
        await coro
    except ApiError as err:
        return str(err)
    raise AssertionError("the API server accepted it")


# --- the operator's /metrics ------------------------------------------------------------------------
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


async def metrics_text() -> str:
    """The text of /metrics on a health server of this process (the registry every in-process
    operator, webhook and controller of the tests writes to)."""
    health = HealthServer(host="127.0.0.1", port=0)
    await health.start()
    try:
        url = f"http://127.0.0.1:{health.port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            assert resp.status == 200
            return await resp.text()
    finally:
        await health.stop()


async def scrape() -> dict[str, float]:
    """`name{labels}` -> value of every sample on /metrics (`metrics_text`)."""
    samples = {}
    for line in (await metrics_text()).splitlines():
        match = SAMPLE.match(line)
        if match:
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples
