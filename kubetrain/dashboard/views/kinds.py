"""The job resources the dashboard lists: (group, version, plural, kind), registered, not hard-coded.

Every registered framework in each served API group is one `JobKind` (`served_kinds`);
`register` adds another resource (e.g. Trainer v2 TrainJobs, trainer.kubeflow.org/v1alpha1
trainjobs) so it appears in the list, the filters and the informers without touching the views.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from kubetrain.api.groups import JOB_GROUPS, TRAINER_GROUP
from kubetrain.frameworks.registry import FRAMEWORKS, group_serves, job_version


@dataclass(frozen=True, order=True)
class JobKind:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @cached_property  # read for every row of every list page
    def resource(self) -> str:
        """`tfjobs.kubeflow.org`: the plural qualified by its group, as kubectl spells it."""
        return f"{self.plural}.{self.group}"

    @cached_property
    def label(self) -> str:
        """What the list shows: `TFJob`, or `TFJob (kubeflow.org)` outside kubetrain.io."""
        return self.kind if self.group == "kubetrain.io" else f"{self.kind} ({self.group})"


_EXTRA: list[JobKind] = []


def register(kind: JobKind) -> None:
    """Serve one more job resource in every dashboard started after this call."""
    if kind not in _EXTRA:
        _EXTRA.append(kind)


TRAINJOB = JobKind(TRAINER_GROUP, "v1alpha1", "trainjobs", "TrainJob")


def served_kinds(groups: Iterable[str]) -> list[JobKind]:
    """Every registered framework's kind in each job group of `groups` (kubetrain.io,
    kubeflow.org), Trainer v2's TrainJob with trainer.kubeflow.org, then the registered extras."""
    groups = list(groups)
    kinds = [
        JobKind(g, job_version(kind, g), fw.plural, kind)
        for g in groups
        if g in JOB_GROUPS
        for kind, fw in FRAMEWORKS.items()
        if group_serves(g, kind)
    ]
    if TRAINER_GROUP in groups:
        kinds.append(TRAINJOB)
    return kinds + [k for k in _EXTRA if k not in kinds]


def resolve(kinds: Iterable[JobKind], resource: str) -> JobKind | None:
    """The kind a URL segment names: `tfjobs.kubeflow.org` exactly, or a bare plural `tfjobs`
    (the first served group that has it, kubetrain.io before kubeflow.org)."""
    plural, _, group = resource.partition(".")
    for k in kinds:
        if k.plural == plural and (not group or k.group == group):
            return k
    return None


def url_segment(kinds: Iterable[JobKind], kind: JobKind) -> str:
    """The shortest segment that `resolve` maps back to `kind`."""
    return kind.plural if resolve(kinds, kind.plural) == kind else kind.resource
