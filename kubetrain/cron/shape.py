"""One view of a cron in either layout (TrainingCron, KubeDL's Cron), and its validation. Pure.

    shape = read_cron(obj)              # CronShape; CronUnreadable when spec is not even a mapping
    errors = validate_cron(obj)         # every FieldError at once (the webhook and the controller)

`validate_cron` checks what the operator needs to act: the schedule (`spec.schedule`, the
grammar of kubetrain.cron.schedule), the time zone, non-negative deadlines and limits, a name
short enough for `<cron>-<minutes>` job names, and the template — a job of a registered kind in a
job API group, without a name of its own, that passes the job rules (defaulted and validated
with the same functions the job webhooks use, so a cron never creates a job the webhook refuses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from kubetrain.api import cron as api
from kubetrain.api.dnsnames import MAX_LABEL_LENGTH
from kubetrain.api.errors import QUOTE, FieldError, forbidden, invalid, required
from kubetrain.api.groups import JOB_GROUPS, group_of
from kubetrain.api.metatime import parse_time
from kubetrain.cron.schedule import ScheduleError, parse_schedule, split_zone_prefix, zone
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.parse import pydantic_errors
from kubetrain.jobs.validation import validate_job

Obj = dict[str, Any]
# A job's name is `<cron>-<scheduled time in minutes since the epoch>` (batch/v1 CronJob's rule):
# eight digits until the year 2160.
NAME_SUFFIX_DIGITS = 8
MAX_CRON_NAME = MAX_LABEL_LENGTH - 1 - NAME_SUFFIX_DIGITS
# The name validation gives the template's job: as long as any job of this cron's will be.
_PLACEHOLDER_SUFFIX = "9" * NAME_SUFFIX_DIGITS
_JOB_BUDGET = re.compile(r"use at most (\d+) characters for this job")


class CronUnreadable(ValueError):
    """The object is no cron the operator can read (`errors` says why)."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


@dataclass(frozen=True)
class CronShape:
    """A cron's fields, whichever layout it came in (absent fields at their defaults)."""

    group: str  # kubetrain.io (TrainingCron) or apps.kubedl.io (KubeDL's Cron)
    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str
    created: datetime | None
    deleting: bool
    schedule: str
    time_zone: str | None
    starting_deadline_seconds: int | None
    concurrency_policy: str
    suspend: bool
    deadline: datetime | None  # KubeDL: nothing is scheduled after it
    successful_jobs_history_limit: int | None  # None: keep every finished job
    failed_jobs_history_limit: int | None
    history_limit: int | None  # KubeDL: the status.history records kept (None: every one)
    template: Obj  # {apiVersion, kind, metadata, spec} of the job to create
    template_path: str  # where the template's job sits in the cron, for messages
    status: Obj = field(default_factory=dict)

    @property
    def kubedl(self) -> bool:
        return self.group == api.KUBEDL_GROUP


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _job_template(template: Obj, body: Obj) -> Obj:
    """The job a cron makes, as one object: apiVersion and kind from its `template`, metadata and
    spec from `body` (the template itself, or KubeDL's `template.workload`)."""
    return {
        "apiVersion": template.get("apiVersion"),
        "kind": template.get("kind"),
        "metadata": body.get("metadata") or {},
        "spec": body.get("spec"),
    }


