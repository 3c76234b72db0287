"""Garbage-collection pauses of the controller benchmarks' two processes (not a benchmark itself).

The operator's come from its /metrics (`kubetrain_gc_pause_seconds{generation}`: count, total,
and the longest as the upper bound of the highest non-empty bucket; an operator from a checkout
without the metric reports none); the benchmark process's own (devcluster, the pod simulator,
the load generator) from a `gc.callbacks` recorder in this process. The freeze policy
(`KUBETRAIN_GC_FREEZE`, kubetrain.serving.gcfreeze) is configured from the environment in both,
so one variable switches it for a before/after run.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from kubetrain.serving import gcfreeze
from kubetrain.serving.gcpause import GcPauses, PauseStats

PAUSE_METRIC = "kubetrain_gc_pause_seconds"


def operator_gc_pauses(metrics_text: str) -> dict[str, dict[str, float]] | None:
    """{"gen0": {"count", "total_s", "max_ms_le"}, ...} from an operator's /metrics text."""
    out: dict[str, dict[str, Any]] = {}
    buckets: dict[str, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != PAUSE_METRIC:
            continue
        for sample in family.samples:
            gen = "gen" + sample.labels["generation"]
            entry = out.setdefault(gen, {"count": 0, "total_s": 0.0, "max_ms_le": 0.0})
            if sample.name.endswith("_count"):
                entry["count"] = int(sample.value)
            elif sample.name.endswith("_sum"):
                entry["total_s"] = round(sample.value, 3)
            elif sample.name.endswith("_bucket"):
                buckets.setdefault(gen, []).append((float(sample.labels["le"]), sample.value))
    for gen, cumulative in buckets.items():
        cumulative.sort()
        below = 0.0
        for le, count in cumulative:
            if count > below:  # a pause landed in this bucket
                out[gen]["max_ms_le"] = le * 1000 if le != float("inf") else float("inf")
            below = count
    return dict(sorted(out.items())) or None


def frozen_objects(metrics_text: str) -> int | None:
    for family in text_string_to_metric_families(metrics_text):
        if family.name == "kubetrain_gc_frozen_objects":
            return int(family.samples[0].value)
    return None


class OwnPauses:
    """This process's collections from `start()` on, with the freeze policy the environment asks for."""

    def __init__(self) -> None:
        self.stats = PauseStats()
        self.full: list[tuple[float, float, int]] = []  # (when, pause, frozen after) of each full one
        self.recorder = GcPauses([self.stats.observe, self.note_full])
        self.policy = gcfreeze.configure(os.environ)
        # The same pauses in this thread's CPU time: what is the collector's work, not the machine
        # giving the CPU to other processes in the middle of a collection.
        self.cpu = PauseStats()
        self.cpu_recorder = GcPauses([self.cpu.observe], clock=time.thread_time)

    def note_full(self, generation: int, pause: float) -> None:
        if generation == 2:  # the policy's count: gc.get_freeze_count() would walk every frozen object
            self.full.append((time.perf_counter(), pause, self.policy.frozen if self.policy else 0))

    def reset(self) -> None:
        """Forget the pauses seen so far (the policy and what it froze stay)."""
        for stats in (self.stats, self.cpu):
            stats.by_generation.clear()
        self.full.clear()

    def start(self) -> None:
        self.recorder.install()
        self.cpu_recorder.install()

    def stop(self) -> None:
        self.recorder.uninstall()
        self.cpu_recorder.uninstall()

    def summary(self) -> dict[str, Any]:
        return {
            "freeze_policy": gcfreeze.factor_from(os.environ),
            "pauses": self.stats.summary(),
            "pauses_cpu": self.cpu.summary(),
            "frozen_objects": gc.get_freeze_count(),
            "thaws": self.policy.thaws if self.policy else 0,
            # Each full collection: seconds since the first, pause ms, frozen after it (policy count).
            "full_collections": [
                (round(t - self.full[0][0], 1), round(1000 * p, 1), frozen) for t, p, frozen in self.full
            ],
            "rss_peak_mb": round(own_status_kb("VmHWM") / 1024, 1),
            "rss_mb": round(own_status_kb("VmRSS") / 1024, 1),
        }


def own_status_kb(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def describe(pauses: dict[str, dict[str, Any]] | None, max_key: str = "max_ms") -> str:
    """ "gen0 812x 0.41 s max 3.1 ms, ..." for the printed line."""
    if not pauses:
        return "not exported"
    prefix = "≤" if max_key == "max_ms_le" else ""
    return ", ".join(
        f"{gen} {p['count']}x {p['total_s']} s max {prefix}{p[max_key]:g} ms" for gen, p in pauses.items()
    )


__all__ = ["OwnPauses", "describe", "frozen_objects", "operator_gc_pauses"]
