"""A TrainJob's part of training progress — pure: what its pods get to report (progressenv.py,
with Trainer 2.3's names), and stall detection on its reports.

Injection: with a status-server URL, every container and init container of every pod a TrainJob
creates (node, launcher, dataset/model initializers) gets Trainer's three env vars and the
projected volume; the CA is in the ConfigMap `<tj>-tls-config` (Trainer's name), created before
the first pod and updated when the CA changes. `kubetrain.io/progress-reporting: disabled` opts
a TrainJob out, as any job.

Stall detection: a TrainJob declares a progress deadline with the annotation
`kubetrain.io/progress-deadline-seconds` (Trainer's schema has no field for it). When a pod of
the current attempt is Running and the last report received in this attempt (after the last
whole-gang restart — `restartedAt` in the run's record — and after the last resume) is older
than the deadline, the TrainJob is stalled: a Warning event `ProgressDeadlineExceeded`, then a
whole-gang restart (JobSet's RestartJobSet: every pod a new attempt) counted against the
runtime's `failurePolicy.maxRestarts` while it leaves room, else Failed with reason
`ProgressDeadlineExceeded`. No `Stalled` condition: Trainer's TrainJobs carry only `Suspended`,
`Complete` and `Failed`, and the Kubeflow SDK calls a TrainJob with any other condition neither
Running nor anything else. A TrainJob that never reports is never stalled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainerstatus import progress_deadline_seconds
from kubetrain.operator import stall
from kubetrain.operator.draft import Plan
from kubetrain.operator.pods import controlled_by, pod_phase, terminating
from kubetrain.operator.progressenv import (
    JobRef,
    ProgressInjection,
    config_map,
    config_map_name,
    enabled,
    inject,
)
from kubetrain.operator.status import format_time
from kubetrain.operator.status import get_condition as condition

Obj = dict[str, Any]
REASON = stall.REASON
RESTARTED_AT = "restartedAt"  # the run's record (the snapshot's state): when the attempt began


@dataclass(frozen=True)
class StallDecision:
    new_state: Obj | None  # the run's record after it (None: not stalled)
    restart: bool = False  # True: every pod restarts as a new attempt; False: the TrainJob fails
    message: str = ""
    due: datetime | None = None  # not stalled: when to look again


def injection_for(
    trainjob: Mapping[str, Any], injection: ProgressInjection | None
) -> ProgressInjection | None:
    """The injection this TrainJob's pods get (None: none configured, or opted out)."""
    return injection if enabled(JobRef.of(trainjob), injection) else None


def inject_pod(trainjob: Mapping[str, Any], injection: ProgressInjection | None, pod: Obj) -> None:
    """Add the env, token volume and mounts to a new pod of the TrainJob (none when opted out)."""
    ref = JobRef.of(trainjob)
    if injection is not None and enabled(ref, injection):
        inject(ref, injection, pod["spec"])


def ca_children(
    trainjob: Mapping[str, Any],
    injection: ProgressInjection | None,
    observed: Sequence[Mapping[str, Any]],
    plan: Plan,
    own: Callable[[Mapping[str, Any]], Obj],
) -> None:
    """Add the CA ConfigMap's create or update to `plan` (its children go before its pods);
    `own`: the object labelled and owned by the TrainJob."""
    wanted = injection_for(trainjob, injection)
    if wanted is None:
        return
    owned = [cm for cm in observed if controlled_by(cm, trainjob)]
    create, update = ca_config_map(trainjob, wanted, owned)
    if create is not None:
        plan.create_children.append(own(create))
    if update is not None:
        plan.update_children.append(update)


def ca_config_map(
    trainjob: Mapping[str, Any], injection: ProgressInjection, observed: Sequence[Mapping[str, Any]]
) -> tuple[Obj | None, Obj | None]:
    """(to create, to update) of the CA ConfigMap, given the TrainJob's observed ConfigMaps;
    the object to create has no owner or labels yet (the caller adds the TrainJob's)."""
    ref = JobRef.of(trainjob)
    wanted = config_map(ref, injection)
    name = config_map_name(ref)
    current = next((cm for cm in observed if (cm.get("metadata") or {}).get("name") == name), None)
    if current is None:
        return wanted, None
    if current.get("data") != wanted["data"]:
        return None, {**current, "data": wanted["data"]}
    return None, None


def deadline_of(trainjob: Mapping[str, Any]) -> int | None:
    meta = trainjob.get("metadata") or {}
    return progress_deadline_seconds({}, meta.get("annotations") or {})


def _attempt_began(status: Mapping[str, Any], state: Mapping[str, Any]) -> datetime | None:
    began = parse_time(state.get(RESTARTED_AT))
    suspended = condition(status, c.SUSPENDED)
    if suspended is not None and suspended.get("status") == "False":
        resumed = parse_time(suspended.get("lastTransitionTime"))
        if resumed is not None and (began is None or resumed > began):
            began = resumed
    return began


def check(
    trainjob: Mapping[str, Any],
    state: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
) -> stall.Verdict:
    """Is the TrainJob stalled now? `pods`: its pods of the current attempt; `state`: the run's
    record. `due`: when to look again."""
    deadline = deadline_of(trainjob)
    if deadline is None or not any(pod_phase(p) == "Running" and not terminating(p) for p in pods):
        return stall.Verdict(False)
    status = trainjob.get("status") or {}
    report = status.get("trainerStatus")
    last = parse_time(report.get("lastUpdatedTime")) if isinstance(report, Mapping) else None
    began = _attempt_began(status, state)
    if last is None or (began is not None and last < began):
        return stall.Verdict(False)  # no report in this attempt: never called stalled
    due = last + timedelta(seconds=deadline)
    if now < due:
        return stall.Verdict(False, due=due)
    assert isinstance(report, Mapping)
    percent = report.get("progressPercentage")
    at = f" at {percent}%" if percent is not None else ""
    name = (trainjob.get("metadata") or {}).get("name", "")
    message = (
        f"TrainJob {name} has reported no progress for {deadline}s (progress deadline): "
        f"last report {report.get('lastUpdatedTime')}{at}."
    )
    return stall.Verdict(True, message)


def decide(
    trainjob: Mapping[str, Any],
    state: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    max_restarts: int,
) -> StallDecision:
    """What a stall does to the TrainJob (`state`: the run's record, its restarts so far;
    `max_restarts`: its failure policy's, 0 without one)."""
    verdict = check(trainjob, state, pods, now)
    if not verdict.stalled:
        return StallDecision(None, due=verdict.due)
    restarts = int(state.get("restarts") or 0)
    so_far = int(state.get("countedRestarts", restarts) or 0)
    if so_far >= max_restarts:  # a stall restart is JobSet's RestartJobSet: it counts
        return StallDecision(dict(state), message=verdict.message)
    new = {"restarts": restarts + 1, "countedRestarts": so_far + 1, "failures": {}}
    message = (
        f"{verdict.message} Restarting every pod as attempt {restarts + 1} "
        f"(restart {so_far + 1} of maxRestarts {max_restarts})."
    )
    return StallDecision(restarted(new, now), restart=True, message=message)


def restarted(state: Mapping[str, Any], now: datetime) -> Obj:
    """The run's record with the new attempt's start."""
    return {**state, RESTARTED_AT: format_time(now)}


def earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    return a if b is None or a <= b else b
