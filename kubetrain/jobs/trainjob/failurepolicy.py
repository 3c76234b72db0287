"""What a failed step does to a TrainJob: the runtime template's JobSet `failurePolicy`, as
JobSet v0.12 executes it (pkg/controllers/failure_policy.go) on the failed jobs (a step's job
fails with reason `BackoffLimitExceeded` once its backoffLimit is exceeded, `PodFailurePolicy`
when a FailJob rule of its `podFailurePolicy` matched a pod, `DeadlineExceeded` past its own
activeDeadlineSeconds, or `FailedIndexes`/`MaxFailedIndexesExceeded` through its indexes under
backoffLimitPerIndex):

- no failurePolicy: the TrainJob fails, reason `FailedJobs`;
- else the first rule (in order) whose `targetReplicatedJobs` (empty: any) holds a failed Job's
  step, whose `onJobFailureReasons` (empty: any) holds that Job's failure reason and whose
  `onJobFailureMessagePatterns` (empty: any) match its message (JobSet's `ruleIsApplicable`)
  decides, for the Job of those it applies to that failed first; without one, `RestartJobSet`
  for the Job that failed first (`kubetrain.jobs.failureorder`: JobSet's order by failure time
  and its tie-break):
  - `FailJobSet`: fails, reason `FailJobSetFailurePolicyAction`;
  - `RestartJobSet`: every pod restarts as a new attempt while the restarts counted so far are
    below `maxRestarts`, else fails, reason `ReachedMaxRestarts`;
  - `RestartJobSetAndIgnoreMaxRestarts`: restarts without counting towards `maxRestarts`;
  - `RestartJob`: the failed job alone restarts (its pods recreated as its next attempt, every
    other job left running) while the restarts counted so far are below `maxRestarts`, else
    fails, reason `ReachedMaxRestarts`;
  - `RestartJobAndIgnoreMaxRestarts`: the failed job alone restarts, not counted.
  The restarts counted so far are JobSet's `totalRestartsCountTowardsMax`: the whole restarts
  that counted plus every job's own counted restarts (`RestartJob`).
Messages name the Job acted on (`<tj>-<step>-<jobIndex>`), or without a policy the Job that
failed first. `validate`: JobSet's webhook rule for the
single-job actions (replicas ≤ 1024 per replicated job), and no `restartStrategy: InPlaceRestart`
(no JobSet object for its restart agent to read). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from kubetrain.api.errors import FieldError, invalid
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.jobset import IN_PLACE_RESTART, JOB_RESTART_ACTIONS, MAX_REPLICAS_WITH_JOB_RESTARTS
from kubetrain.jobs.failuremodel import GangVerdict
from kubetrain.jobs.failureorder import BACKOFF_LIMIT_EXCEEDED, BACKOFF_LIMIT_MESSAGE, FailedJob, FailureOrder
from kubetrain.jobs.trainerrules import IN_PLACE_RESTART_MESSAGE

JOB_FAILURE_REASON = BACKOFF_LIMIT_EXCEEDED
JOB_FAILURE_MESSAGE = BACKOFF_LIMIT_MESSAGE
FAIL = "FailJobSet"
RESTART = "RestartJobSet"
RESTART_IGNORING_MAX = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB = "RestartJob"
RESTART_JOB_IGNORING_MAX = "RestartJobAndIgnoreMaxRestarts"
REASON_FAIL_ACTION = "FailJobSetFailurePolicyAction"
REASON_RESTART_ACTION = "RestartJobSetFailurePolicyAction"
REASON_RESTART_IGNORING_MAX = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
REASON_RESTART_JOB_ACTION = "RestartJobFailurePolicyAction"
REASON_RESTART_JOB_IGNORING_MAX = "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
# JobSet's webhook message (pkg/webhooks/jobset_webhook.go, validateFailurePolicy).
TOO_MANY_REPLICAS = (
    "JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts "
    f"action and a replicated job with replicas > {MAX_REPLICAS_WITH_JOB_RESTARTS}"
)


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

    def decide(self, failed: FailureOrder | Sequence[FailedJob], counted_restarts: int) -> GangVerdict:
        return decide(self.name, self.policy, failed, counted_restarts)


def restarts_jobs(policy: Mapping[str, Any] | None) -> bool:
    """Whether a rule of the failure policy restarts a single job (`RestartJob`,
    `RestartJobAndIgnoreMaxRestarts`): its pods then carry their job's restart attempt."""
    rules = (policy or {}).get("rules") or []
    return any(isinstance(r, Mapping) and r.get("action") in JOB_RESTART_ACTIONS for r in rules)


