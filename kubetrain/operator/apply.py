"""Carrying out a Plan: the API writes one reconcile decided, in a fixed order (each write,
the pod create waves and closed namespaces are `writes.py`'s `ChildWriter`).

    applier = PlanApplier(client, cache, queue, expectations, recorder, pod_group_ref)
    await applier.apply("PyTorchJob/ns/name", JOB_RESOURCES["PyTorchJob"], job, the_plan)

The order: a job delete alone; otherwise the Service and PodGroup, the HPA; the framework's extra
children (created in order, stopping at the first failure — then no pod is created either; a
Secret planned without data gets its keys here, `certs/secretdata.py`), their updates; pod deletes, then
pod creates, under expectations, and alongside them (concurrently: the status is the plan's,
whatever the creates answer) one status write with the resourceVersion the plan saw; events; the
requeue time. A failed write is a Warning event on the job (`Failed<Verb><Kind>`); the rest
of the plan still runs and the first failure is raised at the end, for the caller to requeue
with back-off. A 409 on the status write requeues the key and skips the rest: the cache holds
an older job, whose newer version is planned again.

Creates are careful not to storm the API server:
- Pods are created in slow-start batches (1, 2, 4, … 16, like kube's ReplicaSet and Job
  controllers), then 16 in flight, each sent as one returns (from the start when the job's last
  wave left more pods for this pass and went through that far without a failure); a failure,
  or a job that meanwhile left the cache, got a deletionTimestamp or was replaced by a new job
  of its name (another uid), ends the wave.
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
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from kubetrain.certs.secretdata import with_generated_keys
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import (
    EXTRA_CHILD_RESOURCES,
    HORIZONTAL_POD_AUTOSCALERS,
    INGRESSES,
    SERVICES,
    ResourceRef,
)
from kubetrain.operator.draft import Observed
from kubetrain.operator.jobcounts import count_job
from kubetrain.operator.plan import Plan
from kubetrain.operator.podstart import Listed
from kubetrain.operator.status import (
    FAILED,
    SUCCEEDED,
)
from kubetrain.operator.writes import ChildWriter

log = logging.getLogger(__name__)

Obj = dict[str, Any]
HPAS = HORIZONTAL_POD_AUTOSCALERS
T = TypeVar("T")


@dataclass
class PlanApplier(ChildWriter):
    # The operator's own records per job uid, fed back to the planner (`records`): why the last
    # wave of pod creates stopped (`create_failures`, kept by ChildWriter), the jobs whose
    # terminal condition this process wrote, and what their PodsNotStarting condition lists
    # (kept from the first one that lists a container).
    finished: set[str] = field(default_factory=set)
    not_starting: dict[str, Listed] = field(default_factory=dict)

    def records(self, job: Obj, observed: Observed) -> Observed:
        """`observed` with what this process recorded about `job` itself."""
        uid = job["metadata"].get("uid", "")
        observed.create_failure = self.create_failures.get(uid)
        observed.terminal_recorded = uid in self.finished
        observed.not_starting = self.not_starting.get(uid)
        return observed

    def forget_job(self, job: Obj) -> None:
        uid = (job.get("metadata") or {}).get("uid", "")
        self.create_failures.pop(uid, None)
        self.creates_proven.discard(uid)
        self.finished.discard(uid)
        self.not_starting.pop(uid, None)

    def _record_not_starting(self, job: Obj, listed: Listed | None) -> None:
        """Keep what the job's PodsNotStarting condition lists, once the plan's status is written."""
        uid = job["metadata"].get("uid", "")
        if listed is not None and (listed.count or uid in self.not_starting):
            self.not_starting[uid] = listed

    async def apply(self, key: str, ref: ResourceRef, job: Obj, p: Plan) -> None:
        """Carry out `p` for `job` (of resource `ref`, queue key `key`)."""
        name = job["metadata"]["name"]
        failures: list[ApiError] = []
        if not p.delete_job and not self.creates_allowed(ref, job):
            p = _without_creates(p)
        if p.delete_job:
            deleted = await self._delete(job, ref, name, failures, propagation_policy="Background")
            if failures:
                raise failures[0]
            if deleted:  # not when it was gone already
                count_job(job, "deleted")
            self.expectations.forget(key)
            return
        if p.create_service is not None:
            await self._create(job, SERVICES, p.create_service, failures)
        if p.create_pod_services:  # per-pod service mode: before the pods that use the names
            await self._create_all(ref, job, SERVICES, p.create_pod_services, failures)
        if p.create_pod_group is not None and self.pod_group_ref is not None:
            await self._create(job, self.pod_group_ref, p.create_pod_group, failures)
        if p.update_pod_group is not None and self.pod_group_ref is not None:
            await self._replace(job, self.pod_group_ref, p.update_pod_group, failures)
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
            await self._create_child(
                job, EXTRA_CHILD_RESOURCES[child["kind"]], with_generated_keys(child), failures
            )
            if len(failures) > before:
                children_ok = False
                break
        before = len(failures)
        for child in p.update_children:
            await self._replace(job, EXTRA_CHILD_RESOURCES[child["kind"]], child, failures)
        # A restart the status does not record is recorded by these children (the snapshot).
        restarts_recorded = children_ok and len(failures) == before
        await self._tensorboard(job, p, failures)
        if p.delete_pods:
            self.expectations.expect_deletions(key, p.delete_pods)
            await asyncio.gather(
                *(self._delete_pod(key, job, pod_name, failures) for pod_name in p.delete_pods)
            )
        creating = None
        if p.create_pods and children_ok:
            creating = self._create_pods(key, ref, job, p.create_pods, failures, continues=p.creates_continue)
        if p.status is not None:
            # The status is the plan's whatever the creates answer (a refusal is the next plan's
            # to report): written while the pods are created, one round trip less.
            writing = self._write_status(key, ref, job, p)
            written = await writing if creating is None else await _together(writing, creating)
            if not written:
                return
        elif creating is not None:
            await creating
        if restarts_recorded:
            count_job(job, "restarted", p.restarts)
        if job["metadata"].get("namespace", "") not in self.closed_namespaces:
            for event in p.events:
                self.recorder.emit(job, event.type, event.reason, event.message)
        self._record_not_starting(job, p.not_starting)
        if p.requeue_at is not None:
            self.queue.add_at(key, p.requeue_at)
        if failures:
            raise failures[0]

    async def _write_status(self, key: str, ref: ResourceRef, job: Obj, p: Plan) -> bool:
        """PUT the plan's status with the job's resourceVersion and count what it records: the
        outcome it newly reaches and the restarts it adds, as the plan's status projection read
        them. False: the job is gone, or the write conflicted (the cache holds an older job than
        the server; its update event requeues the key, and so does the rate-limited requeue here)."""
        assert p.status is not None
        status = p.status
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
        if p.finishes:
            self.finished.add(meta.get("uid", ""))
        _count_transitions(job, p)
        return True

    async def _tensorboard(self, job: Obj, p: Plan, failures: list[ApiError]) -> None:
        """The job's TensorBoard Service and Ingress (its pod goes with the other pods)."""
        refs = {"Service": SERVICES, "Ingress": INGRESSES}
        for kind, name in p.tensorboard_deletes:
            await self._delete(job, refs[kind], name, failures)
        for body in p.tensorboard_replaces:
            await self._delete(job, refs[body["kind"]], body["metadata"]["name"], failures)
            await self._create(job, refs[body["kind"]], body, failures)
        for body in p.tensorboard_creates:
            await self._create(job, refs[body["kind"]], body, failures)


async def _together(first: Awaitable[T], second: Awaitable[object]) -> T:
    """`first`'s result, awaiting both concurrently; an exception (first's before second's) is
    raised only once both have finished."""
    results = await asyncio.gather(first, second, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return cast(T, results[0])


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


def _count_transitions(job: Obj, p: Plan) -> None:
    """Count the outcome the plan's status newly reaches and the restarts it adds."""
    if p.outcome == SUCCEEDED:
        count_job(job, "succeeded")
    elif p.outcome == FAILED:
        count_job(job, "failed")
    count_job(job, "restarted", p.recorded_restarts)
