"""What `kubetrain dev` prints while it follows a job: its state and pods
(`describe_progress`), every container that exits non-zero (`failed_exits`), why a gang job
waits or its pods do not start (`pods_not_starting`), and the training progress its pods report
through the training-progress endpoint (`progress_bar`, from `status.trainerStatus`):

    [   0.1s] Running    master: 1 running · worker: 3 running
               progress [######..................]  25%  ETA 0:09  loss 1.1061 · step 30

(on a terminal a bar that follows a bar replaces it in place: `FollowPrinter`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.api.labels import LABEL_REPLICA_TYPE
from kubetrain.api.trainer import constants as trainer
from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.resources import ResourceRef

BAR_WIDTH = 24
MAX_METRICS_SHOWN = 4


def _eta(seconds: int) -> str:
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_bar(job: dict[str, Any]) -> str:
    """`progress [######......]  25%  ETA 0:09  loss 1.1061 · step 30` from the job's
    `status.trainerStatus` (empty when the job has reported nothing)."""
    reported = (job.get("status") or {}).get("trainerStatus") or {}
    if not isinstance(reported, dict) or not reported:
        return ""
    parts = []
    percent = reported.get("progressPercentage")
    if isinstance(percent, int):
        filled = BAR_WIDTH * min(max(percent, 0), 100) // 100
        parts.append(f"progress [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {percent:3d}%")
    else:
        parts.append("progress")
    eta = reported.get("estimatedRemainingSeconds")
    if isinstance(eta, int):
        parts.append(f"ETA {_eta(eta)}")
    metrics = [m for m in reported.get("metrics") or () if isinstance(m, dict)]
    shown = " · ".join(f"{m.get('name')} {m.get('value')}" for m in metrics[:MAX_METRICS_SHOWN])
    if len(metrics) > MAX_METRICS_SHOWN:
        shown += f" · +{len(metrics) - MAX_METRICS_SHOWN} more"
    if shown:
        parts.append(shown)
    return "  ".join(parts)


def _condition(job: dict[str, Any]) -> str:
    conditions = [c for c in (job.get("status") or {}).get("conditions") or () if c.get("status") == "True"]
    return str(conditions[-1]["type"]) if conditions else "Pending"


def _display_state(job: dict[str, Any]) -> str:
    """The last true condition, or `GangScheduling` while the job waits for its PodGroup."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if (
            cond.get("type") == "Running"
            and cond.get("status") == "False"
            and cond.get("reason") == "GangScheduling"
        ):
            return "GangScheduling"
    return _condition(job)


def describe_progress(job: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    """`Running  Master: 1 running · Worker: 2 running, 1 pending` from the job and its pods."""
    by_type: dict[str, dict[str, int]] = {}
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # being deleted (clean-up, a restart): not part of the job's progress any more
        labels = (pod.get("metadata") or {}).get("labels") or {}
        phase = str((pod.get("status") or {}).get("phase") or "Pending").lower()
        rtype = str(labels.get(LABEL_REPLICA_TYPE) or labels.get(trainer.REPLICATED_JOB_NAME) or "?")
        counts = by_type.setdefault(rtype, {})
        counts[phase] = counts.get(phase, 0) + 1
    parts = []
    for rtype in sorted(by_type):
        counts = by_type[rtype]
        parts.append(f"{rtype}: " + ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items())))
    restarts = sum(
        int(rs.get("restarts") or 0)
        for rs in ((job.get("status") or {}).get("replicaStatuses") or {}).values()
    )
    state = _display_state(job)
    node = by_type.get(trainer.NODE, {})
    if (
        state == "Pending"
        and job.get("kind") == trainer.TRAINJOB
        and ("running" in node or "succeeded" in node)
    ):
        state = "Running"  # a TrainJob has no Running condition: the SDK's rule, from the node pods
    line = f"{state:<10} " + (" · ".join(parts) if parts else "no pods")
    return line + (f" · restarts {restarts}" if restarts else "")


