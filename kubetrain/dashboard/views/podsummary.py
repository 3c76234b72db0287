"""A job's pods in one line — `1 CrashLoopBackOff · 8 Running` — for the job list and the job
page's count line: how many pods show each `kubectl get pods` STATUS word (`views/podstate.py`),
the pods not working first; and the job page's pod table. Pure.

The dashboard's pod informer keeps one `PodTally` per job (by the job's uid): each pod's word and
tone, updated per pod event — one pod's state read, never a pass over the job's pods — and the
job's `PodSummary` from its counts. So the list over hundreds of jobs and thousands of pods reads
one ready summary per row and no pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.dashboard.views.podstate import PodState, pod_state

# Failing pods first, then those on their way (Pending, ContainerCreating…), then working ones.
TONE_ORDER = {"bad": 0, "waiting": 1, "ok": 2, "done": 3}
WORKING = ("ok", "done")
NOT_READY = "Running (not ready)"


@dataclass(frozen=True)
class PodCount:
    word: str  # kubectl's STATUS word; a Running pod not ready reads "Running (not ready)"
    n: int
    tone: str  # the `PodState.tone` of these pods: bad, waiting, ok, done

    @property
    def working(self) -> bool:
        return self.tone in WORKING

    @property
    def text(self) -> str:
        return f"{self.n} {self.word}"


@dataclass(frozen=True, slots=True)
class PodSummary:
    parts: tuple[PodCount, ...]  # not working first (failing, then waiting), each most first
    not_working: int  # pods not Running-and-ready nor Succeeded
    failing: int  # of those, the ones failing (tone bad: CrashLoopBackOff, Error, Evicted…)
    total: int

    @property
    def text(self) -> str:
        return " · ".join(part.text for part in self.parts)


NO_PODS = PodSummary((), 0, 0, 0)


def _label(state: PodState) -> tuple[str, str]:
    tone = state.tone
    # kubectl prints a started pod whose containers are not all ready as Running (its READY
    # column says 0/1); here it is counted apart from the working Running pods
    return (NOT_READY if state.word == "Running" and tone == "waiting" else state.word), tone


def summarize(counts: Mapping[tuple[str, str], int]) -> PodSummary:
    """The summary of pod counts per (word, tone)."""
    parts = tuple(
        PodCount(word, n, tone)
        for (word, tone), n in sorted(
            ((key, n) for key, n in counts.items() if n > 0),
            key=lambda item: (TONE_ORDER.get(item[0][1], len(TONE_ORDER)), -item[1], item[0][0]),
        )
    )
    if not parts:
        return NO_PODS
    not_working = sum(p.n for p in parts if not p.working)
    failing = sum(p.n for p in parts if p.tone == "bad")
    return PodSummary(parts, not_working, failing, sum(p.n for p in parts))


def summary_of(states: Iterable[PodState]) -> PodSummary:
    """The summary of these pods' states (the job page: its pods read once for its table)."""
    return summarize(Counter(_label(state) for state in states))


class PodTally:
    """One job's pods by (word, tone), kept up to date pod event by pod event."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, str]] = {}  # pod uid -> (word, tone)
        self._counts: Counter[tuple[str, str]] = Counter()
        self._summary: PodSummary | None = NO_PODS

    def __len__(self) -> int:
        return len(self._pods)

    def observe(self, pod: Mapping[str, Any]) -> None:
        """The pod was added or changed."""
        uid = _uid(pod)
        label = _label(pod_state(pod))
        old = self._pods.get(uid)
        if old == label:
            return
        if old is not None:
            self._drop(old)
        self._pods[uid] = label
        self._counts[label] += 1
        self._summary = None

    def forget(self, pod: Mapping[str, Any]) -> None:
        """The pod was deleted."""
        old = self._pods.pop(_uid(pod), None)
        if old is not None:
            self._drop(old)
            self._summary = None

    def _drop(self, label: tuple[str, str]) -> None:
        self._counts[label] -= 1
        if self._counts[label] <= 0:
            del self._counts[label]

    def summary(self) -> PodSummary:
        if self._summary is None:
            self._summary = summarize(self._counts)
        return self._summary


@dataclass(frozen=True)
class PodRow:
    name: str
    node: str
    state: PodState


@dataclass(frozen=True)
class PodTable:
    rows: tuple[PodRow, ...]  # the pods not working as asked first (then by name), at most `limit`
    more: int  # pods left out
    summary: PodSummary  # of every pod: its count line


def pod_table(pods: Iterable[Mapping[str, Any]], limit: int) -> PodTable:
    """The job page's pod table and its count line (every pod's state read once)."""
    rows = [
        PodRow(
            str((p.get("metadata") or {}).get("name") or ""),
            str((p.get("spec") or {}).get("nodeName") or ""),
            pod_state(p),
        )
        for p in pods
    ]
    rows.sort(key=lambda r: (r.state.ok, r.name))
    return PodTable(tuple(rows[:limit]), max(0, len(rows) - limit), summary_of(r.state for r in rows))


def _uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
