"""Carrying out a Plan: the API writes one reconcile decided, in a fixed order.

    applier = PlanApplier(client, cache, queue, expectations, recorder, pod_group_ref)
    await applier.apply("PyTorchJob/ns/name", JOB_RESOURCES["PyTorchJob"], job, the_plan)

The order: a job delete alone; otherwise the Service and PodGroup, the HPA; the framework's extra
children (created in order, stopping at the first failure — then no pod is created either; an
`kubernetes.io/ssh-auth` Secret without data gets its key pair here), their updates; pod deletes, then
pod creates, under expectations; one status write with the resourceVersion the plan saw; events;
the requeue time. A failed write is a Warning event on the job (`Failed<Verb><Kind>`); the rest
of the plan still runs and the first failure is raised at the end, for the caller to requeue
with back-off. A 409 on the status write requeues the key and skips the rest: the cache holds
an older job, whose newer version is planned again.

Creates are careful not to storm the API server:
- Pods are created in slow-start batches (1, 2, 4, … like kube's ReplicaSet and Job
  controllers); a batch with a failure, or a job that meanwhile left the cache, got a
  deletionTimestamp or was replaced by a new job of its name (another uid), ends the wave.
- A refused pod create is no Event of its own: the wave's first refusal is remembered for the
  job (`records`), the planner turns it into Running=False (`FailedCreatePod`) with one Warning
  event when it changes, and the key is retried with back-off. A wave that creates everything
  it sent clears the record.
- A pod whose name the cache shows taken (an older pod of that name still terminating) is not
  POSTed: its deletion event brings the job back. A name held by a pod the job does not own
  and that is not going away — seen in the cache, or answered AlreadyExists for a pod the cache
  does not show — is remembered the same way (`PodNameConflict`) and retried with back-off.
- A namespace that refuses new objects — 403 with cause NamespaceTerminating (kube's
  NamespaceLifecycle admission) or 404 for the namespace itself — is closed for creates (and
  Events, which are creates too) until a job is added to it again (`namespace_accepts_creates`);
  one warning is logged per job, no Event, no back-off retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain.api.trainer.constants import COMPLETE as TRAINJOB_COMPLETE
from kubetrain.certs.sshkeys import with_generated_keys
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.expectations import Expectations
from kubetrain.kube.resources import (
    EXTRA_CHILD_RESOURCES,
    HORIZONTAL_POD_AUTOSCALERS,
    PODS,
    SERVICES,
    ResourceRef,
)
from kubetrain.kube.workqueue import WorkQueue
from kubetrain.metrics import JOBS_FAILED, JOBS_RESTARTED, JOBS_SUCCEEDED
from kubetrain.operator.draft import CreateFailure, Observed
from kubetrain.operator.plan import Plan
from kubetrain.operator.pods import controlled_by, terminating
from kubetrain.operator.status import (
    FAILED,
    REASON_FAILED_CREATE_POD,
    REASON_POD_NAME_CONFLICT,
    SUCCEEDED,
    is_true,
    terminal_condition,
)
from kubetrain.operator.tenantmetrics import count_tenant_job

log = logging.getLogger(__name__)

Obj = dict[str, Any]
HPAS = HORIZONTAL_POD_AUTOSCALERS
SLOW_START_INITIAL_BATCH = 1  # kube's controller.SlowStartInitialBatchSize
NAMESPACE_TERMINATING = "NamespaceTerminating"  # the StatusCause kube's NamespaceLifecycle gives


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
class PlanApplier:
    client: KubeClient
    cache: Cache
    queue: WorkQueue[str]
    expectations: Expectations
    recorder: EventRecorder
    pod_group_ref: ResourceRef | None  # None: no gang scheduler
    # namespaces refusing creates -> uids of the jobs already told so in the log
    closed_namespaces: dict[str, set[str]] = field(default_factory=dict)
    # The operator's own records per job uid, fed back to the planner (`records`): why the last
    # wave of pod creates stopped, and the jobs whose terminal condition this process wrote.
    create_failures: dict[str, CreateFailure] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)

    def records(self, job: Obj, observed: Observed) -> Observed:
        """`observed` with what this process recorded about `job` itself."""
        uid = job["metadata"].get("uid", "")
        observed.create_failure = self.create_failures.get(uid)
        observed.terminal_recorded = uid in self.finished
        return observed

    def forget_job(self, job: Obj) -> None:
        uid = (job.get("metadata") or {}).get("uid", "")
        self.create_failures.pop(uid, None)
        self.finished.discard(uid)

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

    async def apply(self, key: str, ref: ResourceRef, job: Obj, p: Plan) -> None:
        """Carry out `p` for `job` (of resource `ref`, queue key `key`)."""
        name = job["metadata"]["name"]
        failures: list[ApiError] = []
        if not p.delete_job and not self.creates_allowed(ref, job):
            p = _without_creates(p)
        if p.delete_job:
            await self._delete(job, ref, name, failures, propagation_policy="Background")
            if failures:
                raise failures[0]
            self.expectations.forget(key)
            return
        if p.create_service is not None:
            await self._create(job, SERVICES, p.create_service, failures)
        if p.create_pod_services:  # per-pod service mode: before the pods that use the names
            await self._create_all(ref, job, SERVICES, p.create_pod_services, failures)
        if p.create_pod_group is not None and self.pod_group_ref is not None:
            await self._create(job, self.pod_group_ref, p.create_pod_group, failures)
        if p.delete_service:
            await self._delete(job, SERVICES, name, failures)
        if p.delete_pod_services:
            await asyncio.gather(*(self._delete(job, SERVICES, n, failures) for n in p.delete_pod_services))
        if p.delete_pod_group and self.pod_group_ref is not None:
            await self._delete(job, self.pod_group_ref, name, failures)
        if p.create_hpa is not None:
            await self._create(job, HPAS, p.create_hpa, failures)
        if p.update_hpa is not None:
            await self._replace(job, HPAS, p.update_hpa, failures)
        if p.delete_hpa:
            await self._delete(job, HPAS, name, failures)
        children_ok = True
        for child in p.create_children:
            before = len(failures)  # a 409 AlreadyExists is no failure: created by an earlier reconcile
            await self._create(
                job, EXTRA_CHILD_RESOURCES[child["kind"]], with_generated_keys(child), failures
            )
            if len(failures) > before:
                children_ok = False
                break
        for child in p.update_children:
            await self._replace(job, EXTRA_CHILD_RESOURCES[child["kind"]], child, failures)
        if p.delete_pods:
            self.expectations.expect_deletions(key, p.delete_pods)
            await asyncio.gather(
                *(self._delete_pod(key, job, pod_name, failures) for pod_name in p.delete_pods)
            )
        if p.create_pods and children_ok:
            await self._create_pods(key, ref, job, p.create_pods, failures)
        if p.status is not None and not await self._write_status(key, ref, job, p.status):
            return
        if job["metadata"].get("namespace", "") not in self.closed_namespaces:
            for event in p.events:
                self.recorder.emit(job, event.type, event.reason, event.message)
        if p.requeue_at is not None:
            self.queue.add_at(key, p.requeue_at)
        if failures:
            raise failures[0]

    async def _write_status(self, key: str, ref: ResourceRef, job: Obj, status: Obj) -> bool:
        """PUT the status with the job's resourceVersion. False: the job is gone, or the write
        conflicted (the cache holds an older job than the server; its update event requeues
        the key, and so does the rate-limited requeue here)."""
        try:
            updated = await self.client.replace_status(ref, {**job, "status": status})
        except ApiError as err:
            if err.is_conflict:
                log.debug("status of %s: conflict, waiting for the newer job", key)
                self.queue.add_rate_limited(key)
                return False
            if err.is_not_found:
                return False
            raise
        # The next reconcile must start from what was written (persisted restart counts),
        # even if the watch event of this write has not arrived yet.
        meta = job["metadata"]
        store = self.cache.store(ref)
        cached = store.get(meta["namespace"], meta["name"])
        if cached is not None and cached["metadata"].get("resourceVersion") == meta.get("resourceVersion"):
            store.upsert(updated)  # only over the version we planned from, never a newer one
        if terminal_condition(status) is not None:
            self.finished.add(meta.get("uid", ""))
        _count_transitions(job, status)
        return True

    async def _create_pods(
        self, key: str, ref: ResourceRef, job: Obj, pods: list[Obj], failures: list[ApiError]
    ) -> None:
        """Create `pods` under expectations, in slow-start batches of 1, 2, 4, …; stop after a
        batch with a failure or once the job may no longer create (see the module docstring)."""
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
        batch = SLOW_START_INITIAL_BATCH
        while todo:
            chunk, todo = todo[:batch], todo[batch:]
            failed = len(failures)
            await asyncio.gather(*(self._create_pod(key, ref, job, pod, failures, refusals) for pod in chunk))
            if todo and (len(failures) > failed or not self.creates_allowed(ref, job)):
                for pod in todo:  # not sent: stop expecting them
                    self.expectations.creation_observed(key, pod["metadata"]["name"])
                log.debug("%s: stopped creating pods, %d not sent", key, len(todo))
                break
            batch *= 2
        if not refusals:
            self.create_failures.pop(uid, None)
            return
        # The API refusal (quota, admission) first: it is what the user can act on at once.
        refusals.sort(key=lambda f: f.reason != REASON_FAILED_CREATE_POD)
        self.create_failures[uid] = refusals[0]
        if len(failures) == 0:  # only names held in the cache: retry with back-off all the same
            failures.append(ApiError(409, "AlreadyExists", refusals[0].message))

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
            await self.client.create(PODS, pod, namespace=namespace)
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
            return True
        except ApiError as err:
            if verb == "Create" and namespace_closed(err):
                self._tell_closed(job)  # closes the namespace for creates; logged once per job
            elif harmless(err):
                log.debug("%s of %s %s: %s", verb.lower(), ref.kind, name, err)
            else:
                # Pods have always been "pod <name>" in these messages, other kinds "<Kind> <name>".
                what = f"pod {name}" if ref == PODS else f"{ref.kind} {name}"
                self.recorder.emit(
                    job, "Warning", f"Failed{verb}{ref.kind}", f"could not {verb.lower()} {what}: {err}"
                )
                failures.append(err)
            return False


def _name_conflict(job: Obj, name: str) -> CreateFailure:
    return CreateFailure(
        REASON_POD_NAME_CONFLICT,
        f"pod {name} already exists and is not owned by {job.get('kind')} {job['metadata'].get('name')}: "
        "delete or rename it; that pod is not created until then",
    )


def _without_creates(p: Plan) -> Plan:
    """`p` without the writes that create objects (and without its Events, which are creates too)."""
    return replace(
        p,
        create_pods=[],
        create_service=None,
        create_pod_services=[],
        create_pod_group=None,
        create_hpa=None,
        create_children=[],
        events=[],
    )


def _count_transitions(job: Obj, new: Obj) -> None:
    """Count the job's Succeeded/Failed transitions and new restarts from its old status to `new`."""
    old = job.get("status") or {}
    labels = {"kind": str(job.get("kind")), "namespace": job["metadata"].get("namespace", "")}
    # A Trainer TrainJob's success is its Complete condition (kubetrain.api.trainer).
    succeeded = next((t for t in (SUCCEEDED, TRAINJOB_COMPLETE) if is_true(new, t)), None)
    if succeeded is not None and not is_true(old, succeeded):
        JOBS_SUCCEEDED.labels(**labels).inc()
        count_tenant_job(job, "succeeded")
    if is_true(new, FAILED) and not is_true(old, FAILED):
        JOBS_FAILED.labels(**labels).inc()
        count_tenant_job(job, "failed")
    restarted = _total_restarts(new) - _total_restarts(old)
    if restarted > 0:
        JOBS_RESTARTED.labels(**labels).inc(restarted)


def _total_restarts(status: Mapping[str, Any]) -> int:
    return sum(int(rs.get("restarts") or 0) for rs in (status.get("replicaStatuses") or {}).values())
