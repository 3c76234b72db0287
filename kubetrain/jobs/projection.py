"""How a job's status shows what the planner decided: the `StatusProjection` a job shape carries
(`JobShape.status`) and the `GroupTally` per group it writes. The planner decides in its own
terms; a projection writes that in the job's API — Kubeflow's JobStatus, Trainer's
metav1.Conditions and jobsStatus (`kubetrain.operator.statusprojection` has both).

Pure: the protocol and its data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class GroupTally:
    """One group as the planner counted it, for the status projection to write: its units — pods,
    or jobs of `ReplicaGroup.job_size` pods when the shape counts jobs — by state, and its pod
    restarts (the per-pod model's)."""

    name: str
    replicas: int  # pods of the group
    active: int = 0
    pending: int = 0
    succeeded: int = 0
    failed: int = 0
    ready: int = 0
    suspended: int = 0
    restarts: int = 0
    prior_restarts: int = 0
    selector: str = ""  # the label selector of the group's pods


class StatusProjection(Protocol):
    """How the job's status shows what the planner decided (`operator/statusprojection.py`):
    the outcome, suspension and the times the deadline and the TTL count from, in the job's
    API. Set-methods change `status` in place; those for a change told in a Normal event return
    its (reason, message), None when nothing changed."""

    def finished(self, status: dict[str, Any]) -> str | None: ...  # SUCCEEDED | FAILED | None
    def job_title(self, kind: str, namespace: str, name: str) -> str:
        """How the job's messages name it (`PyTorchJob train`, `MPIJob ns/train`)."""
        ...

    def finished_at(self, status: dict[str, Any]) -> datetime | None: ...
    def run_began(self, status: dict[str, Any], job: Mapping[str, Any], now: datetime) -> datetime | None: ...
    def set_finished(
        self, status: dict[str, Any], outcome: str, reason: str, message: str, now: datetime, *, ref: str = ""
    ) -> None:
        """The job finished; `ref` names it as `namespace/name` where its API's messages do."""
        ...

    def set_suspended(self, status: dict[str, Any], title: str, now: datetime) -> tuple[str, str] | None: ...
    def set_resumed(self, status: dict[str, Any], title: str, now: datetime) -> tuple[str, str] | None: ...
    def set_created(self, status: dict[str, Any], title: str, now: datetime) -> None:
        """The job is seen and not finished."""
        ...

    def set_transient(
        self,
        status: dict[str, Any],
        ctype: str,
        true_as: tuple[str, str] | None,
        cleared_as: tuple[str, str],
        now: datetime,
    ) -> None:
        """A condition that holds for a while (e.g. PodsNotStarting): True with `true_as`
        (reason, message), or — None — no longer, written in the job's API (`cleared_as` where
        it keeps such a condition False)."""
        ...

    def observe_generation(self, status: dict[str, Any], generation: object) -> None: ...
    def changed(self, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Whether `new` is worth a status write over `old`."""
        ...

    def write_groups(self, status: dict[str, Any], groups: Sequence[GroupTally]) -> None:
        """The per-group status, in shape order."""
        ...

    def restarts(self, status: dict[str, Any]) -> int:
        """The restarts the status records (0 where the plan counts them: `Plan.restarts`)."""
        ...

    def succeeded_as(self, title: str) -> tuple[str, str]:
        """(reason, message) of the job's success, in its API's words."""
        ...

    def deadline_exceeded_as(self, status: dict[str, Any], title: str) -> tuple[str, str]:
        """(reason, message) of its failure at the active deadline, in its API's words."""
        ...