def failed_exits(pods: list[dict[str, Any]]) -> dict[tuple[str, str, int], str]:
    """Every non-zero container exit the pods show (a container's current state, or the last
    one before an in-place restart), keyed by pod uid, container and which of its runs ended,
    so a caller prints each once: `pod default/job-master-0: container pytorch exited 137
    (OOMKilled)`."""
    exits: dict[tuple[str, str, int], str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        where = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        uid = str(meta.get("uid") or where)
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            restarts = int(status.get("restartCount") or 0)
            for key, run in (("lastState", restarts - 1), ("state", restarts)):
                done = (status.get(key) or {}).get("terminated") or {}
                code = done.get("exitCode")
                if not isinstance(code, int) or code == 0:
                    continue
                reason = f" ({done['reason']})" if done.get("reason") else ""
                container = str(status.get("name"))
                exits[(uid, container, run)] = f"pod {where}: container {container} exited {code}{reason}"
    return exits


class FollowPrinter:
    """Writes what `follow` prints. On a terminal a new progress bar replaces the previous one
    in place when nothing was printed between them (ANSI: cursor up one line, erase it); to a
    file or a pipe every bar is its own line, so a log keeps the whole history."""

    REPLACE_LAST_LINE = "\x1b[1A\x1b[2K"

    def __init__(self, out: Any) -> None:
        self.out = out
        isatty = getattr(out, "isatty", None)
        self.in_place = bool(isatty()) if callable(isatty) else False
        self._bar_is_last = False

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)
        self._bar_is_last = False

    def bar(self, text: str) -> None:
        prefix = self.REPLACE_LAST_LINE if self.in_place and self._bar_is_last else ""
        print(f"{prefix}           {text}", file=self.out, flush=True)
        self._bar_is_last = True


async def follow(
    stack: DevStack,
    job: dict[str, Any],
    ref: ResourceRef,
    limit: float,
    out: Any,
    clock: Clock = SYSTEM_CLOCK,
) -> int:
    """Print the job's state and its reported progress whenever they change; 0 on Succeeded,
    1 on Failed, 2 when `limit` seconds passed on `clock` (a test's FakeClock, or the real one)."""
    assert stack.controller is not None
    kind = str(job["kind"])
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    started = clock.monotonic()
    printer = FollowPrinter(out)
    last = last_wait = last_bar = ""
    exits_shown: set[tuple[str, str, int]] = set()
    while clock.monotonic() - started < limit:
        current = stack.controller.cache.store(ref).get(ns, name) or job
        pods = stack.controller.observe(kind, ns, name).pods
        line = describe_progress(current, pods)
        if line != last:
            printer.line(f"[{clock.monotonic() - started:6.1f}s] {line}")
            last = line
        for key, exited in failed_exits(pods).items():
            if key not in exits_shown:
                exits_shown.add(key)
                printer.line(f"           {exited}")
        bar = progress_bar(current)
        if bar and bar != last_bar:
            printer.bar(bar)
            last_bar = bar
        wait = _gang_wait(stack, current) or pods_not_starting(current)
        if wait and wait != last_wait:
            printer.line(f"           {wait}")
        last_wait = wait
        state = _condition(current)
        if state in ("Succeeded", "Complete", "Failed"):  # Complete: a TrainJob's
            if stack.progress is not None:
                # The pods' last report (100 % at the end of training) may still wait for the
                # endpoint's write interval: written now, and shown before the verdict.
                await stack.progress.flush()
                bar = progress_bar(await stack.kube.get(ref, ns, name))
                if bar and bar != last_bar:
                    printer.bar(bar)
            for cond in (current.get("status") or {}).get("conditions") or ():
                if cond.get("type") == state:
                    printer.line(f"{kind} {ns}/{name} {state}: {cond.get('message', '')}")
            return 1 if state == "Failed" else 0
        await asyncio.sleep(0.1)
    printer.line(f"{kind} {ns}/{name}: not finished after {limit:.0f}s")
    return 2


def pods_not_starting(job: dict[str, Any]) -> str:
    """Why the job's pods do not start (its `PodsNotStarting` condition's message, which names
    each pod/container and the kubelet's reason, e.g. ImagePullBackOff); empty otherwise."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodsNotStarting" and cond.get("status") == "True":
            return str(cond.get("message") or cond.get("reason") or "")
    return ""


def _gang_wait(stack: DevStack, job: dict[str, Any]) -> str:
    """Why a gang job waits: its condition message, and the PodGroup phase the simulated gang
    scheduler gave it (empty when the job is not waiting for gang scheduling)."""
    if _display_state(job) != "GangScheduling":
        return ""
    cond = next(c for c in job["status"]["conditions"] if c.get("type") == "Running")
    text = str(cond.get("message", ""))
    if stack.gang_simulator is not None:
        group = stack.gang_simulator.group(job["metadata"]["namespace"], job["metadata"]["name"])
        if group is not None:
            status = group.get("status") or {}
            text += f" (PodGroup phase {status.get('phase') or 'unset'})"
            for c in status.get("conditions") or ():
                if c.get("type") == "Unschedulable":
                    text += f": {c.get('reason')}: {c.get('message')}"
    return text
