"""Training progress reported from inside a job's pods: `status.trainerStatus` and its endpoint.

The wire format is Kubeflow Trainer's (`UpdateTrainJobStatusRequest`, what the Kubeflow SDK's
`update_trainjob_status` POSTs): `{"trainerStatus": {progressPercentage, estimatedRemainingSeconds,
metrics: [{name, value}], lastUpdatedTime}}`. The endpoint path and the token audience have
Trainer's shape with each kind's group, version and plural:

    /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status      (the path)
    <group>/<version>/namespaces/<ns>/<plural>/<name>/status            (the token audience)

A pod learns them from three environment variables and a projected volume mounted at
`/var/run/secrets/kubeflow/trainer/` (`token`, `ca.crt`) — the names the SDK reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kubetrain.api.dnsnames import DNS1123_LABEL, DNS1123_SUBDOMAIN
from kubetrain.api.errors import QUOTE, FieldError, invalid, not_supported

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
TOKEN_FILE = "token"
CA_FILE = "ca.crt"
VOLUME_NAME = "kubeflow-trainer-token"
TOKEN_EXPIRATION_SECONDS = 3600
CA_KEY = "ca.crt"
# The ConfigMap the endpoint's CA reaches a job's pods in: `<job>-trainer-status` for the
# `<kind>ReplicaSpecs` kinds; a TrainJob's is Trainer's own name, `<tj>-tls-config`.
CA_CONFIG_MAP_SUFFIX = "-trainer-status"
TRAINJOB_CA_CONFIG_MAP_SUFFIX = "-tls-config"

# Opting a job out of the injection; the progress deadline of jobs outside kubetrain.io
# (kubetrain.io jobs may use runPolicy.progressDeadlineSeconds).
ANNOTATION_REPORTING = "kubetrain.io/progress-reporting"
REPORTING_DISABLED = "disabled"
ANNOTATION_DEADLINE = "kubetrain.io/progress-deadline-seconds"

MAX_BODY_BYTES = 64 * 1024
MAX_METRICS = 256
MAX_METRIC_TEXT = 64


class _Model(BaseModel):  # kubetrain.api.common.KubeModel's config (common imports this module)
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Metric(_Model):
    name: str = Field(
        min_length=1,
        max_length=MAX_METRIC_TEXT,
        description="The metric's name, e.g. loss (1-64 characters).",
    )
    value: str = Field(
        min_length=1, max_length=MAX_METRIC_TEXT, description="Its latest value, as text (1-64 characters)."
    )


class TrainerStatus(_Model):
    """The latest progress a job's training code reported (Kubeflow Trainer's TrainerStatus)."""

    progress_percentage: int | None = Field(
        default=None, ge=0, le=100, description="How far training is, 0-100, as the code last reported."
    )
    estimated_remaining_seconds: int | None = Field(
        default=None, ge=0, description="Seconds the training code estimates it still needs."
    )
    metrics: list[Metric] | None = Field(
        default=None,
        max_length=MAX_METRICS,
        description="Training metrics the code last reported (at most 256), each a name and a value.",
    )
    last_updated_time: str | None = Field(
        None, description="When the report arrived (RFC 3339); the progress deadline counts from it."
    )


def status_path(group: str, version: str, plural: str, namespace: str, name: str) -> str:
    return f"/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status"


def audience(group: str, version: str, plural: str, namespace: str, name: str) -> str:
    """The token audience for one job's endpoint: its path without `/apis/` (Trainer's shape)."""
    return f"{group}/{version}/namespaces/{namespace}/{plural}/{name}/status"


@dataclass(frozen=True)
class Route:
    group: str
    version: str
    plural: str
    namespace: str
    name: str

    @property
    def audience(self) -> str:
        return audience(self.group, self.version, self.plural, self.namespace, self.name)


def parse_path(path: str) -> Route | None:
    """The job a request path names, or None when it is not an endpoint path."""
    parts = path.split("/")
    # "", "apis", group, version, "namespaces", ns, plural, name, "status"
    if len(parts) != 9 or parts[0] or parts[1] != "apis" or parts[4] != "namespaces" or parts[8] != "status":
        return None
    group, version, namespace, plural, name = parts[2], parts[3], parts[5], parts[6], parts[7]
    if not (
        DNS1123_SUBDOMAIN.match(group) and DNS1123_LABEL.match(version) and DNS1123_LABEL.match(namespace)
    ):
        return None
    if not (DNS1123_LABEL.match(plural) and DNS1123_SUBDOMAIN.match(name)):
        return None
    return Route(group, version, plural, namespace, name)


@dataclass(frozen=True)
class ReportError:
    code: int  # 400 (not JSON / not an object) or 422 (a field out of range)
    message: str


def _int_field(value: Any, name: str, low: int, high: int | None) -> int | ReportError:
    if isinstance(value, bool) or not isinstance(value, int):
        return ReportError(422, f"trainerStatus.{name}: must be an integer, not {json.dumps(value)}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        return ReportError(422, f"trainerStatus.{name}: must be {bound}, not {value}")
    return value


def parse_report(raw: bytes) -> dict[str, Any] | ReportError | None:
    """A report body → the `trainerStatus` to store (wire form), None for a report without one
    (answered 200, nothing written, as Trainer does), or the error naming the field."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ReportError(400, "the body must be a JSON object")
    if not isinstance(body, dict):
        return ReportError(400, "the body must be a JSON object")
    unknown = sorted(set(body) - {"trainerStatus"})
    if unknown:
        return ReportError(422, f"unknown field {QUOTE.encode(unknown[0])}: a report has only trainerStatus")
    status = body.get("trainerStatus")
    if status is None:
        return None
    if not isinstance(status, dict):
        return ReportError(422, "trainerStatus: must be an object")
    unknown = sorted(set(status) - set(FIELDS))
    if unknown:
        return ReportError(422, f"trainerStatus.{unknown[0]}: unknown field; valid: {', '.join(FIELDS)}")
    out: dict[str, Any] = {}
    for name, high in (("progressPercentage", 100), ("estimatedRemainingSeconds", 2**31 - 1)):
        if status.get(name) is not None:
            parsed = _int_field(status[name], name, 0, high)
            if isinstance(parsed, ReportError):
                return parsed
            out[name] = parsed
    metrics = status.get("metrics")
    if metrics is not None:
        checked = _metrics(metrics)
        if isinstance(checked, ReportError):
            return checked
        out["metrics"] = checked
    stamp = status.get("lastUpdatedTime")
    if stamp is not None and (not isinstance(stamp, str) or parse_time(stamp) is None):
        return ReportError(
            422, f"trainerStatus.lastUpdatedTime: must be an RFC 3339 time, not {QUOTE.encode(stamp)}"
        )
    return out


