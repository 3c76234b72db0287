"""How a job's failed pods end it or restart it: the failure model a `JobShape` carries
(`JobShape.failure`), data the planner reads instead of asking which kind of job it has.

Two models:

- **per pod** (`FailureModel()`, the v1 kinds and MPIJob v2beta1): each Failed pod is judged on
  its own by its group's restart policy and the run policy's pod failure rules, and recreated
  against the job's one `backoffLimit` (`operator/restarts.py`, `operator/active.py`).
- **per group** (a JobSet of batch Jobs: Trainer's TrainJob): a group is `replicas / job_size`
  batch Jobs, each with the group's backoff limit to itself; the failed pods of a Job are
  recreated and counted against it as the Job controller counts a Job's (restartPolicy Never:
  failed pods; OnFailure: the container restarts of its live pods too), a Job past it has failed
  (`BackoffLimitExceeded`) and so has its group, and the `gang` policy decides what the failed
  groups do to the whole job: fail it, restart every pod as a new attempt, or restart the
  failed Job's pods alone as that Job's next attempt (`operator/groupfailure.py`,
  `operator/jobrestarts.py`). The count lives in the job's own record of its run (a
  TrainJob's snapshot ConfigMap), per Job, reset by a restart of that Job or of the gang.
  A group's Jobs may have batch/v1 pod failure rules (`pod_failure_rules`, the Job's
  `podFailurePolicy`): the first rule that matches a Failed pod decides, as the Job controller
  decides — `Ignore` (recreated, not counted), `Count` (counted), `FailJob` (the Job fails at once,
  reason `PodFailurePolicy`); a rule with another action is skipped. A group's Jobs may have
  their own `active_deadlines` (`activeDeadlineSeconds`, from each Job's start: reason
  `DeadlineExceeded`, `operator/jobdeadlines.py`). A group's Jobs may count failures per index
  (`index_limits`, the Job's `backoffLimitPerIndex`, with `max_failed_indexes`): an index past
  its limit (or failed by a `FailIndex` rule) is not retried, and its Job fails once every index
  succeeded or failed (`FailedIndexes`), or at once past `maxFailedIndexes`
  (`MaxFailedIndexesExceeded`) (`operator/indexfailure.py`).

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from kubetrain.jobs.failureorder import FailedJob, FailureOrder
from kubetrain.jobs.jobsuccess import SuccessRule

DEFAULT_JOB_BACKOFF_LIMIT = 6  # batch/v1 Job's
# batch/v1's default backoffLimit of a Job with backoffLimitPerIndex (SetDefaults_Job: MaxInt32)
PER_INDEX_JOB_BACKOFF_LIMIT = 2**31 - 1
# The actions of a batch Job's pod failure rules (batch/v1's; FailIndex only with
# backoffLimitPerIndex, `INDEX_RULE_ACTIONS`), and the Job's failure reasons kubetrain gives
# (batch/v1's JobReasonPodFailurePolicy, JobReasonFailedIndexes, JobReasonMaxFailedIndexesExceeded,
# with the Job controller's messages).
JOB_RULE_ACTIONS: tuple[str, ...] = ("FailJob", "Ignore", "Count")
INDEX_RULE_ACTIONS: tuple[str, ...] = ("FailJob", "FailIndex", "Ignore", "Count")
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_FAILED_INDEXES = "FailedIndexes"
MESSAGE_FAILED_INDEXES = "Job has failed indexes"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
MESSAGE_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"


@dataclass(frozen=True, slots=True)
class GangVerdict:
    """What failed groups do to the job."""

    restart: bool  # True: every pod restarts as a new attempt; False: the job fails
    counts: bool  # the restart counts towards the policy's `max_restarts`
    reason: str  # the Failed condition's reason, or the restart event's
    message: str
    # A restart of this one batch Job (group, Job index) alone — its pods recreated as the Job's
    # next attempt, every other pod left running (JobSet's `RestartJob`); None: the whole gang.
    job: tuple[str, int] | None = None


class GangFailurePolicy(Protocol):
    """The whole-gang rule over failed groups (JobSet's `failurePolicy`)."""

    @property
    def max_restarts(self) -> int: ...

    def decide(self, failed: FailureOrder | Sequence[FailedJob], counted_restarts: int) -> GangVerdict:
        """`failed`: the failed Jobs (at least one), each with when it failed, as a
        `FailureOrder` or listed in the shape's group order, then by Job index (`failureorder`:
        which one the policy acts on);
        `counted_restarts`: the restarts so far that count towards `max_restarts` (whole-gang
        and single-Job ones together)."""
        ...


def _no_groups() -> Mapping[str, int]:
    return MappingProxyType({})


def _no_success_rules() -> Mapping[str, tuple[SuccessRule, ...]]:
    return MappingProxyType({})


def _no_rules() -> Mapping[str, tuple[Mapping[str, Any], ...]]:
    return MappingProxyType({})


@dataclass(frozen=True)
class FailureModel:
    """`gang` None: the per-pod model; else the per-group model with each group's backoff limit
    (a group without one: batch/v1's default, 6)."""

    backoff_limits: Mapping[str, int] = field(default_factory=_no_groups)
    gang: GangFailurePolicy | None = None
    # per group, its Jobs' pod failure rules (batch/v1 `podFailurePolicy.rules`; none: every
    # Failed pod counts)
    pod_failure_rules: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=_no_rules)
    # per group, its Jobs' own `activeDeadlineSeconds` (a group without one: no deadline)
    active_deadlines: Mapping[str, int] = field(default_factory=_no_groups)
    # per group, its Jobs' `backoffLimitPerIndex` (a group without one: failures count per Job)
    index_limits: Mapping[str, int] = field(default_factory=_no_groups)
    # per group with `index_limits`, its Jobs' `maxFailedIndexes` (a group without one: no cap)
    max_failed_indexes: Mapping[str, int] = field(default_factory=_no_groups)
    # per group, its Jobs' `successPolicy` rules (`jobsuccess.py`; a group without: none)
    success_rules: Mapping[str, tuple[SuccessRule, ...]] = field(default_factory=_no_success_rules)

    def backoff_limit(self, group: str) -> int:
        return self.backoff_limits.get(group, DEFAULT_JOB_BACKOFF_LIMIT)

    def rules(self, group: str) -> tuple[Mapping[str, Any], ...]:
        return self.pod_failure_rules.get(group, ())

    def index_limit(self, group: str) -> int | None:
        """The group's Jobs' backoffLimitPerIndex; None: their failures count per Job only."""
        return self.index_limits.get(group)

    def rule_actions(self, group: str) -> tuple[str, ...]:
        """The rule actions the Job controller acts on for the group's Jobs (FailIndex only with
        backoffLimitPerIndex; a rule with another action is skipped)."""
        return INDEX_RULE_ACTIONS if group in self.index_limits else JOB_RULE_ACTIONS
