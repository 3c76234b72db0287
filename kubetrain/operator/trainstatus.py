"""A TrainJob's conditions as Trainer writes them: metav1.Conditions (type, status, reason,
message, lastTransitionTime — changed only with the status). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubetrain.operator.status import format_time

Obj = dict[str, Any]


def condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == ctype:
            return cond
    return None


def is_true(status: Mapping[str, Any], ctype: str) -> bool:
    cond = condition(status, ctype)
    return cond is not None and cond.get("status") == "True"


def set_condition(status: Obj, ctype: str, value: bool, reason: str, message: str, now: datetime) -> None:
    """A metav1.Condition: lastTransitionTime changes only with the status."""
    conditions = [x for x in status.get("conditions") or [] if isinstance(x, dict)]
    new_status = "True" if value else "False"
    for i, cond in enumerate(conditions):
        if cond.get("type") == ctype:
            moved = cond.get("status") != new_status
            conditions[i] = {
                "type": ctype,
                "status": new_status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": format_time(now) if moved else cond.get("lastTransitionTime"),
            }
            status["conditions"] = conditions
            return
    conditions.append(
        {
            "type": ctype,
            "status": new_status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(now),
        }
    )
    status["conditions"] = conditions