FIELDS = ("progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime")


def _metrics(metrics: Any) -> list[dict[str, str]] | ReportError:
    if not isinstance(metrics, list):
        return ReportError(422, "trainerStatus.metrics: must be a list of {name, value}")
    if len(metrics) > MAX_METRICS:
        return ReportError(422, f"trainerStatus.metrics: at most {MAX_METRICS} metrics, not {len(metrics)}")
    out = []
    seen: set[str] = set()
    for i, metric in enumerate(metrics):
        if not isinstance(metric, dict) or set(metric) - {"name", "value"}:
            return ReportError(422, f"trainerStatus.metrics[{i}]: must be {{name, value}}")
        for key in ("name", "value"):
            text = metric.get(key)
            if not isinstance(text, str) or not 1 <= len(text) <= MAX_METRIC_TEXT:
                return ReportError(
                    422,
                    f"trainerStatus.metrics[{i}].{key}: must be a string of 1 to {MAX_METRIC_TEXT} "
                    "characters",
                )
        if metric["name"] in seen:
            return ReportError(
                422, f"trainerStatus.metrics[{i}].name: duplicate metric {QUOTE.encode(metric['name'])}"
            )
        seen.add(metric["name"])
        out.append({"name": metric["name"], "value": metric["value"]})
    return out


def parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def annotation_errors(annotations: Mapping[str, Any]) -> list[FieldError]:
    """Problems of the progress annotations among a job's annotations (`labels.annotations_of`),
    for the validating webhook."""
    errors: list[FieldError] = []
    deadline = annotations.get(ANNOTATION_DEADLINE)
    if deadline is not None and (not str(deadline).isdigit() or int(str(deadline)) < 1):
        path = f"metadata.annotations[{ANNOTATION_DEADLINE}]"
        errors.append(
            invalid(path, f"must be a positive integer number of seconds, not {QUOTE.encode(deadline)}")
        )
    reporting = annotations.get(ANNOTATION_REPORTING)
    if reporting is not None and str(reporting) not in (REPORTING_DISABLED, "enabled"):
        path = f"metadata.annotations[{ANNOTATION_REPORTING}]"
        errors.append(not_supported(path, reporting, (REPORTING_DISABLED, "enabled")))
    return errors


def progress_deadline_seconds(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> int | None:
    """A job's progress deadline: `runPolicy.progressDeadlineSeconds`, else the
    `ANNOTATION_DEADLINE` annotation; None when none or not a positive integer (the webhook
    refuses those; a job stored without it is treated as declaring none)."""
    run_policy = spec.get("runPolicy")
    value = run_policy.get("progressDeadlineSeconds") if isinstance(run_policy, Mapping) else None
    return deadline_seconds(annotations.get(ANNOTATION_DEADLINE) if value is None else value)


def deadline_seconds(value: Any) -> int | None:
    """A progress deadline as written (a number, or the annotation's string): the positive
    integer it states, else None."""
    try:
        seconds = int(str(value)) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds > 0 else None
