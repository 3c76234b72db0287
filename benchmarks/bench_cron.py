"""The cron decisions' cost: stepping a schedule, finding the most recent missed time, and one
`decide()` pass — steady (last run minutes ago), catching up (over 100 missed: the window
search), and pruning a long history.

    .venv/bin/python benchmarks/bench_cron.py [--repeat 200]

Prints microseconds per call. A steady pass is what every wake-up and job event costs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from crons import training_cron

from kubetrain.cron.decide import decide
from kubetrain.cron.schedule import parse_schedule, zone
from kubetrain.cron.shape import read_cron
from kubetrain.cron.times import most_recent

NOW = datetime(2024, 3, 1, tzinfo=UTC)


def per_call_us(fn: Callable[[], Any], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def finished_jobs(n: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": f"c-{i}",
                "namespace": "ns",
                "uid": f"u{i}",
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "status": {
                "conditions": [{"type": "Succeeded", "status": "True"}],
                "completionTime": "2024-01-01T01:00:00Z",
                "startTime": "2024-01-01T00:00:00Z",
            },
        }
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    repeat = parser.parse_args().repeat
    berlin = zone("Europe/Berlin")
    for spec in ("* * * * *", "*/15 9-17 * * mon-fri", "0 0 29 2 *", "30 2 * * *"):
        step = partial(parse_schedule(spec).next_after, NOW, berlin)
        print(f"next_after {spec!r} (Europe/Berlin): {per_call_us(step, repeat):.0f} µs")
    minutely = parse_schedule("* * * * *")
    year_ago = NOW - timedelta(days=365)
    missed = per_call_us(partial(most_recent, minutely, UTC, year_ago, NOW), 20)
    print(f"most_recent, minutely, a year missed: {missed:.0f} µs")
    cron = training_cron("c", "*/5 * * * *")
    cron["metadata"].update(uid="u", creationTimestamp="2024-01-01T00:00:00Z")
    catching_up = read_cron(cron)
    cron["status"] = {"lastScheduleTime": "2024-02-29T23:55:00Z"}
    steady = read_cron(cron)
    later = NOW + timedelta(seconds=30)
    print(f"decide, steady pass: {per_call_us(partial(decide, steady, [], later), repeat):.0f} µs")
    print(f"decide, over 100 missed: {per_call_us(lambda: decide(catching_up, [], NOW), 50):.0f} µs")
    jobs = finished_jobs(200)
    print(
        f"decide, 200 finished jobs (prunes 197): {per_call_us(lambda: decide(steady, jobs, NOW), 50):.0f} µs"
    )


if __name__ == "__main__":
    main()
