"""Scheduled training: TrainingCron (kubetrain.io/v1) and KubeDL's Cron (apps.kubedl.io/v1alpha1).

A cron creates a training job of any kubetrain kind from its template on a cron schedule, with
batch/v1 CronJob's semantics (docs/behaviour.md, "Scheduled training"). TrainingCron has
CronJob's fields; the template holds the whole job but its name — `apiVersion`, `kind`,
`metadata` (labels, annotations) and `spec`::

    apiVersion: kubetrain.io/v1
    kind: TrainingCron
    metadata: {name: nightly}
    spec:
      schedule: "0 2 * * *"
      timeZone: Europe/Berlin
      concurrencyPolicy: Forbid
      startingDeadlineSeconds: 600
      template:
        apiVersion: kubetrain.io/v1
        kind: PyTorchJob
        spec: {pytorchReplicaSpecs: {...}}

KubeDL's Cron is accepted in its own layout (served only when the operator is asked to,
`--cron-groups apps.kubedl.io`): `schedule`, `concurrencyPolicy`, `suspend`, `deadline` (a time
after which nothing is scheduled), `historyLimit` and `template: {apiVersion, kind, workload:
{metadata, spec}}`; its status keeps `active`, `history` and `lastScheduleTime` as KubeDL's does.
Both are read into one `kubetrain.cron.shape.CronShape`, so the rules are one set.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetrain.api.common import ConditionStatus, KubeModel

GROUP = "kubetrain.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainingCron"
PLURAL = "trainingcrons"
SINGULAR = "trainingcron"
SHORT_NAMES: tuple[str, ...] = ("tcron",)

KUBEDL_GROUP = "apps.kubedl.io"
KUBEDL_VERSION = "v1alpha1"
KUBEDL_API_VERSION = f"{KUBEDL_GROUP}/{KUBEDL_VERSION}"
KUBEDL_KIND = "Cron"
KUBEDL_PLURAL = "crons"
KUBEDL_SINGULAR = "cron"

# The API groups a cron kind can be served in (`--cron-groups`), and each one's kind.
CRON_GROUPS: tuple[str, ...] = (GROUP, KUBEDL_GROUP)
CRON_KINDS = {GROUP: KIND, KUBEDL_GROUP: KUBEDL_KIND}

ConcurrencyPolicy = Literal["Allow", "Forbid", "Replace"]
CONCURRENCY_POLICIES: tuple[str, ...] = ("Allow", "Forbid", "Replace")
# batch/v1 CronJob's defaults (TrainingCron's CRD schema sets them)
DEFAULT_CONCURRENCY_POLICY: ConcurrencyPolicy = "Allow"
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT = 1


class JobTemplate(KubeModel):
    """The job a TrainingCron creates: a whole job of a kubetrain kind, without a name."""

    api_version: str | None = Field(
        None, description="The job's apiVersion, e.g. kubetrain.io/v1 (or kubeflow.org/v1 when served)."
    )
    kind: str | None = Field(None, description="The job's kind, e.g. PyTorchJob.")
    metadata: dict[str, Any] | None = Field(
        None,
        description="Labels and annotations for the job; its name is the cron's plus the scheduled time.",
    )
    spec: dict[str, Any] | None = Field(
        None,
        description="The job's spec, as in a job of that kind (`kubectl explain pytorchjob.spec`); "
        "checked when the cron is admitted.",
    )


class ObjectReference(KubeModel):
    """A corev1.ObjectReference (the jobs in `status.active`)."""

    api_version: str | None = Field(None, description="The job's apiVersion.")
    kind: str | None = Field(None, description="The job's kind.")
    name: str | None = Field(None, description="The job's name.")
    namespace: str | None = Field(None, description="The job's namespace.")
    uid: str | None = Field(None, description="The job's UID.")
    resource_version: str | None = Field(None, description="The job's resourceVersion when it was listed.")


class CronCondition(KubeModel):
    """`Valid`: whether the operator can act on the cron (schedule, time zone and template)."""

    type: str = Field(description="The condition's type: Valid.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str | None = Field(
        None, description="Why, e.g. UnparseableSchedule, UnknownTimeZone or InvalidTemplate."
    )
    message: str | None = Field(None, description="A human-readable account.")
    last_transition_time: str | None = Field(None, description="When the status last changed.")


SCHEDULE_DESCRIPTION = (
    "When jobs are created, in cron format: five fields (minute hour day-of-month month "
    "day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly, @every <duration>."
)
CONCURRENCY_DESCRIPTION = (
    "What to do when a job is due while an earlier one still runs: Allow (create it), Forbid "
    "(skip this time) or Replace (delete the running job, create the new one)."
)
SUSPEND_DESCRIPTION = "true: no new jobs are created (running ones go on)."
ACTIVE_DESCRIPTION = "References to the cron's jobs that have not finished."
LAST_SCHEDULE_DESCRIPTION = "The scheduled time of the latest job created."


class TrainingCronSpec(KubeModel):
    schedule: str = Field(description=SCHEDULE_DESCRIPTION)
    time_zone: str | None = Field(
        None, description="IANA time zone the schedule is read in, e.g. Europe/Berlin; unset: UTC."
    )
    starting_deadline_seconds: int | None = Field(
        None, description="Seconds after a scheduled time a late job may still start; later, it is skipped."
    )
    concurrency_policy: ConcurrencyPolicy | None = Field(
        None, description=CONCURRENCY_DESCRIPTION + " Defaults to Allow."
    )
    suspend: bool | None = Field(None, description=SUSPEND_DESCRIPTION + " Defaults to false.")
    successful_jobs_history_limit: int | None = Field(
        None, description="Succeeded jobs kept; older ones are deleted. Defaults to 3."
    )
    failed_jobs_history_limit: int | None = Field(
        None, description="Failed jobs kept; older ones are deleted. Defaults to 1."
    )
    template: JobTemplate = Field(
        description="The job to create: a whole job of any kubetrain kind but its name."
    )


class TrainingCronStatus(KubeModel):
    active: list[ObjectReference] | None = Field(None, description=ACTIVE_DESCRIPTION)
    last_schedule_time: str | None = Field(None, description=LAST_SCHEDULE_DESCRIPTION)
    last_successful_time: str | None = Field(
        None, description="When the latest of the cron's jobs that succeeded finished."
    )
    conditions: list[CronCondition] | None = Field(
        None, description="Valid: whether the schedule, time zone and template can be acted on."
    )


class TrainingCron(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingCronSpec = Field(description="The schedule and the job it creates.")
    status: TrainingCronStatus | None = Field(None, description="The cron's jobs and schedule, as observed.")


# --- KubeDL's Cron ------------------------------------------------------------------------------


class KubeDLCronTemplate(KubeModel):
    """KubeDL's CronTemplateSpec: the workload's TypeMeta inline, the workload (metadata + spec)."""

    api_version: str | None = Field(
        None, description="The workload's apiVersion, e.g. training.kubedl.io/v1alpha1."
    )
    kind: str | None = Field(None, description="The workload's kind, e.g. TFJob.")
    workload: dict[str, Any] | None = Field(
        None, description="The job to create: its metadata (labels, annotations) and spec."
    )


class KubeDLTypedReference(KubeModel):
    api_group: str | None = Field(None, description="The job's API group.")
    kind: str | None = Field(None, description="The job's kind.")
    name: str | None = Field(None, description="The job's name.")


class KubeDLCronHistory(KubeModel):
    object: KubeDLTypedReference = Field(description="The job this record is about.")
    status: str | None = Field(None, description="The job's last condition, e.g. Succeeded.")
    created: str | None = Field(None, description="When the job was created.")
    finished: str | None = Field(None, description="When the job finished.")


class KubeDLCronSpec(KubeModel):
    schedule: str = Field(
        description=SCHEDULE_DESCRIPTION + " A leading CRON_TZ=<zone> or TZ=<zone> sets the time zone."
    )
    concurrency_policy: ConcurrencyPolicy | None = Field(None, description=CONCURRENCY_DESCRIPTION)
    suspend: bool | None = Field(None, description=SUSPEND_DESCRIPTION)
    deadline: str | None = Field(None, description="A time (RFC 3339) after which no job is scheduled.")
    history_limit: int | None = Field(
        None, description="The most status.history records kept; no job is deleted for it. Unset: all."
    )
    template: KubeDLCronTemplate = Field(description="The job to create: apiVersion, kind and the workload.")


class KubeDLCronStatus(KubeModel):
    active: list[ObjectReference] | None = Field(None, description=ACTIVE_DESCRIPTION)
    history: list[KubeDLCronHistory] | None = Field(
        None, description="Records of the cron's jobs, latest created last, at most historyLimit."
    )
    last_schedule_time: str | None = Field(None, description=LAST_SCHEDULE_DESCRIPTION)
    conditions: list[CronCondition] | None = Field(
        None, description="Valid: whether the schedule and template can be acted on."
    )


class KubeDLCron(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: KubeDLCronSpec = Field(description="KubeDL's schedule and the job it creates.")
    status: KubeDLCronStatus | None = Field(None, description="The cron's jobs and history, as observed.")
