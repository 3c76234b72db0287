"""What a cron records about its jobs: the references `status.active` holds, which jobs finished
and when, KubeDL's `status.history`, and the cron's `Valid` condition. Pure functions over the
cron's status dict; kubetrain.cron.decide calls them in its pass."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.groups import group_of
from kubetrain.api.metatime import parse_time
from kubetrain.cron.shape import CronShape

Obj = dict[str, Any]
VALID = "Valid"


@dataclass(frozen=True)
class JobRef:
    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str

    def reference(self) -> Obj:
        """The corev1.ObjectReference `status.active` holds."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
        }


def job_ref(job: Obj) -> JobRef:
    meta = job.get("metadata") or {}
    return JobRef(
        str(job.get("apiVersion") or ""),
        str(job.get("kind") or ""),
        str(meta.get("name") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("uid") or ""),
    )


def finished_condition(job: Obj) -> str | None:
    """ "Succeeded" or "Failed" when the job has that condition True, else None."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def completion(job: Obj) -> datetime | None:
    status = job.get("status") or {}
    done = parse_time(status.get("completionTime"))
    if done is None:
        for cond in status.get("conditions") or ():
            if cond.get("type") == "Succeeded" and cond.get("status") == "True":
                done = parse_time(cond.get("lastTransitionTime"))
    return done


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def start_key(job: Obj) -> tuple[datetime, str]:
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    start = parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))
    return (start or datetime.min.replace(tzinfo=UTC), str(meta.get("name") or ""))


def kubedl_history(status: Obj, shape: CronShape, jobs: list[Obj], now: datetime) -> None:
    """KubeDL's `status.history`: one record per job (its last condition, created, finished),
    oldest first, at most `historyLimit` of them."""
    records = {
        str((h.get("object") or {}).get("name")): dict(h)
        for h in status.get("history") or ()
        if isinstance(h, dict)
    }
    group = group_of(shape.template.get("apiVersion"))
    for job in jobs:
        ref, meta = job_ref(job), job.get("metadata") or {}
        conditions = (job.get("status") or {}).get("conditions") or []
        record = records.get(ref.name) or {
            "object": {"apiGroup": group, "kind": ref.kind, "name": ref.name},
            "created": meta.get("creationTimestamp"),
        }
        record["status"] = str(conditions[-1].get("type")) if conditions else ""
        if finished_condition(job) is not None and not record.get("finished"):
            record["finished"] = rfc3339(now)
        records[ref.name] = record
    history = sorted(
        records.values(), key=lambda h: (str(h.get("created") or ""), str(h["object"].get("name")))
    )
    limit = shape.history_limit
    if limit is not None and len(history) > limit:
        history = history[len(history) - limit :]
    set_field(status, "history", history or None)


def set_valid(status: Obj, problem: tuple[str, str] | None, now: datetime) -> None:
    reason, message = (
        problem if problem is not None else ("Valid", "schedule, time zone and template are valid")
    )
    value = "False" if problem is not None else "True"
    conditions = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == VALID), None)
    if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
        value,
        reason,
        message,
    ):
        return
    since = (
        current.get("lastTransitionTime") if current is not None and current.get("status") == value else None
    )
    cond = {"type": VALID, "status": value, "reason": reason, "message": message}
    cond["lastTransitionTime"] = since or rfc3339(now)
    status["conditions"] = [*(c for c in conditions if c.get("type") != VALID), cond]


def set_field(status: Obj, key: str, value: Any) -> None:
    if value is None:
        status.pop(key, None)
    else:
        status[key] = value
