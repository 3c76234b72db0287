"""Pod lives from before the dashboard started watching, rebuilt from what Kubernetes still holds.
Pure.

The dashboard records each pod's life as its informer sees it (`podhistory.py`); a pod the operator
deleted before then is gone from the API. What remains:

- the current pods' status: creation, start and finish times, and of each container its
  `restartCount` and last exit (`lastState.terminated`, startedAt/finishedAt/exitCode) — read by
  `podhistory.life_from_pod`; Kubernetes keeps only the LAST exit, so a pod restarted in place
  more often than that gets one bar for the earlier restarts, from the pod's start to the first
  kept run (`in_place_gaps`);
- the operator's Warning events on the job (docs/behaviour.md, "Restarts"), each naming the pod
  and the exit that caused it: `JobRestarting` — in kubeflow.org `<Kind>Restarting`, and either
  naming is read (frameworks/jobreasons.py) — ("pod P: container C exited with code N;
  recreating it"), one per recreated pod; `RestartJob` ("… restarting all its pods as attempt N:
  pod P: …") and `ProgressDeadlineExceeded` (a stalled job restarted as a new attempt), each
  ending every pod of the job at once;
- the job's `status.jobRestarts` (whole-job restarts so far) and `status.startTime`.

`earlier_lives` turns each such event older than a slot's earliest known pod into an earlier life of
that slot: it ends at the event's time (failed with the event's exit code for the pod it names;
deleted while running for the others of a whole-job restart) and starts when the one before it
ended (the first at the job's start) — an estimate, and the bar says so. Events expire (kube-apiserver
keeps them one hour by default): `notes` says how many whole-job restarts have no event left.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubetrain.dashboard.views.podhistory import ContainerRun, PodLife
from kubetrain.dashboard.views.timeutil import parse_time
from kubetrain.frameworks.jobreasons import canonical

POD_RESTART = "JobRestarting"  # as kubetrain's reasons say it (`canonical`)
WHOLE_JOB = ("RestartJob", "ProgressDeadlineExceeded")
SAME_END = 2.0  # s: an event this close to a recorded life's end is that life's
_POD = re.compile(r"\bpod ([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)")
_EXIT = re.compile(r"exited with code (-?\d+)")


@dataclass(frozen=True)
class Ending:
    """An operator event that ended a pod's life (or every pod's, `whole_job`)."""

    time: float
    whole_job: bool
    pod: str  # the pod the event names as the cause, "" when none
    exit_code: int | None
    reason: str
    message: str


def endings(events: Iterable[Mapping[str, Any]]) -> list[Ending]:
    """The operator's restart events, oldest first."""
    out = []
    for ev in events:
        reason = str(ev.get("reason") or "")
        if ev.get("type") != "Warning" or (canonical(reason) != POD_RESTART and reason not in WHOLE_JOB):
            continue
        when = parse_time(ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp"))
        if when is None:
            continue
        message = str(ev.get("message") or "")
        pod = _POD.search(message)
        code = _EXIT.search(message)
        out.append(
            Ending(
                when,
                reason in WHOLE_JOB,
                pod.group(1) if pod else "",
                int(code.group(1)) if code else None,
                reason,
                message,
            )
        )
    return sorted(out, key=lambda e: e.time)


def job_start(job: Mapping[str, Any]) -> float | None:
    status = job.get("status") or {}
    meta = job.get("metadata") or {}
    return parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))


def _known(lives: Sequence[PodLife], ending: Ending) -> bool:
    """Whether a recorded life already ends at this event (the dashboard saw that pod go)."""
    return any(
        life.end is not None
        and abs(life.end - ending.time) <= SAME_END
        and (ending.whole_job or life.name == ending.pod)
        for life in lives
    )


def earlier_lives(
    lives: Sequence[PodLife], events: Iterable[Mapping[str, Any]], job: Mapping[str, Any]
) -> tuple[list[PodLife], list[str]]:
    """`lives` with the lives rebuilt from the job's events before each slot's earliest known pod,
    and notes on what could not be rebuilt."""
    ends = endings(events)
    start = job_start(job)
    by_slot: dict[str, list[PodLife]] = {}
    for life in lives:
        by_slot.setdefault(life.slot, []).append(life)
    whole = [e for e in ends if e.whole_job]
    by_pod: dict[str, list[Ending]] = {}
    for e in ends:
        if not e.whole_job:
            by_pod.setdefault(e.pod, []).append(e)
    out = list(lives)
    for slot, known in by_slot.items():
        first = min(known, key=lambda life: life.created)
        names = {life.name for life in known}
        mine = sorted(
            (
                e
                for e in whole + [e for name in names for e in by_pod.get(name, ())]
                if e.time <= first.created and not _known(known, e)
            ),
            key=lambda e: e.time,
        )
        begin = start if start is not None and (not mine or start <= mine[0].time) else None
        attempt = max(0, first.attempt - sum(e.whole_job for e in mine))
        for i, e in enumerate(mine):
            was = begin if begin is not None else e.time
            failed = e.pod in names
            out.append(
                PodLife(
                    uid=f"earlier/{slot}/{i}",
                    name=e.pod if failed else first.name,
                    replica_type=first.replica_type,
                    index=first.index,
                    attempt=attempt,
                    created=was,
                    started=was,
                    finished=e.time if failed else None,
                    deleted=e.time,
                    phase="Failed" if failed else "Running",
                    exit_code=e.exit_code if failed else None,
                    containers=first.containers,
                    estimated=True,
                )
            )
            begin = e.time
            attempt += int(e.whole_job)
    notes = []
    restarts = (job.get("status") or {}).get("jobRestarts")
    seen = sum(e.whole_job for e in ends)
    if isinstance(restarts, int) and restarts > seen:
        missing = restarts - seen
        notes.append(
            f"{missing} earlier whole-job restart{'s' if missing > 1 else ''} (status.jobRestarts"
            f" {restarts}) not drawn: their events have expired"
        )
    return [in_place_gaps(life) for life in sorted(out, key=lambda life: (life.created, life.name))], notes


def in_place_gaps(life: PodLife) -> PodLife:
    """A pod restarted in place more often than its kept runs show: one bar for the restarts
    Kubernetes no longer describes, from the pod's start to its first kept run."""
    missing = life.restart_count - len(life.runs)
    if missing <= 0 or life.estimated:
        return life
    kept = [r.start for r in life.runs if r.start is not None]
    until = min(kept + ([life.started] if life.started is not None else []), default=None)
    since = life.scheduled or life.created
    if until is None or until <= since:
        return life
    gap = ContainerRun(
        life.containers[0] if life.containers else "",
        since,
        until,
        None,
        f"{missing} earlier restart{'s' if missing > 1 else ''} (Kubernetes keeps only the last exit)",
    )
    return replace(life, runs=(gap, *life.runs))
