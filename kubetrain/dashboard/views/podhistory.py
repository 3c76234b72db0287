"""Pod lives: what each pod of a job did over time, recorded from the pod versions seen. Pure.

A pod object says only where it is now (and the last exit of each container, `lastState`), and a
pod the operator deleted to restart it is gone from the API. `PodHistory` keeps, per job (by the
job's uid, from the pod's controller ownerReference), one `PodLife` per pod uid the dashboard's
informer saw — created, scheduled, running, finished or deleted, its exit code and every
in-place container restart — so the Gantt chart can draw each restart and each gang restart as its
own bar. Bounded: at most `max_pods_per_job` lives per job (finished ones are dropped first) and
`max_jobs` jobs (least recently changed dropped first); a deleted job's history goes with it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain.api.labels import LABEL_ATTEMPT, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from kubetrain.api.trainer.constants import RESTART_ATTEMPT
from kubetrain.dashboard.views.podstate import disruption
from kubetrain.dashboard.views.timeutil import parse_time

Obj = dict[str, Any]

DEFAULT_MAX_PODS_PER_JOB = 2000
DEFAULT_MAX_JOBS = 5000


@dataclass(frozen=True)
class ContainerRun:
    """One finished run of a container that the kubelet restarted in place."""

    container: str
    start: float | None
    end: float
    exit_code: int | None
    reason: str


@dataclass(frozen=True)
class PodLife:
    uid: str
    name: str
    replica_type: str
    index: int | None
    attempt: int
    created: float
    scheduled: float | None = None
    started: float | None = None  # the current (latest) run of its containers
    finished: float | None = None
    deleted: float | None = None
    phase: str = "Pending"
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    runs: tuple[ContainerRun, ...] = ()  # earlier runs, ended by in-place restarts, oldest first
    restart_count: int = 0
    node: str = ""
    containers: tuple[str, ...] = ()
    estimated: bool = False  # reconstructed from the job's events (views/earlier.py), start estimated
    waiting: str = ""  # a container waiting now: `CrashLoopBackOff: back-off 10s restarting…`
    disrupted: str = ""  # why a controller disrupted it (DisruptionTarget, podstate.disruption)

    @property
    def slot(self) -> str:
        """`worker-0`: the replica slot this pod fills (its name without labels)."""
        if self.replica_type and self.index is not None:
            return f"{self.replica_type}-{self.index}"
        return self.name

    @property
    def end(self) -> float | None:
        return self.finished if self.finished is not None else self.deleted


def owner_uid(pod: Mapping[str, Any]) -> str:
    """The uid of the pod's controller (its job), "" when it has none."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def as_int(value: object) -> int | None:
    """An integer written as one (a label's string, a status field), else None."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def life_from_pod(
    pod: Mapping[str, Any], previous: PodLife | None = None, now: float | None = None
) -> PodLife:
    """The life of `pod` as this version of it tells, merged with what was recorded before."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    created = parse_time(meta.get("creationTimestamp")) or (previous.created if previous else now or 0.0)
    scheduled = None
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            scheduled = parse_time(cond.get("lastTransitionTime"))
    phase = str(status.get("phase") or "Pending")
    started: float | None = None
    finished: float | None = None
    exit_code: int | None = None
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    runs: dict[tuple[str, float], ContainerRun] = (
        {(r.container, r.end): r for r in previous.runs} if previous else {}
    )
    restarts = 0
    names: list[str] = []
    waiting = ""
    for cs in status.get("containerStatuses") or ():
        if not isinstance(cs, dict):
            continue
        name = str(cs.get("name") or "")
        names.append(name)
        restarts += int(cs.get("restartCount") or 0)
        state = cs.get("state") or {}
        wait = state.get("waiting")
        if isinstance(wait, dict) and wait.get("reason") and not waiting:
            waiting = " ".join(f"{wait['reason']}: {wait.get('message') or ''}".split()).rstrip(":")
        if "running" in state:
            begin = parse_time((state.get("running") or {}).get("startedAt"))
            started = begin if started is None or (begin is not None and begin < started) else started
        if "terminated" in state:
            term = state.get("terminated") or {}
            begin = parse_time(term.get("startedAt"))
            end = parse_time(term.get("finishedAt"))
            started = begin if started is None or (begin is not None and begin < started) else started
            if end is not None and (finished is None or end > finished):
                finished = end
            code = as_int(term.get("exitCode"))
            if code is not None and (exit_code is None or code != 0):
                exit_code = code
                if code != 0 or not reason:
                    reason = str(term.get("reason") or reason)
                    message = str(term.get("message") or message)
        last = (cs.get("lastState") or {}).get("terminated")
        if isinstance(last, dict):
            end = parse_time(last.get("finishedAt"))
            if end is not None:
                runs[(name, end)] = ContainerRun(
                    name,
                    parse_time(last.get("startedAt")),
                    end,
                    as_int(last.get("exitCode")),
                    str(last.get("reason") or ""),
                )
    if previous is not None and previous.phase == phase:  # a later version may say less (a delete)
        exit_code = exit_code if exit_code is not None else previous.exit_code
        reason = reason or previous.reason
        message = message or previous.message
    if phase not in ("Succeeded", "Failed"):
        finished = None
    elif finished is None:
        finished = (previous.finished if previous else None) or now
    deletion = parse_time(meta.get("deletionTimestamp"))
    life = PodLife(
        uid=str(meta.get("uid") or meta.get("name") or ""),
        name=str(meta.get("name") or ""),
        replica_type=str(labels.get(LABEL_REPLICA_TYPE) or ""),
        index=as_int(labels.get(LABEL_REPLICA_INDEX)),
        # a TrainJob's pods carry JobSet's attempt label instead
        attempt=as_int(labels.get(LABEL_ATTEMPT)) or as_int(labels.get(RESTART_ATTEMPT)) or 0,
        created=created,
        scheduled=scheduled or (previous.scheduled if previous else None),
        started=started
        if started is not None
        else (previous.started if previous and phase != "Pending" else None),
        finished=finished,
        deleted=deletion if deletion is not None else (previous.deleted if previous else None),
        phase=phase,
        exit_code=exit_code,
        reason=reason,
        message=message,
        runs=tuple(sorted(runs.values(), key=lambda r: r.end)),
        restart_count=restarts,
        node=str((pod.get("spec") or {}).get("nodeName") or (previous.node if previous else "")),
        containers=tuple(names) or (previous.containers if previous else ()),
        waiting=waiting if phase in ("Pending", "Running") else "",
        disrupted=disruption(pod) or (previous.disrupted if previous else ""),
    )
    return life


