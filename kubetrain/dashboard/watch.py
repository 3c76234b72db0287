"""The dashboard's shared informers: one watch per job resource and one for the jobs' pods, for
every browser at once — never a poll of the API server per browser.

They run with the dashboard's own (read-only) credentials and feed:
- `rows`: one `JobRow` per job, recomputed only when the job changes (the list page filters,
  sorts and slices them; each user sees only the rows their RBAC allows, `access.py`) — a
  TrainJob's restarts also when one of its pods or its run's record does (they come from its
  pods' labels and, while TrainJobs are served, an informer of their runtime snapshot
  ConfigMaps: `views/runrecord.py`) — and its pod summary (`views/podsummary.py`) when one of
  its pods comes, changes or goes, from a tally of its pods' states kept per pod event;
- `history`: every pod's life (`PodHistory`) for the Gantt chart;
- `progress`: the trainer's reports (`ProgressHistory`) for the plots;
- `hub`: one `Change` per job change for the live-update streams (SSE), each subscriber a bounded
  queue (a slow browser misses changes and is told to reload, it never holds memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.dashboard.views import runrecord, trainjob
from kubetrain.dashboard.views.joblist import JobRow, job_row
from kubetrain.dashboard.views.kinds import JobKind
from kubetrain.dashboard.views.podhistory import PodHistory, owner_uid
from kubetrain.dashboard.views.podsummary import NO_PODS, PodTally
from kubetrain.dashboard.views.progress import ProgressHistory
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import CONFIG_MAPS, PODS, ResourceRef

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RowKey = tuple[str, str, str, str]  # group, plural, namespace, name
POD_SPEC_KEPT = ("nodeName",)


def history_pod(pod: Obj) -> Obj:
    """What the dashboard keeps of a pod (an informer transform): metadata without managedFields
    and annotations, the status, the node name and the containers' names (the logs view's
    Container choice, before a pending pod has any container status)."""
    meta = pod.get("metadata") or {}
    pod["metadata"] = {k: v for k, v in meta.items() if k not in ("managedFields", "annotations")}
    spec = pod.get("spec")
    if isinstance(spec, dict):
        kept = {k: spec[k] for k in POD_SPEC_KEPT if k in spec}
        names = [
            {"name": c["name"]} for c in spec.get("containers") or () if isinstance(c, dict) and "name" in c
        ]
        pod["spec"] = {**kept, "containers": names} if names else kept
    return pod


def slim_job(job: Obj) -> Obj:
    """What the dashboard keeps of a job (an informer transform): metadata without
    managedFields and annotations, the status, and of the spec only each replica type's count —
    what the list rows and plots read. The job page reads the whole job as the user."""
    meta = job.get("metadata") or {}
    job["metadata"] = {k: v for k, v in meta.items() if k not in ("managedFields", "annotations")}
    spec = job.get("spec")
    if isinstance(spec, dict):
        slim: Obj = {}
        for key, value in spec.items():
            if key.endswith("ReplicaSpecs") and isinstance(value, dict):
                slim[key] = {
                    rtype: {"replicas": r.get("replicas", 1)}
                    for rtype, r in value.items()
                    if isinstance(r, dict)
                }
        job["spec"] = slim
    return job


@dataclass(frozen=True)
class Change:
    """A job changed (or one of its pods did): who should look again."""

    group: str
    plural: str
    namespace: str
    name: str
    state: str
    resync: bool = False  # the subscriber missed changes: reload everything


RESYNC = Change("", "", "", "", "", resync=True)


class Hub:
    """Every change numbered (`seq`, the number of the last one), the last `queue_size` kept, so a
    stream can start where its page was rendered: `subscribe(since=page's seq)` first replays what
    the page missed — as a watch resumes from a resourceVersion — or, when that is no longer
    kept, starts with a resync."""

    def __init__(self, queue_size: int = 256) -> None:
        self.queue_size = queue_size
        self._subscribers: set[asyncio.Queue[tuple[int, Change]]] = set()
        self.seq = 0
        self._recent: deque[tuple[int, Change]] = deque(maxlen=queue_size)
        # Positions are "<epoch>.<seq>": one of an earlier dashboard process is never taken for ours.
        self.epoch = secrets.token_hex(4)

    def position(self, seq: int | None = None) -> str:
        """Where a page rendered now (or change `seq`) stands, for `parse_position`."""
        return f"{self.epoch}.{self.seq if seq is None else seq}"

    def parse_position(self, text: str | None) -> int | None:
        """The seq of a position this hub gave; None for none; -1 (a resync) for another's."""
        if not text:
            return None
        epoch, _, seq = text.partition(".")
        return int(seq) if epoch == self.epoch and seq.isdigit() else -1

    def publish(self, change: Change) -> None:
        self.seq += 1
        self._recent.append((self.seq, change))
        for queue in list(self._subscribers):
            self._put(queue, (self.seq, change))

    @staticmethod
    def _put(queue: asyncio.Queue[tuple[int, Change]], item: tuple[int, Change]) -> None:
        if queue.full():
            return  # the resync marker below is already waiting in it
        if queue.qsize() == queue.maxsize - 1:
            queue.put_nowait((item[0], RESYNC))
        else:
            queue.put_nowait(item)

    @contextlib.contextmanager
    def subscribe(self, since: int | None = None) -> Iterator[asyncio.Queue[tuple[int, Change]]]:
        """A queue of (seq, change); with `since`, first the kept changes after it (a resync if
        some of them are no longer kept, or `since` is not one this hub gave)."""
        queue: asyncio.Queue[tuple[int, Change]] = asyncio.Queue(self.queue_size)
        if since is not None and since != self.seq:
            oldest = self._recent[0][0] if self._recent else self.seq + 1
            if since > self.seq or since < oldest - 1:
                self._put(queue, (self.seq, RESYNC))
            else:
                for item in self._recent:
                    if item[0] > since:
                        self._put(queue, item)
        self._subscribers.add(queue)
        try:
            yield queue
        finally:
            self._subscribers.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


