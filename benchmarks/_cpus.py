"""Processes and CPUs for the benchmarks that run several processes on one machine: pin a
process's threads to CPUs, find the operator's status-server child, add up CPU seconds."""

from __future__ import annotations

import os
from pathlib import Path

from _common import proc_cpu_seconds


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of process `pid` on `cpus` (threads started later inherit it)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cpus)


def status_child(pid: int) -> int | None:
    """The `kubetrain status-server` child of the operator, if it runs."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"status-server" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return int(child)
    return None


def cpu_seconds(*pids: int | None) -> float:
    return sum(proc_cpu_seconds(p) for p in pids if p is not None)