def read_cron(obj: Obj) -> CronShape:
    """The CronShape of a stored cron; only the shape is read here (validate_cron judges it)."""
    meta = _dict(obj.get("metadata"))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise CronUnreadable([required("spec", "a cron needs a spec with schedule and template")])
    group = group_of(obj.get("apiVersion")) or api.GROUP
    status = _dict(obj.get("status"))
    template_raw = _dict(spec.get("template"))
    if group == api.KUBEDL_GROUP:
        template = _job_template(template_raw, _dict(template_raw.get("workload")))
        template_path = "spec.template.workload"
        # KubeDL's only time zone: robfig/cron's `CRON_TZ=<zone> ` before the schedule.
        schedule, time_zone = split_zone_prefix(str(spec.get("schedule") or ""))
        history = _int(spec.get("historyLimit"))
        # KubeDL's historyLimit bounds the status.history records (cron_controller.go
        # refreshCronHistory); KubeDL deletes no finished workload, so neither does kubetrain.
        successful, failed = None, None
        starting_deadline = None
    else:
        history = None
        template = _job_template(template_raw, template_raw)
        template_path = "spec.template"
        successful = _int(spec.get("successfulJobsHistoryLimit"))
        failed = _int(spec.get("failedJobsHistoryLimit"))
        if "successfulJobsHistoryLimit" not in spec:
            successful = api.DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT
        if "failedJobsHistoryLimit" not in spec:
            failed = api.DEFAULT_FAILED_JOBS_HISTORY_LIMIT
        starting_deadline = _int(spec.get("startingDeadlineSeconds"))
        time_zone = spec.get("timeZone") if isinstance(spec.get("timeZone"), str) else None
        schedule = str(spec.get("schedule") or "")
    policy = spec.get("concurrencyPolicy")
    return CronShape(
        group=group,
        api_version=str(obj.get("apiVersion") or api.API_VERSION),
        kind=str(obj.get("kind") or api.KIND),
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        uid=str(meta.get("uid") or ""),
        created=parse_time(meta.get("creationTimestamp")),
        deleting=bool(meta.get("deletionTimestamp")),
        schedule=schedule,
        time_zone=time_zone,
        starting_deadline_seconds=starting_deadline,
        concurrency_policy=policy if policy in api.CONCURRENCY_POLICIES else api.DEFAULT_CONCURRENCY_POLICY,
        suspend=spec.get("suspend") is True,
        deadline=parse_time(spec.get("deadline")),
        successful_jobs_history_limit=successful,
        failed_jobs_history_limit=failed,
        history_limit=history,
        template=template,
        template_path=template_path,
        status=status,
    )


def validate_cron(obj: Any, *, groups: tuple[str, ...] = JOB_GROUPS) -> list[FieldError]:
    """Every problem of a cron (either layout), on create and on update. `groups`: the job API
    groups a template may name (every group kubetrain serves jobs in by default)."""
    if not isinstance(obj, dict):
        return [invalid("<root>", "must be a mapping (a Kubernetes object)")]
    group = group_of(obj.get("apiVersion"))
    model: type[BaseModel] = api.KubeDLCron if group == api.KUBEDL_GROUP else api.TrainingCron
    errors: list[FieldError] = []
    try:
        model.model_validate(obj, strict=True)
    except ValidationError as exc:
        errors.extend(pydantic_errors(exc, model))
    try:
        shape = read_cron(obj)
    except CronUnreadable as exc:
        return _unique([*errors, *exc.errors])
    spec = obj["spec"]
    errors.extend(_name_errors(shape))
    if isinstance(spec.get("schedule"), str):
        try:
            if shape.kubedl and shape.time_zone is not None:
                zone(shape.time_zone)
                if not shape.schedule:
                    raise ScheduleError(
                        "the schedule must follow the time zone: 'CRON_TZ=Asia/Shanghai 0 2 * * *'"
                    )
            parse_schedule(shape.schedule if shape.kubedl else spec["schedule"])
        except ScheduleError as exc:
            errors.append(invalid("spec.schedule", f"{QUOTE.encode(spec['schedule'])}: {exc}"))
    if "timeZone" in spec and not shape.kubedl:
        try:
            zone(spec["timeZone"])
        except ScheduleError as exc:
            errors.append(invalid("spec.timeZone", str(exc)))
    for name in (
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "historyLimit",
    ):
        value = _int(spec.get(name))
        if value is not None and value < 0:
            errors.append(invalid(f"spec.{name}", f"must be greater than or equal to 0, got {value}"))
    if shape.kubedl and spec.get("deadline") is not None and parse_time(spec.get("deadline")) is None:
        errors.append(invalid("spec.deadline", "must be an RFC 3339 time such as 2030-01-01T00:00:00Z"))
    errors.extend(template_errors(shape, groups))
    return _unique(errors)