class JobWatch:
    def __init__(
        self,
        client: KubeClient,
        kinds: list[JobKind],
        *,
        clock: Clock | None = None,
        history: PodHistory | None = None,
        progress: ProgressHistory | None = None,
    ) -> None:
        self.client = client
        self.kinds = kinds
        self.clock = clock or SYSTEM_CLOCK
        self.rows: dict[RowKey, JobRow] = {}
        self.uids: dict[str, JobKind] = {}  # job uid -> its kind (a pod's owner)
        self.names: dict[str, RowKey] = {}  # job uid -> its row
        # TrainJob uid -> the restarts its pods tell (a TrainJob's status has no count)
        self.restart_tallies: dict[str, trainjob.RestartTally] = {}
        # TrainJob uid -> the restarts its run's record (the snapshot ConfigMap) counts
        self.recorded_tallies: dict[str, trainjob.RestartTally] = {}
        # job uid -> its pods' states (also before the job is seen; dropped with its last pod)
        self.pod_tallies: dict[str, PodTally] = {}
        self.history = history or PodHistory()
        self.progress = progress or ProgressHistory()
        self.hub = Hub()
        self.served: list[JobKind] = []  # the kinds whose API is installed
        self.informers: list[Informer] = []
        self.pods: Informer | None = None
        self.refused: set[str] = set()  # resources (`tfjobs.kubetrain.io/v1`) it may not list/watch
        self._refusals: dict[str, asyncio.Event] = {}
        self._namespaces: tuple[int, dict[JobKind, set[str]]] | None = None
        self.generation = 0  # bumped on every job added or deleted

    def _now(self) -> float:
        return self.clock.now().timestamp()

    async def start(self, sync_timeout: float = 30.0) -> None:
        for kind in self.kinds:
            try:
                installed = await self.client.has_api(kind.group, kind.version, kind.plural)
            except ApiError as err:
                log.warning("dashboard: cannot discover %s: %s", kind.resource, err)
                installed = False
            if not installed:
                log.info("dashboard: %s is not served by this API server; not listed", kind.resource)
                continue
            self.served.append(kind)
            informer = Informer(
                self.client,
                ResourceRef(kind.group, kind.version, kind.plural, kind.kind, True),
                on_forbidden=self._forbidden(kind.resource, kind),
                transform=slim_job,
            )
            on_job = self._on_job(kind)
            informer.add_handler(on_job, self._updated(on_job), self._on_job_delete(kind))
            self.informers.append(informer)
        pods = Informer(
            self.client,
            PODS,
            label_selector=LABEL_JOB_NAME,
            transform=history_pod,
            on_forbidden=self._forbidden("pods"),
        )
        pods.add_handler(self._on_pod, lambda old, new: self._on_pod(new), self._on_pod_delete)
        self.informers.append(pods)
        self.pods = pods
        if any(trainjob.is_trainjob_kind(k.group, k.kind) for k in self.served):
            records = Informer(
                self.client,
                CONFIG_MAPS,
                label_selector=runrecord.SELECTOR,
                transform=runrecord.slim_snapshot,
                on_forbidden=self._forbidden(
                    "configmaps (a TrainJob's restarts then come from its pods alone)", resource=CONFIG_MAPS
                ),
            )
            records.add_handler(
                self._on_record, lambda old, new: self._on_record(new), self._on_record_delete
            )
            self.informers.append(records)
        for informer in self.informers:
            informer.start()
        try:
            async with asyncio.timeout(sync_timeout):
                for informer in self.informers:
                    # synced, or refused (a 403 never syncs: reported and left out)
                    refused = self._refusals.setdefault(str(informer.ref), asyncio.Event())
                    waits = [
                        asyncio.ensure_future(informer.wait_synced()),
                        asyncio.ensure_future(refused.wait()),
                    ]
                    try:
                        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        for waiter in waits:
                            waiter.cancel()
        except TimeoutError:
            log.warning("dashboard: informers not synced after %.0f s; serving what is cached", sync_timeout)

    def namespaces_by_kind(self) -> dict[JobKind, set[str]]:
        """The namespaces that have jobs, per kind (recomputed only after jobs come or go)."""
        if self._namespaces is None or self._namespaces[0] != self.generation:
            by_key = {(k.group, k.plural): k for k in self.served}
            out: dict[JobKind, set[str]] = {k: set() for k in self.served}
            for group, plural, namespace, _ in self.rows:
                kind = by_key.get((group, plural))
                if kind is not None:
                    out[kind].add(namespace)
            self._namespaces = (self.generation, out)
        return self._namespaces[1]

    def pods_of(self, namespace: str, job_name: str, job_uid: str) -> list[Obj]:
        """The job's pods now (from the pod informer; its controller uid must be the job's)."""
        if self.pods is None:
            return []
        return [p for p in self.pods.store.by_label(namespace, job_name) if owner_uid(p) == job_uid]

    async def stop(self) -> None:
        for informer in self.informers:
            await informer.stop()
        self.informers = []

    def _forbidden(
        self, what: str, kind: JobKind | None = None, resource: ResourceRef = PODS
    ) -> Callable[[ApiError], None]:
        def report(err: ApiError) -> None:
            log.error(
                "dashboard: may not list/watch %s (%s); grant the dashboard's ServiceAccount read access",
                what,
                err,
            )
            ref = f"{kind.resource}/{kind.version}" if kind is not None else str(resource)
            self.refused.add(ref)
            self._refusals.setdefault(ref, asyncio.Event()).set()
            if kind is not None and kind in self.served:
                self.served.remove(kind)  # not offered in the filters: nobody would see its jobs

        return report

    def _on_job(self, kind: JobKind) -> Callable[[Obj], None]:
        def handle(job: Obj) -> None:
            row = self._with_pods(job_row(kind, job))
            key = row.key
            if key not in self.rows:
                self.generation += 1
            self.rows[key] = row
            if row.uid:
                self.uids[row.uid] = kind
                self.names[row.uid] = key
            self.progress.observe(job, self._now())
            self.hub.publish(Change(kind.group, kind.plural, row.namespace, row.name, row.state))

        return handle

    @staticmethod
    def _updated(handle: Callable[[Obj], None]) -> Callable[[Obj, Obj], None]:
        return lambda old, new: handle(new)

    def _on_job_delete(self, kind: JobKind) -> Callable[[Obj], None]:
        def handle(job: Obj) -> None:
            meta = job.get("metadata") or {}
            key = (kind.group, kind.plural, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if self.rows.pop(key, None) is not None:
                self.generation += 1
            uid = str(meta.get("uid") or "")
            self.uids.pop(uid, None)
            self.names.pop(uid, None)
            self.history.forget_job(uid)
            self.restart_tallies.pop(uid, None)
            self.recorded_tallies.pop(uid, None)
            self.progress.forget_job(uid)
            self.hub.publish(Change(kind.group, kind.plural, key[2], key[3], "Deleted"))

        return handle

    def _with_pods(self, row: JobRow) -> JobRow:
        """The row with its pods' summary and (a TrainJob's) the restarts they tell."""
        tally = self.pod_tallies.get(row.uid)
        summary = tally.summary() if tally is not None else NO_PODS
        if summary != row.pods:
            row = replace(row, pods=summary)
        return self._with_pod_restarts(row)

    def _with_pod_restarts(self, row: JobRow) -> JobRow:
        """A TrainJob's row with the restarts its pods and its run's record tell
        (`views/trainjob.RestartTally`: its status has no count); another kind's row as it is."""
        pods, record = self.restart_tallies.get(row.uid), self.recorded_tallies.get(row.uid)
        if (pods is None and record is None) or not trainjob.is_trainjob_kind(row.kind.group, row.kind.kind):
            return row
        tally = (pods or trainjob.RestartTally()).merged(record)
        return replace(row, restarts=tally.total) if tally.total != row.restarts else row

    def _owner_change(self, child: Obj) -> None:
        key = self.names.get(owner_uid(child))
        if key is not None:
            row = self.rows.get(key)
            if row is not None:
                row = self.rows[key] = self._with_pods(row)
            self.hub.publish(Change(key[0], key[1], key[2], key[3], row.state if row else ""))

    def _on_pod(self, pod: Obj) -> None:
        self.history.observe(pod, self._now())
        owner = owner_uid(pod)
        if owner:
            self.pod_tallies.setdefault(owner, PodTally()).observe(pod)
        if owner and trainjob.is_trainjob_pod(pod):  # also before its TrainJob is seen
            self.restart_tallies.setdefault(owner, trainjob.RestartTally()).observe(pod)
        self._owner_change(pod)

    def _on_pod_delete(self, pod: Obj) -> None:
        self.history.deleted(pod, self._now())
        owner = owner_uid(pod)
        tally = self.pod_tallies.get(owner)
        if tally is not None:
            tally.forget(pod)
            if not len(tally):
                # its last pod: a new tally (with its summary) comes with the job's next pod
                self.pod_tallies.pop(owner)
        if owner not in self.uids:  # the pods of a deleted TrainJob: their last event drops its tally
            self.restart_tallies.pop(owner, None)
        self._owner_change(pod)

    def _on_record(self, config_map: Obj) -> None:
        """A TrainJob's snapshot ConfigMap came or changed: its recorded restarts."""
        recorded = runrecord.recorded(config_map)
        if recorded is None:
            return
        uid, tally = recorded
        if self.recorded_tallies.get(uid) != tally:
            self.recorded_tallies[uid] = tally
            self._owner_change(config_map)

    def _on_record_delete(self, config_map: Obj) -> None:
        recorded = runrecord.recorded(config_map)
        if recorded is not None and self.recorded_tallies.pop(recorded[0], None) is not None:
            self._owner_change(config_map)
