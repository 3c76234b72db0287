"""The children's writes for one job: one write and what its failure means, pod creates in
slow-start waves under expectations, and namespaces closed for creates (see `apply.py`'s
docstring for the rules; `PlanApplier` decides which writes a Plan makes and in what order).

- Pods are created in slow-start batches (1, 2, 4, … 16, like kube's ReplicaSet and Job
  controllers), then pipelined with 16 creates in flight; a batch with a failure (once pipelined:
  a failure), or a job that meanwhile left the cache, got a deletionTimestamp or was replaced by
  a new job of its name (another uid), ends the wave. A job whose last wave was a full pass (a
  large job's first 500), was pipelined and created every pod it sent starts its next pass
  pipelined: its creates are known to go through, and a refusal still ends the wave (≤ 16 in
  flight). Any other wave slow-starts — the pods that replace deleted or failed ones, above all
  while a namespace is being deleted, where the first refusal closes it after one create.
- A pod or Service write that goes through is training-operator's Normal event on the job
  (`SuccessfulCreatePod`, …, `podevents.py`), budgeted per job as client-go's recorder does.
- A failed write is a Warning event on the job (`Failed<Verb><Kind>`; a PVC create's is
  `PVCCreationFailed`, JobSet's) and a failure for the caller to raise; a harmless one
  (AlreadyExists for a create, NotFound for a delete) is logged.
- A namespace that refuses new objects is closed for creates until a job is added to it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.resources import PODS, ResourceRef
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.operator.draft import CreateFailure
from kubetrain.operator.podevents import succeeded_write
from kubetrain.operator.pods import conflicting_holder, controlled_by, terminating
from kubetrain.operator.status import REASON_FAILED_CREATE_POD, REASON_POD_NAME_CONFLICT

log = logging.getLogger(__name__)

Obj = dict[str, Any]
SLOW_START_INITIAL_BATCH = 1  # kube's controller.SlowStartInitialBatchSize
# Pod creates: slow-start batches up to this size, each waiting for the one before; once a batch
# this size went through, the rest is pipelined with PIPELINED_CREATES in flight — each create
# sent as one returns — so that no batch waits for its slowest request (on a large job the
# barriers cost more than the creates). Each request in flight holds its own HTTP/1.1
# connection: as many in flight as the last batch reuses that batch's connections, where more
# would open (and TLS-handshake, on both sides) new ones in the middle of the wave; 16 keep an
# API server that answers a create in ~1 ms busy (16 keep-alive connections are the bare
# client of benchmarks/bench_large_job.py).
SLOW_START_LAST_BATCH = 16
PIPELINED_CREATES = SLOW_START_LAST_BATCH
NAMESPACE_TERMINATING = "NamespaceTerminating"  # the StatusCause kube's NamespaceLifecycle gives
# Failed writes whose event reason is not `Failed<Verb><Kind>`: the PVCs of a TrainJob's
# volumeClaimPolicies, under JobSet's reason.
FAILED_REASONS = {("Create", "PersistentVolumeClaim"): "PVCCreationFailed"}
# Extra children read back when their create is answered AlreadyExists, to tell the job's own
# (or one nobody controls) from one still held by an earlier job of the same name: PVCs, which
# the job's pods would otherwise mount while they are being deleted.
READ_ON_CONFLICT = {"PersistentVolumeClaim"}


def namespace_closed(err: ApiError) -> bool:
    """Whether a create failed because its namespace takes no new objects: being terminated
    (403 Forbidden, cause NamespaceTerminating) or gone (404 for the namespace)."""
    body = err.body if isinstance(err.body, Mapping) else {}
    details = body.get("details")
    details = details if isinstance(details, Mapping) else {}
    if err.status == 403:
        causes = details.get("causes") or ()
        return (
            any(isinstance(c, Mapping) and c.get("reason") == NAMESPACE_TERMINATING for c in causes)
            or "because it is being terminated" in err.message
        )
    return err.status == 404 and details.get("kind") == "namespaces"


@dataclass
class ChildWriter:
    client: KubeClient
    cache: Cache
    queue: WorkQueue[str]
    expectations: Expectations
    recorder: EventRecorder
    pod_group_ref: ResourceRef | None  # None: no gang scheduler
    # namespaces refusing creates -> uids of the jobs already told so in the log
    closed_namespaces: dict[str, set[str]] = field(default_factory=dict)
    # Why the last wave of pod creates of a job (by uid) stopped, fed back to the planner.
    create_failures: dict[str, CreateFailure] = field(default_factory=dict)
    # Jobs (by uid) whose last wave was a full pass, pipelined, and created every pod it sent:
    # their next wave (the next pass of at most 500) starts pipelined instead of slow-starting.
    creates_proven: set[str] = field(default_factory=set)

    def namespace_accepts_creates(self, namespace: str) -> None:
        """A job was added to `namespace`: it takes new objects (again)."""
        self.closed_namespaces.pop(namespace, None)

    def creates_allowed(self, ref: ResourceRef, job: Obj) -> bool:
        """Whether `job` may still create children: its namespace is not closed, and the cache
        holds this very job (same uid) without a deletionTimestamp."""
        meta = job["metadata"]
        namespace = meta.get("namespace", "")
        if namespace in self.closed_namespaces:
            self._tell_closed(job)
            return False
        current = self.cache.get(ref, namespace, meta.get("name", ""))
        return (
            current is not None
            and current["metadata"].get("uid") == meta.get("uid")
            and not current["metadata"].get("deletionTimestamp")
        )

    def _tell_closed(self, job: Obj) -> None:
        """Log, once per job, that its namespace takes no new objects."""
        meta = job["metadata"]
        namespace = meta.get("namespace", "")
        told = self.closed_namespaces.setdefault(namespace, set())
        if meta.get("uid", "") not in told:
            told.add(meta.get("uid", ""))
            log.warning(
                "%s %s/%s: namespace %s takes no new objects (being terminated or gone); "
                "not creating its pods",
                job.get("kind"),
                namespace,
                meta.get("name"),
                namespace,
            )

    async def _create_pods(
        self,
        key: str,
        ref: ResourceRef,
        job: Obj,
        pods: list[Obj],
        failures: list[ApiError],
        *,
        continues: bool = False,
    ) -> None:
        """Create `pods` under expectations, in slow-start batches of 1, 2, 4, … 16, then
        pipelined (PIPELINED_CREATES in flight) — pipelined from the start when the job's last
        wave was a full pass (`continues`), pipelined and created every pod it sent
        (`creates_proven`); stop after a batch with a failure, at the first failure once
        pipelined, or once the job may no longer create (see the module docstring)."""
        if not self.creates_allowed(ref, job):  # e.g. the Service create just found the namespace closed
            return
        store = self.cache.store(PODS)
        namespace = job["metadata"].get("namespace", "")
        uid = job["metadata"].get("uid", "")
        refusals: list[CreateFailure] = []
        # A name the cache shows taken would be answered AlreadyExists: wait for its deletion.
        todo = []
        for pod in pods:
            held = store.get(namespace, pod["metadata"]["name"])
            if held is None:
                todo.append(pod)
            elif not terminating(held) and not controlled_by(held, job):
                refusals.append(_name_conflict(job, pod["metadata"]["name"]))
        if len(todo) < len(pods):
            log.debug("%s: %d pod name(s) still taken, not creating them yet", key, len(pods) - len(todo))
        self.expectations.expect_creations(key, [pod["metadata"]["name"] for pod in todo])
        proven = uid in self.creates_proven
        self.creates_proven.discard(uid)
        batch = SLOW_START_LAST_BATCH * 2 if proven else SLOW_START_INITIAL_BATCH
        pipelined = proven
        while todo:
            if batch > SLOW_START_LAST_BATCH:
                todo = await self._create_pipelined(key, ref, job, todo, failures, refusals)
                stopped, pipelined = bool(todo), True
            else:
                chunk, todo = todo[:batch], todo[batch:]
                failed = len(failures)
                await asyncio.gather(
                    *(self._create_pod(key, ref, job, pod, failures, refusals) for pod in chunk)
                )
                stopped = bool(todo) and (len(failures) > failed or not self.creates_allowed(ref, job))
            if stopped:
                for pod in todo:  # not sent: stop expecting them
                    self.expectations.creation_observed(key, pod["metadata"]["name"])
                log.debug("%s: stopped creating pods, %d not sent", key, len(todo))
                break
            batch *= 2
        if not refusals:
            self.create_failures.pop(uid, None)
            if pipelined and not todo and continues:
                self.creates_proven.add(uid)
            return
        # The API refusal (quota, admission) first: it is what the user can act on at once.
        refusals.sort(key=lambda f: f.reason != REASON_FAILED_CREATE_POD)
        self.create_failures[uid] = refusals[0]
        if len(failures) == 0:  # only names held in the cache: retry with back-off all the same
            failures.append(ApiError(409, "AlreadyExists", refusals[0].message))

    async def _create_pipelined(
        self,
        key: str,
        ref: ResourceRef,
        job: Obj,
        todo: list[Obj],
        failures: list[ApiError],
        refusals: list[CreateFailure],
    ) -> list[Obj]:
        """Create `todo` with PIPELINED_CREATES in flight, the next sent as one returns; the
        first failure, or the job no longer allowed to create, stops sending (those in flight
        finish). The pods not sent."""
        sent = 0
        stop = False

        async def lane() -> None:
            nonlocal sent, stop
            while not stop and sent < len(todo):
                pod = todo[sent]
                sent += 1
                failed = len(failures)
                await self._create_pod(key, ref, job, pod, failures, refusals)
                if len(failures) > failed or not self.creates_allowed(ref, job):
                    stop = True

        await asyncio.gather(*(lane() for _ in range(min(PIPELINED_CREATES, len(todo)))))
        return todo[sent:]

    async def _create_all(
        self, job_ref: ResourceRef, job: Obj, ref: ResourceRef, bodies: list[Obj], failures: list[ApiError]
    ) -> None:
        """Create `bodies` in slow-start batches (1, 2, 4, …), stopping after a batch with a
        failure or once the job may no longer create."""
        batch, todo = SLOW_START_INITIAL_BATCH, bodies
        while todo:
            chunk, todo = todo[:batch], todo[batch:]
            failed = len(failures)
            await asyncio.gather(*(self._create(job, ref, body, failures) for body in chunk))
            if len(failures) > failed or not self.creates_allowed(job_ref, job):
                return
            batch *= 2

    async def _create_pod(
        self,
        key: str,
        ref: ResourceRef,
        job: Obj,
        pod: Obj,
        failures: list[ApiError],
        refusals: list[CreateFailure],
    ) -> None:
        """POST one pod. A refusal is no Event of its own (see the module docstring)."""
        name = pod["metadata"]["name"]
        namespace = job["metadata"]["namespace"]
        try:
            await self.client.create_only(PODS, pod, namespace=namespace)  # the watch brings it back
            self._succeeded(job, "Create", PODS, name)
            return
        except ApiError as err:
            # The informer will not report this pod as created by us: stop expecting it.
            self.expectations.creation_observed(key, name)
            if namespace_closed(err):
                self.closed_namespaces.setdefault(namespace, set())
                self.creates_allowed(ref, job)  # logs it once for this job
                return
            if err.is_already_exists:
                # The cache does not show the pod holding the name (it has not our job-name
                # label): it is not one of this job's pods.
                refusals.append(_name_conflict(job, name))
            else:
                message = f"could not create pod {name}: {err.message or err}"
                refusals.append(CreateFailure(REASON_FAILED_CREATE_POD, message))
            failures.append(err)

    async def _delete_pod(self, key: str, job: Obj, pod_name: str, failures: list[ApiError]) -> None:
        if not await self._delete(job, PODS, pod_name, failures):
            self.expectations.deletion_observed(key, pod_name)

    async def _create(self, job: Obj, ref: ResourceRef, body: Obj, failures: list[ApiError]) -> bool:
        """POST `body` into the job's namespace. AlreadyExists: created by an earlier reconcile,
        the cache has not seen it yet."""
        return await self._write(
            job,
            "Create",
            ref,
            body["metadata"]["name"],
            failures,
            self.client.create(ref, body, namespace=job["metadata"]["namespace"]),
            lambda err: err.is_already_exists,
        )

    async def _create_child(self, job: Obj, ref: ResourceRef, body: Obj, failures: list[ApiError]) -> None:
        """`_create` for an extra child. AlreadyExists for a kind in READ_ON_CONFLICT: the object
        is read, and one being deleted or controlled by another object is a failure (its Warning
        event says whose it is; the job's pods wait and the job is retried with back-off)."""
        before = len(failures)
        if await self._create(job, ref, body, failures) or len(failures) > before:
            return
        if ref.kind not in READ_ON_CONFLICT or job["metadata"].get("namespace", "") in self.closed_namespaces:
            return  # done, or not created in a namespace that refuses new objects (no retries)
        name = body["metadata"]["name"]
        reason = FAILED_REASONS.get(("Create", ref.kind), f"FailedCreate{ref.kind}")
        try:
            existing = await self.client.get(ref, job["metadata"]["namespace"], name)
        except ApiError as err:
            if not err.is_not_found:  # not found: gone since the create, the next pass creates it
                self.recorder.emit(
                    job, "Warning", reason, f"could not read {ref.kind} {name} that already exists: {err}"
                )
            failures.append(err)
            return
        why = conflicting_holder(existing, job)
        if why:
            message = (
                f"{ref.kind} {name} already exists and {why}: waiting for it to be gone before creating pods"
            )
            self.recorder.emit(job, "Warning", reason, message)
            failures.append(ApiError(409, "AlreadyExists", message))

    async def _replace(self, job: Obj, ref: ResourceRef, body: Obj, failures: list[ApiError]) -> bool:
        """PUT `body` with the resourceVersion the plan saw. 409/404: the cache is behind; the
        watch event of the newer object (or its deletion) requeues the job."""
        return await self._write(
            job,
            "Update",
            ref,
            body["metadata"]["name"],
            failures,
            self.client.replace(ref, body),
            lambda err: err.is_conflict or err.is_not_found,
        )

    async def _delete(
        self, job: Obj, ref: ResourceRef, name: str, failures: list[ApiError], **options: Any
    ) -> bool:
        """DELETE `name` from the job's namespace; NotFound is success."""
        return await self._write(
            job,
            "Delete",
            ref,
            name,
            failures,
            self.client.delete(ref, job["metadata"]["namespace"], name, **options),
            lambda err: err.is_not_found,
        )

    async def _write(
        self,
        job: Obj,
        verb: str,
        ref: ResourceRef,
        name: str,
        failures: list[ApiError],
        call: Coroutine[Any, Any, Any],
        harmless: Callable[[ApiError], bool],
    ) -> bool:
        """Await one write for `job`; whether it succeeded. A `harmless` error is only logged;
        any other is a Warning event on the job and a failure for `apply` to raise."""
        try:
            await call
            self._succeeded(job, verb, ref, name)
            return True
        except ApiError as err:
            if verb == "Create" and namespace_closed(err):
                self._tell_closed(job)  # closes the namespace for creates; logged once per job
            elif harmless(err):
                log.debug("%s of %s %s: %s", verb.lower(), ref.kind, name, err)
            else:
                # Pods have always been "pod <name>" in these messages, other kinds "<Kind> <name>".
                what = f"pod {name}" if ref == PODS else f"{ref.kind} {name}"
                reason = FAILED_REASONS.get((verb, ref.kind), f"Failed{verb}{ref.kind}")
                self.recorder.emit(job, "Warning", reason, f"could not {verb.lower()} {what}: {err}")
                failures.append(err)
            return False

    def _succeeded(self, job: Obj, verb: str, ref: ResourceRef, name: str) -> None:
        """training-operator's Normal Event for a pod or Service write that went through
        (`podevents.py`), within the job's event budget."""
        event = succeeded_write(job, verb, ref.kind, name)
        if event is not None:
            self.recorder.emit(job, "Normal", *event, budgeted=True)


def _name_conflict(job: Obj, name: str) -> CreateFailure:
    return CreateFailure(
        REASON_POD_NAME_CONFLICT,
        f"pod {name} already exists and is not owned by {job.get('kind')} {job['metadata'].get('name')}: "
        "delete or rename it; that pod is not created until then",
    )
