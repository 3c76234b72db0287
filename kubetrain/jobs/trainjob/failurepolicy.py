"""What a failed step does to a TrainJob: the runtime template's JobSet `failurePolicy`, as
JobSet v0.12 executes it (pkg/controllers/failure_policy.go) on the failed jobs (a step's job
fails with reason `BackoffLimitExceeded` once its backoffLimit is exceeded):

- no failurePolicy: the TrainJob fails, reason `FailedJobs`;
- else the first rule (in order) whose `targetReplicatedJobs` (empty: any) holds a failed step and
  whose `onJobFailureReasons` (empty: any) holds `BackoffLimitExceeded` decides; without one,
  `RestartJobSet`:
  - `FailJobSet`: fails, reason `FailJobSetFailurePolicyAction`;
  - `RestartJobSet`: every pod restarts as a new attempt while the restarts counted so far are
    below `maxRestarts`, else fails, reason `ReachedMaxRestarts`;
  - `RestartJobSetAndIgnoreMaxRestarts`: restarts without counting towards `maxRestarts`.
Messages name the first failed job (`<tj>-<step>-<jobIndex>`: the first step in the runtime's
order with a failed job, its lowest failed job index). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.api.trainer import constants as c
from kubetrain.jobs.failuremodel import GangVerdict

JOB_FAILURE_REASON = "BackoffLimitExceeded"
JOB_FAILURE_MESSAGE = "Job has reached the specified backoff limit"
FAIL = "FailJobSet"
RESTART = "RestartJobSet"
RESTART_IGNORING_MAX = "RestartJobSetAndIgnoreMaxRestarts"
REASON_FAIL_ACTION = "FailJobSetFailurePolicyAction"
REASON_RESTART_ACTION = "RestartJobSetFailurePolicyAction"
REASON_RESTART_IGNORING_MAX = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"


@dataclass(frozen=True)
class JobSetFailurePolicy:
    """A TrainJob's `GangFailurePolicy` (`JobShape.failure.gang`): its runtime template's
    `failurePolicy` (None: a failed replicated job fails the TrainJob) for the TrainJob `name`."""

    name: str
    policy: Mapping[str, Any] | None

    @property
    def max_restarts(self) -> int:
        limit = (self.policy or {}).get("maxRestarts")
        return limit if isinstance(limit, int) and not isinstance(limit, bool) else 0

    def decide(
        self, failed_groups: Sequence[str], counted_restarts: int, first_jobs: Mapping[str, int] | None = None
    ) -> GangVerdict:
        return decide(self.name, self.policy, failed_groups, counted_restarts, first_jobs)


def _applies(rule: Mapping[str, Any], step: str) -> bool:
    reasons = rule.get("onJobFailureReasons") or []
    targets = rule.get("targetReplicatedJobs") or []
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if reasons and JOB_FAILURE_REASON not in reasons:
        return False
    if targets and step not in targets:
        return False
    return not patterns or any(_matches(p, JOB_FAILURE_MESSAGE) for p in patterns)


def _matches(pattern: object, text: str) -> bool:
    try:
        return re.search(str(pattern), text) is not None
    except re.error:
        return False


def decide(
    tj: str,
    policy: Mapping[str, Any] | None,
    failed_steps: Sequence[str],
    counted_restarts: int,
    first_jobs: Mapping[str, int] | None = None,
) -> GangVerdict:
    """`failed_steps` in the runtime's step order; `counted_restarts`: restarts so far that count
    towards maxRestarts; `first_jobs`: per failed step, the index of its first failed job (0 when
    not given)."""
    jobs = first_jobs or {}
    first = f"{tj}-{failed_steps[0]}-{jobs.get(failed_steps[0], 0)}"
    if policy is None:
        return GangVerdict(
            False,
            False,
            c.REASON_FAILED_JOBS,
            f"jobset failed due to one or more job failures (first failed job: {first})",
        )
    action, job = RESTART, first
    for rule in policy.get("rules") or []:
        step = next((s for s in failed_steps if _applies(rule, s)), None)
        if step is not None:
            action, job = str(rule.get("action") or RESTART), f"{tj}-{step}-{jobs.get(step, 0)}"
            break
    if action == FAIL:
        return GangVerdict(
            False,
            False,
            REASON_FAIL_ACTION,
            f"applying FailJobSet failure policy action (first failed job: {job})",
        )
    if action == RESTART_IGNORING_MAX:
        return GangVerdict(
            True,
            False,
            REASON_RESTART_IGNORING_MAX,
            f"applying RestartJobSetAndIgnoreMaxRestarts failure policy action (first failed job: {job})",
        )
    if counted_restarts >= JobSetFailurePolicy(tj, policy).max_restarts:
        return GangVerdict(
            False,
            False,
            c.REASON_REACHED_MAX_RESTARTS,
            f"jobset failed due to reaching max number of restarts (first failed job: {job})",
        )
    return GangVerdict(
        True,
        True,
        REASON_RESTART_ACTION,
        f"applying RestartJobSet failure policy action (first failed job: {job})",
    )