def _name_errors(shape: CronShape) -> list[FieldError]:
    if len(shape.name) > MAX_CRON_NAME:
        return [
            invalid(
                "metadata.name",
                f"{QUOTE.encode(shape.name)} is too long: its jobs are named "
                f"<name>-<{NAME_SUFFIX_DIGITS}-digit scheduled minute>, "
                f"so a cron's name has at most {MAX_CRON_NAME} characters",
            )
        ]
    return []


def template_errors(shape: CronShape, groups: tuple[str, ...] = JOB_GROUPS) -> list[FieldError]:
    """The template's problems, at their paths in the cron (`spec.template.spec.…`)."""
    path = shape.template_path
    template = shape.template
    errors: list[FieldError] = []
    api_version, kind = template.get("apiVersion"), template.get("kind")
    type_path = "spec.template"  # both layouts keep the job's apiVersion/kind in spec.template
    if not kind:
        errors.append(required(f"{type_path}.kind", "the kind of job to create, e.g. PyTorchJob"))
    if not api_version:
        errors.append(required(f"{type_path}.apiVersion", "the job's apiVersion, e.g. kubetrain.io/v1"))
    meta = template.get("metadata")
    if not isinstance(meta, dict):
        errors.append(invalid(f"{path}.metadata", "must be an object (labels, annotations)"))
        meta = {}
    for key in ("name", "generateName"):
        if meta.get(key):
            errors.append(
                forbidden(
                    f"{path}.metadata.{key}",
                    f"a cron names its jobs <cron name>-<scheduled minute>; remove metadata.{key}",
                )
            )
    namespace = meta.get("namespace")
    if namespace and shape.namespace and namespace != shape.namespace:
        errors.append(
            invalid(
                f"{path}.metadata.namespace",
                f"jobs are created in the cron's namespace {QUOTE.encode(shape.namespace)}",
            )
        )
    if template.get("spec") is None:
        errors.append(required(f"{path}.spec", "the job's spec (its replica specs)"))
    if errors:
        return errors
    job = job_from_template(shape, _PLACEHOLDER_SUFFIX)
    defaulted = default_job(job).obj
    for error in validate_job(defaulted, groups=groups).errors:
        errors.append(_relocate(error, shape))
    return errors


def _relocate(error: FieldError, shape: CronShape) -> FieldError:
    """A job FieldError at the cron's path for the same field."""
    if error.path in ("apiVersion", "kind"):
        return FieldError(f"spec.template.{error.path}", error.kind, error.message)
    if error.path.startswith("metadata.name"):
        # "... use at most N characters for this job": the cron's budget is the suffix shorter
        budget = _JOB_BUDGET.search(error.message)
        message = error.message
        if budget is not None:
            cron_budget = max(int(budget.group(1)) - 1 - NAME_SUFFIX_DIGITS, 0)
            message = message[: budget.start()] + f"use at most {cron_budget} characters for this cron"
        return FieldError(
            "metadata.name",
            error.kind,
            f"the jobs of this cron are named {shape.name}-<{NAME_SUFFIX_DIGITS} digits>: {message}",
        )
    return FieldError(f"{shape.template_path}.{error.path}", error.kind, error.message)


def job_name(cron_name: str, scheduled: datetime) -> str:
    """`<cron>-<scheduled time in minutes since the epoch>` (batch/v1 CronJob's getJobName)."""
    return f"{cron_name}-{int(scheduled.timestamp()) // 60}"


def job_from_template(shape: CronShape, suffix: str) -> Obj:
    """The job the template describes, named `<cron>-<suffix>` in the cron's namespace (no
    labels or owner of the cron yet: kubetrain.cron.decide adds those)."""
    template = shape.template
    meta = dict(template.get("metadata") or {})
    meta.pop("generateName", None)
    meta["name"] = f"{shape.name}-{suffix}"
    meta["namespace"] = shape.namespace
    return {
        "apiVersion": template.get("apiVersion"),
        "kind": template.get("kind"),
        "metadata": meta,
        "spec": template.get("spec"),
    }


def _unique(errors: list[FieldError]) -> list[FieldError]:
    return list(dict.fromkeys(errors))
