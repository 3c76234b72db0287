"""A v1 job's finished indexes on the job page: per replica type, the indexes whose pod succeeded
in the current run (`status.completedIndexes`, the Job API's compressed form `"0,2-3"`), and the
finished indexes whose pod is gone — deleted after it succeeded, so no pod row shows it and the
operator does not make it again. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.indexes import format_indexes, is_decimal, parse_indexes
from kubetrain.api.labels import (
    KUBEDL_LABEL_REPLICA_INDEX,
    KUBEDL_LABEL_REPLICA_TYPE,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from kubetrain.dashboard.views.joblist import replica_specs

RANGE_DASH = "\u2013"  # an en dash between a run's first and last index


@dataclass(frozen=True)
class FinishedLine:
    replica_type: str  # as the spec names it: Worker
    indexes: tuple[int, ...]  # sorted
    replicas: int  # the type's `replicas` in the spec

    @property
    def text(self) -> str:
        """`Worker: finished indexes 0, 2-3 (3 of 4)`, the run's dash an en dash."""
        noun = "index" if len(self.indexes) == 1 else "indexes"
        return (
            f"{self.replica_type}: finished {noun} {ranges(self.indexes)} "
            f"({len(self.indexes)} of {self.replicas})"
        )


@dataclass(frozen=True)
class GoneIndex:
    replica_type: str
    index: int

    @property
    def label(self) -> str:
        return f"{self.replica_type} {self.index}"


@dataclass(frozen=True)
class Finished:
    lines: tuple[FinishedLine, ...]  # in the spec's order of replica types
    gone: tuple[GoneIndex, ...]  # finished indexes without a pod, at most the limit asked
    gone_more: int  # those left out


NONE = Finished((), (), 0)


def parse(text: str, size: int) -> tuple[int, ...]:
    """The indexes below `size` that `text` names, sorted, read as the operator reads them
    (`kubetrain.api.indexes.parse_indexes`)."""
    return tuple(sorted(parse_indexes(text, size)))


def ranges(indexes: Iterable[int]) -> str:
    """`0, 2-3`: sorted indexes, a run of them as `first-last` (joined by an en dash)."""
    return format_indexes(indexes, sep=", ", dash=RANGE_DASH)


def finished(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], limit: int) -> Finished:
    """The job's finished indexes per replica type and, of them, those no pod of `pods` holds (at
    most `limit`; the rest counted). A type the spec does not name is not shown, nor an index
    past its `replicas` (the operator drops them too)."""
    recorded = (job.get("status") or {}).get("completedIndexes")
    if not isinstance(recorded, Mapping) or not recorded:
        return NONE
    lines = []
    for rtype, rspec in replica_specs(job).items():
        text = recorded.get(rtype)
        replicas = rspec.get("replicas", 1)
        size = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
        indexes = parse(text, size) if isinstance(text, str) else ()
        if indexes:
            lines.append(FinishedLine(rtype, indexes, size))
    if not lines:
        return NONE
    held = {_slot(p) for p in pods}
    gone = [
        GoneIndex(line.replica_type, i)
        for line in lines
        for i in line.indexes
        if (line.replica_type.lower(), i) not in held
    ]
    room = max(0, limit)
    return Finished(tuple(lines), tuple(gone[:room]), max(0, len(gone) - room))


def _slot(pod: Mapping[str, Any]) -> tuple[str, int] | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    rtype = labels.get(LABEL_REPLICA_TYPE) or labels.get(KUBEDL_LABEL_REPLICA_TYPE)
    index = labels.get(LABEL_REPLICA_INDEX) or labels.get(KUBEDL_LABEL_REPLICA_INDEX)
    if not isinstance(rtype, str) or not isinstance(index, str) or not is_decimal(index):
        return None
    return rtype.lower(), int(index)
