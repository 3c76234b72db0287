"""The job page's pictures: the conditions as a timeline and every pod over time as a Gantt chart.

Pure: pod lives (`podhistory.PodLife`), the job's events and `now` in, positioned bars out — the
template only draws them. One row per replica slot (`worker-0`); in a row, each pod that filled
the slot (a recreated pod, a gang restart's new attempt) and each in-place container restart is
its own bar, coloured by what it was (pending, running, succeeded, failed) and titled with the
exit code and the reason the operator gave for the restart (its Warning event naming the pod).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.dashboard.views.podhistory import PodLife
from kubetrain.dashboard.views.timeutil import format_time, parse_time, short_duration

CHART_WIDTH = 960  # px of the time axis
LABEL_WIDTH = 170  # px of the row labels
ROW_HEIGHT = 20
BAR_HEIGHT = 14
AXIS_HEIGHT = 24
MIN_BAR_WIDTH = 2.0
# Replica types drawn first (the pod that leads the job), the rest alphabetically.
LEADING_TYPES = ("launcher", "master", "chief", "scheduler", "server", "ps", "evaluator")


@dataclass(frozen=True)
class Cause:
    time: float
    reason: str
    message: str


@dataclass(frozen=True)
class Bar:
    state: str  # pending | running | succeeded | failed
    start: float
    end: float
    open: bool  # still going (ends at now)
    pod: str
    label: str  # short text drawn on the bar when it fits (an exit code)
    title: str  # the tooltip: what, when, why
    x: float = 0.0
    width: float = 0.0
    y: float = 0.0


@dataclass(frozen=True)
class Row:
    label: str
    bars: tuple[Bar, ...]
    y: float


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Gantt:
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]
    start: float
    end: float
    width: int
    height: int
    label_width: int

    @property
    def bar_count(self) -> int:
        return sum(len(r.bars) for r in self.rows)


def causes_from_events(events: Iterable[Mapping[str, Any]]) -> list[Cause]:
    """The operator's restart and failure Warning events, oldest first."""
    out = []
    for ev in events:
        if ev.get("type") != "Warning":
            continue
        when = parse_time(ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp"))
        if when is None:
            when = parse_time((ev.get("metadata") or {}).get("creationTimestamp"))
        out.append(Cause(when or 0.0, str(ev.get("reason") or ""), str(ev.get("message") or "")))
    return sorted(out, key=lambda c: c.time)


def _names(cause: Cause, pod: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(pod)}(?![\w.-])", cause.message) is not None


def _cause_for(life: PodLife, causes: Sequence[Cause], after: float) -> Cause | None:
    """The first Warning naming the pod at or after its failure; for a pod deleted while it ran,
    the gang restart (RestartJob) that deleted it."""
    for cause in causes:
        if cause.time >= after - 1 and _names(cause, life.name):
            return cause
    if life.deleted is not None and life.finished is None:
        for cause in causes:
            if cause.reason == "RestartJob" and life.deleted - 5 <= cause.time <= life.deleted + 1:
                return cause
    return None


def _exit_text(code: int | None, reason: str) -> str:
    if code is None:
        return reason
    return f"exit code {code}" + (f" ({reason})" if reason else "")


def pod_bars(life: PodLife, causes: Sequence[Cause], now: float) -> list[Bar]:
    """The bars of one pod: pending, each earlier run ended by an in-place restart, the latest run."""
    bars: list[Bar] = []
    head = f"{life.name}" + (f" (attempt {life.attempt})" if life.attempt else "")
    if life.estimated:
        head += " (before the dashboard started: from the job's events, start estimated)"
    end = life.end
    first_run = min(
        [r.start for r in life.runs if r.start is not None] + ([life.started] if life.started else []),
        default=None,
    )
    pending_end = first_run if first_run is not None else (end if end is not None else now)
    if pending_end > life.created or first_run is None:
        detail = f"scheduled {format_time(life.scheduled)}" if life.scheduled else "not scheduled"
        if life.phase == "Failed" and first_run is None:
            bars.append(
                _bar(
                    "failed",
                    life.created,
                    pending_end,
                    end is None,
                    life,
                    life.reason or "failed",
                    f"{head}: failed before running: {life.reason} {life.message}".strip()
                    + (f" — {life.disrupted}" if life.disrupted else ""),
                    causes,
                )
            )
            return bars
        bars.append(
            _bar(
                "pending",
                life.created,
                pending_end,
                end is None and first_run is None,
                life,
                "",
                f"{head}: pending {short_duration(pending_end - life.created)}, {detail}"
                + (f" — {life.waiting}" if life.waiting and first_run is None else ""),
                causes,
            )
        )
    for run in life.runs:
        start = run.start if run.start is not None else pending_end
        state = "succeeded" if run.exit_code == 0 else "failed"
        text = _exit_text(run.exit_code, run.reason)
        cause = _cause_for(life, causes, run.end)
        why = f" — {cause.message}" if cause else ""
        bars.append(
            Bar(
                state,
                start,
                run.end,
                False,
                life.name,
                f"exit {run.exit_code}" if run.exit_code is not None else "",
                f"{head}: container {run.container} restarted in place after {text}{why}",
            )
        )
    last_exit = max((r.end for r in life.runs), default=None)
    current = life.started
    if current is None and life.waiting and life.phase == "Running":
        current = last_exit  # seen only once its container waited: the wait is from its last exit
    if current is not None:
        start = current
        if life.phase == "Succeeded":
            bars.append(
                _bar(
                    "succeeded",
                    start,
                    end or now,
                    False,
                    life,
                    "",
                    f"{head}: succeeded after {short_duration((end or now) - start)}",
                    causes,
                )
            )
        elif life.phase == "Failed":
            text = _exit_text(life.exit_code, life.reason)
            bars.append(
                _bar(
                    "failed",
                    start,
                    end or now,
                    False,
                    life,
                    f"exit {life.exit_code}" if life.exit_code is not None else life.reason,
                    f"{head}: failed with {text} {life.message}".rstrip()
                    + (f" — {life.disrupted}" if life.disrupted else ""),
                    causes,
                )
            )
        elif life.waiting and end is None and last_exit is not None and last_exit >= start:
            # its container exited and waits to run again (a crash-loop back-off): the open bar
            # is that wait, from the exit, not a run
            bars.append(
                _bar(
                    "pending",
                    last_exit,
                    now,
                    True,
                    life,
                    "",
                    f"{head}: waiting since {format_time(last_exit)} on {life.node or 'a node'}"
                    f" — {life.waiting}",
                    causes,
                )
            )
        else:
            stop = end if end is not None else now
            what = "deleted while running" if end is not None else "running"
            bars.append(
                _bar(
                    "running",
                    start,
                    stop,
                    end is None,
                    life,
                    "",
                    f"{head}: {what} since {format_time(start)} on {life.node or 'a node'}"
                    + (f" — now {life.waiting}" if life.waiting and end is None else "")
                    + (f" — {life.disrupted}" if life.disrupted else ""),
                    causes,
                )
            )
    return bars


def _bar(
    state: str,
    start: float,
    end: float,
    is_open: bool,
    life: PodLife,
    label: str,
    title: str,
    causes: Sequence[Cause],
) -> Bar:
    cause = (
        _cause_for(life, causes, end)
        if (state == "failed" or life.deleted is not None) and not is_open
        else None
    )
    if cause is not None:
        title = f"{title} — {cause.reason}: {cause.message}"
    return Bar(state, start, max(end, start), is_open, life.name, label, title)


def _row_order(slot: str, life: PodLife) -> tuple[int, str, int, str]:
    rtype = life.replica_type
    lead = LEADING_TYPES.index(rtype) if rtype in LEADING_TYPES else len(LEADING_TYPES)
    return (lead, rtype, life.index if life.index is not None else 0, slot)


def _ticks(start: float, end: float) -> list[Tick]:
    span = end - start
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400)
    step = next((s for s in steps if span / s <= 8), 86400 * max(1, int(span // (86400 * 8)) + 1))
    ticks = []
    t = 0.0
    while t <= span + 1e-9:
        ticks.append(
            Tick(LABEL_WIDTH + t / span * CHART_WIDTH if span else LABEL_WIDTH, f"+{short_duration(t)}")
        )
        t += step
    return ticks


def gantt(lives: Sequence[PodLife], causes: Sequence[Cause], now: float) -> Gantt:
    """The chart of every pod: rows by replica slot, bars placed on one shared time axis."""
    rows: dict[str, list[Bar]] = {}
    order: dict[str, tuple[int, str, int, str]] = {}
    for life in lives:
        bars = pod_bars(life, causes, now)
        rows.setdefault(life.slot, []).extend(bars)
        order.setdefault(life.slot, _row_order(life.slot, life))
    all_bars = [b for bars in rows.values() for b in bars]
    start = min((b.start for b in all_bars), default=now)
    end = max((b.end for b in all_bars), default=now)
    span = max(end - start, 1.0)
    end = start + span
    placed: list[Row] = []
    for i, slot in enumerate(sorted(rows, key=lambda s: order[s])):
        y = AXIS_HEIGHT + i * ROW_HEIGHT
        row_bars = tuple(
            Bar(
                b.state,
                b.start,
                b.end,
                b.open,
                b.pod,
                b.label,
                b.title,
                x=round(LABEL_WIDTH + (b.start - start) / span * CHART_WIDTH, 1),
                width=round(max(MIN_BAR_WIDTH, (b.end - b.start) / span * CHART_WIDTH), 1),
                y=y + (ROW_HEIGHT - BAR_HEIGHT) / 2,
            )
            for b in sorted(rows[slot], key=lambda b: b.start)
        )
        placed.append(Row(slot, row_bars, y))
    return Gantt(
        tuple(placed),
        tuple(_ticks(start, end)),
        start,
        end,
        LABEL_WIDTH + CHART_WIDTH + 40,
        AXIS_HEIGHT + len(placed) * ROW_HEIGHT + 4,
        LABEL_WIDTH,
    )


@dataclass(frozen=True)
class ConditionEntry:
    time: float | None
    type: str
    status: str
    reason: str
    message: str

    @property
    def when(self) -> str:
        return format_time(self.time)


def condition_timeline(job: Mapping[str, Any]) -> list[ConditionEntry]:
    """The job's conditions in the order they last changed (oldest first)."""
    entries = []
    for c in (job.get("status") or {}).get("conditions") or ():
        if not isinstance(c, dict):
            continue
        when = parse_time(c.get("lastTransitionTime")) or parse_time(c.get("lastUpdateTime"))
        entries.append(
            ConditionEntry(
                when,
                str(c.get("type") or ""),
                str(c.get("status") or ""),
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
            )
        )
    return sorted(entries, key=lambda e: (e.time is None, e.time or 0.0))
