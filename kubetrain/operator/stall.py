"""Stall detection: a Running job whose training code reported progress and then went quiet.

A job declares a progress deadline — `runPolicy.progressDeadlineSeconds` (kubetrain.io), or the
annotation `kubetrain.io/progress-deadline-seconds` (any group: kubeflow.org schemas stay
Kubeflow's). The clock starts at a report: when the job is Running and its last report
(`status.trainerStatus.lastUpdatedTime`, stamped by the endpoint on receipt) was made in the
current run (after the Running condition last became True) and is older than the deadline, the
job is stalled. A job — or a run after a restart — that never reported is never stalled.

A job without a Running condition (a TrainJob, `check_attempt`) is timed from the current
attempt instead: a pod of it Running, its clock from the last whole-job restart or resume.

What happens then (active.py): a `Stalled` condition (reason `ProgressDeadlineExceeded`,
message with the last report's time and percent) and a Warning event; then the whole job is
restarted as a new attempt when its replicas may restart (a restartPolicy other than Never)
and backoffLimit leaves room — the restart counts against backoffLimit — else it fails with
reason ProgressDeadlineExceeded. A later report of a new run sets `Stalled` back to False.
For a per-group shape (groupactive.py): no condition, a whole-gang restart counted against its
gang policy's `max_restarts` while it leaves room, else Failed. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.trainerstatus import ANNOTATION_DEADLINE, progress_deadline_seconds
from kubetrain.operator import status as st

ANNOTATION = ANNOTATION_DEADLINE
# The deadline a job declares (the planner reads it from the job shape's RunPolicy).
deadline_seconds = progress_deadline_seconds
STALLED = "Stalled"
REASON = "ProgressDeadlineExceeded"
REASON_RESUMED = "ProgressReported"


@dataclass(frozen=True)
class Verdict:
    stalled: bool
    message: str = ""
    due: datetime | None = None  # when to look again (the deadline of the last report)


def check(status: Mapping[str, Any], deadline: int | None, now: datetime, title: str) -> Verdict:
    """A job whose run is told by its Running condition (Kubeflow's): stalled once Running and
    quiet past the deadline since a report made after Running last became True."""
    if deadline is None or not st.is_true(dict(status), st.RUNNING):
        return Verdict(False)
    running = st.get_condition(dict(status), st.RUNNING) or {}
    return judge(
        status.get("trainerStatus"), deadline, st.parse_time(running.get("lastTransitionTime")), now, title
    )


def check_attempt(
    status: Mapping[str, Any],
    deadline: int | None,
    restarted_at: str | None,
    pods_running: bool,
    now: datetime,
    title: str,
) -> Verdict:
    """A job with no Running condition (a TrainJob): stalled once a pod of the current attempt is
    Running and the job is quiet past the deadline since a report made in this attempt — after
    the last whole-job restart (`restarted_at`, the run's record) and after the last resume."""
    if deadline is None or not pods_running:
        return Verdict(False)
    began = st.parse_time(restarted_at)
    suspended = st.get_condition(dict(status), st.SUSPENDED)
    if suspended is not None and suspended.get("status") == "False":
        resumed_at = st.parse_time(suspended.get("lastTransitionTime"))
        if resumed_at is not None and (began is None or resumed_at > began):
            began = resumed_at
    return judge(status.get("trainerStatus"), deadline, began, now, title)


def judge(report: Any, deadline: int, began: datetime | None, now: datetime, title: str) -> Verdict:
    """The rule every job's stall follows: its last report (`status.trainerStatus`), made since
    its run `began`, is older than `deadline` seconds. No report in this run: never stalled."""
    last = st.parse_time(report.get("lastUpdatedTime")) if isinstance(report, Mapping) else None
    if last is None or (began is not None and last < began):
        return Verdict(False)  # no report in this run: never called stalled
    assert isinstance(report, Mapping)
    due = last + timedelta(seconds=deadline)
    if now < due:
        return Verdict(False, due=due)
    percent = report.get("progressPercentage")
    at = f" at {percent}%" if percent is not None else ""
    message = (
        f"{title} has reported no progress for {deadline}s (progress deadline): "
        f"last report {report.get('lastUpdatedTime')}{at}."
    )
    return Verdict(True, message)


def resumed(status: dict[str, Any], now: datetime) -> None:
    """A report newer than the Stalled condition turns it False (mutates `status`)."""
    cond = st.get_condition(status, STALLED)
    report = status.get("trainerStatus")
    if cond is None or cond.get("status") != "True" or not isinstance(report, Mapping):
        return
    last, since = st.parse_time(report.get("lastUpdatedTime")), st.parse_time(cond.get("lastTransitionTime"))
    if last is not None and since is not None and last > since:
        st.set_condition(
            status, STALLED, False, REASON_RESUMED, "The training code reports progress again.", now
        )


def report_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """An update the planner needs not see: only `status.trainerStatus` changed (a progress
    write; the caller has checked that spec and metadata did not) and the job declares no
    progress deadline — nothing it decides reads a report then. With a deadline every report
    is reconciled (the deadline moves; a first report of a run starts the clock)."""
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if old_status.get("trainerStatus") == new_status.get("trainerStatus"):
        return False
    rest = {k: v for k, v in new_status.items() if k != "trainerStatus"}
    if rest != {k: v for k, v in old_status.items() if k != "trainerStatus"}:
        return False
    meta = new.get("metadata") or {}
    spec = new.get("spec")
    return deadline_seconds(spec if isinstance(spec, Mapping) else {}, meta.get("annotations") or {}) is None


def may_restart(restart_policies: list[str]) -> bool:
    return any(p != "Never" for p in restart_policies)
