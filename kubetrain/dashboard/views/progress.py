"""Progress and reported metrics as plots, from `status.trainerStatus`. Pure.

A training job that reports progress writes `status.trainerStatus`: `progressPercentage`,
`estimatedRemainingSeconds`, `metrics` ([{name, value}], values as strings or numbers) and
`lastUpdatedTime`. The status holds only the latest report, so `ProgressHistory` keeps the
reports the dashboard saw (per job uid, at most `max_samples`, oldest dropped) and `plots`
draws each series — progress and every metric — as a small SVG line chart.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.dashboard.views.timeutil import parse_time, short_duration

DEFAULT_MAX_SAMPLES = 500
DEFAULT_MAX_JOBS = 5000
PLOT_WIDTH = 320
PLOT_HEIGHT = 120
PAD = 6
LEFT = 40  # room for the axis labels


@dataclass(frozen=True)
class Sample:
    time: float
    progress: float | None
    remaining: float | None
    metrics: tuple[tuple[str, float], ...]


def _number(value: object) -> float | None:
    try:
        number = float(str(value))
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def sample_of(job: Mapping[str, Any], now: float) -> Sample | None:
    """The trainer's latest report in `job`, None when it reports nothing."""
    ts = (job.get("status") or {}).get("trainerStatus")
    if not isinstance(ts, dict) or not ts:
        return None
    metrics = []
    for m in ts.get("metrics") or ():
        if isinstance(m, dict) and m.get("name") and (value := _number(m.get("value"))) is not None:
            metrics.append((str(m["name"]), value))
    progress = _number(ts.get("progressPercentage"))
    return Sample(
        time=parse_time(ts.get("lastUpdatedTime")) or now,
        progress=None if progress is None else max(0.0, min(100.0, progress)),
        remaining=_number(ts.get("estimatedRemainingSeconds")),
        metrics=tuple(metrics),
    )


@dataclass
class ProgressHistory:
    max_samples: int = DEFAULT_MAX_SAMPLES
    max_jobs: int = DEFAULT_MAX_JOBS
    _jobs: OrderedDict[str, deque[Sample]] = field(default_factory=OrderedDict)

    def observe(self, job: Mapping[str, Any], now: float) -> None:
        sample = sample_of(job, now)
        uid = str((job.get("metadata") or {}).get("uid") or "")
        if sample is None or not uid:
            return
        samples = self._jobs.get(uid)
        if samples is None:
            samples = self._jobs[uid] = deque(maxlen=self.max_samples)
            while len(self._jobs) > self.max_jobs:
                self._jobs.popitem(last=False)
        else:
            self._jobs.move_to_end(uid)
        if samples and samples[-1].time >= sample.time:
            if samples[-1] != sample and samples[-1].time == sample.time:
                samples[-1] = sample
            return
        samples.append(sample)

    def samples(self, uid: str) -> list[Sample]:
        return list(self._jobs.get(uid) or ())

    def forget_job(self, uid: str) -> None:
        self._jobs.pop(uid, None)


@dataclass(frozen=True)
class Plot:
    title: str
    last: str
    path: str  # SVG path data; a single report is one point
    points: tuple[tuple[float, float], ...]
    y_min: str
    y_max: str
    span: str
    width: int = PLOT_WIDTH
    height: int = PLOT_HEIGHT


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _plot(
    title: str,
    series: Sequence[tuple[float, float]],
    lo: float | None = None,
    hi: float | None = None,
    unit: str = "",
) -> Plot:
    times = [t for t, _ in series]
    values = [v for _, v in series]
    y_lo = min(values) if lo is None else lo
    y_hi = max(values) if hi is None else hi
    if y_hi == y_lo:
        y_hi, y_lo = y_hi + 1, y_lo - (0 if lo is not None else 1)
    t0, t1 = times[0], times[-1]
    t_span = (t1 - t0) or 1.0
    points = tuple(
        (
            round(LEFT + (t - t0) / t_span * (PLOT_WIDTH - LEFT - PAD), 1),
            round(PLOT_HEIGHT - PAD - (v - y_lo) / (y_hi - y_lo) * (PLOT_HEIGHT - 2 * PAD), 1),
        )
        for t, v in series
    )
    path = "M" + " L".join(f"{x},{y}" for x, y in points)
    return Plot(
        title,
        _fmt(values[-1]) + unit,
        path,
        points,
        _fmt(y_lo) + unit,
        _fmt(y_hi) + unit,
        short_duration(t1 - t0),
    )


def plots(samples: Sequence[Sample]) -> list[Plot]:
    """Progress (0-100 %) first, then one plot per metric name in the order first reported."""
    out: list[Plot] = []
    progress = [(s.time, s.progress) for s in samples if s.progress is not None]
    if progress:
        out.append(_plot("progress", [(t, v) for t, v in progress if v is not None], 0.0, 100.0, "%"))
    names: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        for name, value in s.metrics:
            names.setdefault(name, []).append((s.time, value))
    out.extend(_plot(name, series) for name, series in names.items())
    return out


def remaining_text(samples: Sequence[Sample]) -> str:
    """`about 3m20s left` from the latest report, or an empty string."""
    if not samples or samples[-1].remaining is None:
        return ""
    return f"about {short_duration(samples[-1].remaining)} left"
