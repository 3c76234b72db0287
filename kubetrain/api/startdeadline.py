"""The start deadline a job may declare: how long a scheduled pod of it may keep waiting to start
its containers for a reason that does not pass by itself (a wrong image, a missing ConfigMap or
Secret, a container runtime error) before the job fails (kubetrain.operator.podstart).

Declared by the annotation `kubetrain.io/start-deadline-seconds` on a job of any kind and group
(Kubeflow's and Trainer's schemas stay theirs), a positive integer number of seconds. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid

ANNOTATION = "kubetrain.io/start-deadline-seconds"


def start_deadline_seconds(annotations: Mapping[str, Any] | None) -> int | None:
    """The deadline a job's annotations declare; None when absent or not a positive integer (the
    webhook refuses those; a job stored without it is treated as declaring none)."""
    value = (annotations or {}).get(ANNOTATION)
    text = str(value) if value is not None else ""
    if not (text.isascii() and text.isdigit()):
        return None
    seconds = int(text)
    return seconds if seconds > 0 else None


def annotation_errors(annotations: Mapping[str, Any]) -> list[FieldError]:
    """The annotation's problem among a job's annotations (`labels.annotations_of`), if any (for
    the validating webhook, every kind)."""
    value = annotations.get(ANNOTATION)
    if value is None or start_deadline_seconds(annotations) is not None:
        return []
    path = f"metadata.annotations[{ANNOTATION}]"
    return [invalid(path, f"must be a positive integer number of seconds, not {QUOTE.encode(value)}")]