@dataclass
class PodHistory:
    max_pods_per_job: int = DEFAULT_MAX_PODS_PER_JOB
    max_jobs: int = DEFAULT_MAX_JOBS
    _jobs: OrderedDict[str, dict[str, PodLife]] = field(default_factory=OrderedDict)

    def observe(self, pod: Mapping[str, Any], now: float) -> None:
        """Record a version of a pod (added or updated)."""
        job = owner_uid(pod)
        if not job:
            return
        lives = self._jobs.get(job)
        if lives is None:
            lives = self._jobs[job] = {}
            while len(self._jobs) > self.max_jobs:
                self._jobs.popitem(last=False)
        else:
            self._jobs.move_to_end(job)
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        lives[uid] = life_from_pod(pod, lives.get(uid), now)
        if len(lives) > self.max_pods_per_job:
            self._trim(lives)

    def deleted(self, pod: Mapping[str, Any], now: float) -> None:
        """Record that a pod is gone: its life ends now unless it had ended already."""
        lives = self._jobs.get(owner_uid(pod))
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if lives is None:
            return
        life = life_from_pod(pod, lives.get(uid), now)
        lives[uid] = replace(life, deleted=life.deleted if life.deleted is not None else now)

    def forget_job(self, job_uid: str) -> None:
        self._jobs.pop(job_uid, None)

    def lives(self, job_uid: str) -> list[PodLife]:
        return sorted((self._jobs.get(job_uid) or {}).values(), key=lambda life: (life.created, life.name))

    def pod_count(self) -> int:
        return sum(len(lives) for lives in self._jobs.values())

    def _trim(self, lives: dict[str, PodLife]) -> None:
        ended = sorted(
            (life for life in lives.values() if life.end is not None), key=lambda life: life.created
        )
        for life in ended[: len(lives) - self.max_pods_per_job]:
            del lives[life.uid]


def merge_current(recorded: list[PodLife], pods: list[Obj], now: float) -> list[PodLife]:
    """The recorded lives with the current pods (`pods` from the same informer as `recorded`:
    a pod already recorded is taken as recorded; one not yet recorded is read now)."""
    by_uid = {life.uid: life for life in recorded}
    for pod in pods:
        uid = str((pod.get("metadata") or {}).get("uid") or (pod.get("metadata") or {}).get("name") or "")
        if uid not in by_uid:
            by_uid[uid] = life_from_pod(pod, None, now)
    return sorted(by_uid.values(), key=lambda life: (life.created, life.name))