def validate(jobset_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """JobSet's webhook rule: with a single-job restart action no replicated job has more than
    1024 `replicas` (the items JobSet's `jobRestarts` may hold); and kubetrain's: no
    `restartStrategy: InPlaceRestart` (the runtime CRD's rule and message,
    `kubetrain.jobs.trainerrules.IN_PLACE_RESTART`). `path`: the JobSet spec's."""
    errors: list[FieldError] = []
    failure = jobset_spec.get("failurePolicy")
    if isinstance(failure, Mapping) and failure.get("restartStrategy") == IN_PLACE_RESTART:
        errors.append(invalid(f"{path}.failurePolicy.restartStrategy", IN_PLACE_RESTART_MESSAGE))
    if not restarts_jobs(failure):
        return errors
    for i, rjob in enumerate(jobset_spec.get("replicatedJobs") or []):
        replicas = rjob.get("replicas") if isinstance(rjob, Mapping) else None
        if isinstance(replicas, int) and replicas > MAX_REPLICAS_WITH_JOB_RESTARTS:
            errors.append(invalid(f"{path}.replicatedJobs[{i}].replicas", TOO_MANY_REPLICAS))
    return errors


def _applies(rule: Mapping[str, Any], job: FailedJob) -> bool:
    """JobSet's `ruleIsApplicable`: the Job's failure reason, its message, its replicated job."""
    reasons = rule.get("onJobFailureReasons") or []
    targets = rule.get("targetReplicatedJobs") or []
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if reasons and job.reason not in reasons:
        return False
    if patterns and not any(_matches(p, job.message) for p in patterns):
        return False
    return not targets or job.group in targets


def _matches(pattern: object, text: str) -> bool:
    try:
        return re.search(str(pattern), text) is not None
    except re.error:
        return False


def decide(
    tj: str,
    policy: Mapping[str, Any] | None,
    failed: FailureOrder | Sequence[FailedJob],
    counted_restarts: int,
) -> GangVerdict:
    """`failed`: the failed Jobs (at least one), as a `FailureOrder` or listed in the runtime's
    step order, then by Job index; `counted_restarts`: restarts so far that count towards
    maxRestarts (whole and single-job)."""
    order = failed if isinstance(failed, FailureOrder) else FailureOrder(failed)
    first = order.first()
    if first is None:
        raise ValueError("a failure policy decides on at least one failed Job")
    if policy is None:
        return GangVerdict(
            False,
            False,
            c.REASON_FAILED_JOBS,
            f"jobset failed due to one or more job failures (first failed job: {_name(tj, first)})",
        )
    action, acted = RESTART, first
    for rule in policy.get("rules") or []:
        matched = order.first(applies=partial(_applies, rule))
        if matched is not None:
            action, acted = str(rule.get("action") or RESTART), matched
            break
    job = _name(tj, acted)
    if action == FAIL:
        return GangVerdict(
            False,
            False,
            REASON_FAIL_ACTION,
            f"applying FailJobSet failure policy action (first failed job: {job})",
        )
    if action in (RESTART_IGNORING_MAX, RESTART_JOB_IGNORING_MAX):
        single = action == RESTART_JOB_IGNORING_MAX
        return GangVerdict(
            True,
            False,
            REASON_RESTART_JOB_IGNORING_MAX if single else REASON_RESTART_IGNORING_MAX,
            f"applying {action} failure policy action (first failed job: {job})",
            (acted.group, acted.index) if single else None,
        )
    if counted_restarts >= JobSetFailurePolicy(tj, policy).max_restarts:
        return GangVerdict(
            False,
            False,
            c.REASON_REACHED_MAX_RESTARTS,
            f"jobset failed due to reaching max number of restarts (first failed job: {job})",
        )
    single = action == RESTART_JOB
    return GangVerdict(
        True,
        True,
        REASON_RESTART_JOB_ACTION if single else REASON_RESTART_ACTION,
        f"applying {RESTART_JOB if single else RESTART} failure policy action (first failed job: {job})",
        (acted.group, acted.index) if single else None,
    )


def _name(tj: str, job: FailedJob) -> str:
    """The batch Job's name, as JobSet names it."""
    return f"{tj}-{job.group}-{job.index}"
