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

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None


class ObjectReference(KubeModel):
    """A corev1.ObjectReference (the jobs in `status.active`)."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None


class CronCondition(KubeModel):
    """`Valid`: whether the operator can act on the cron (schedule, time zone and template)."""

    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class TrainingCronSpec(KubeModel):
    schedule: str
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: ConcurrencyPolicy | None = None
    suspend: bool | None = None
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None
    template: JobTemplate


class TrainingCronStatus(KubeModel):
    active: list[ObjectReference] | None = None
    last_schedule_time: str | None = None
    last_successful_time: str | None = None
    conditions: list[CronCondition] | None = None


class TrainingCron(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: TrainingCronSpec
    status: TrainingCronStatus | None = None


# --- KubeDL's Cron ------------------------------------------------------------------------------


class KubeDLCronTemplate(KubeModel):
    """KubeDL's CronTemplateSpec: the workload's TypeMeta inline, the workload (metadata + spec)."""

    api_version: str | None = None
    kind: str | None = None
    workload: dict[str, Any] | None = None


class KubeDLTypedReference(KubeModel):
    api_group: str | None = None
    kind: str | None = None
    name: str | None = None


class KubeDLCronHistory(KubeModel):
    object: KubeDLTypedReference
    status: str | None = None
    created: str | None = None
    finished: str | None = None


class KubeDLCronSpec(KubeModel):
    schedule: str
    concurrency_policy: ConcurrencyPolicy | None = None
    suspend: bool | None = None
    deadline: str | None = None
    history_limit: int | None = None
    template: KubeDLCronTemplate


class KubeDLCronStatus(KubeModel):
    active: list[ObjectReference] | None = None
    history: list[KubeDLCronHistory] | None = None
    last_schedule_time: str | None = None
    conditions: list[CronCondition] | None = None


class KubeDLCron(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: KubeDLCronSpec
    status: KubeDLCronStatus | None = None
