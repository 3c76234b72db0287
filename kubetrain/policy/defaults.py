"""Platform defaults: fill fields the user left unset from the matching TrainingPolicies.

Order and precedence (docs/behaviour.md §2, §9): the user's value always wins; otherwise the first
matching policy in name order that defaults the field sets it; otherwise the built-in default
(§2) stays. Policy defaults are applied *after* the built-in defaults, so "left unset" is
judged on the object the user submitted (`user_job`), not on the built-in-defaulted one: a
policy `cleanPodPolicy: All` replaces the built-in `Running` only when the user wrote none.

Pure: the input is not mutated; applying the same policies again changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.policy import TrainingPolicy
from kubetrain.policy.matching import select_by_job_labels


@dataclass(frozen=True)
class PolicyDefaulted:
    obj: dict[str, Any]
    # One line per field set, e.g. `policy "team-a": spec.runPolicy.schedulingPolicy.queue = "a"`.
    applied: list[str] = field(default_factory=list)
    # Defaults the job's kind has no field for (a TrainJob's): `policy "p": defaults.runPolicy.backoffLimit`.
    skipped: list[str] = field(default_factory=list)


def _defaults_of(policy: TrainingPolicy) -> list[tuple[tuple[str, ...], Any]]:
    """(path under the job object, value) of every default the policy sets."""
    out: list[tuple[tuple[str, ...], Any]] = []
    defaults = policy.spec.defaults
    if defaults is None:
        return out
    if defaults.run_policy is not None:
        run_policy = defaults.run_policy.to_dict()
        scheduling = run_policy.pop("schedulingPolicy", {})
        for key, value in run_policy.items():
            out.append((("spec", "runPolicy", key), value))
        for key, value in scheduling.items():
            out.append((("spec", "runPolicy", "schedulingPolicy", key), value))
    for key, value in (defaults.labels or {}).items():
        out.append((("metadata", "labels", key), value))
    return out


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> bool:
    """Set a nested value, creating maps on the way. False if a non-map is in the way."""
    for part in path[:-1]:
        child = obj.get(part)
        if child is None:
            child = {}
            obj[part] = child
        if not isinstance(child, dict):
            return False
        obj = child
    obj[path[-1]] = copy.deepcopy(value)
    return True


def _display(path: tuple[str, ...]) -> str:
    if path[:2] == ("metadata", "labels"):
        return f"metadata.labels[{path[2]}]"
    return ".".join(path)


# Where a default goes in a job of another layout: (path, value) → the path there (None: it
# has no such field). The job kinds' own layout is the identity.
Placement = Callable[[tuple[str, ...], Any], "tuple[str, ...] | None"]


def apply_policy_defaults(
    job: dict[str, Any],
    policies: Iterable[TrainingPolicy],
    *,
    user_job: dict[str, Any] | None = None,
    place: Placement | None = None,
) -> PolicyDefaulted:
    """Apply the defaults of `policies` (already matched to the job) to `job`.

    `user_job` is the object as the user submitted it (before built-in defaulting); a field
    counts as set when it is present and not null there. Defaults to `job` itself. `place`
    maps each default to the job's field (a TrainJob's, `kubetrain.policy.trainjob`); one it
    maps to None is listed in `skipped`.
    """
    original = job if user_job is None else user_job
    out = copy.deepcopy(job)
    applied: list[str] = []
    skipped: list[str] = []
    taken: set[tuple[str, ...]] = set()
    for policy in sorted(select_by_job_labels(policies, job), key=lambda p: p.name):
        for default_path, value in _defaults_of(policy):
            path = default_path if place is None else place(default_path, value)
            if path is None:
                skipped.append(f'policy "{policy.name}": defaults.{_display(default_path[1:])}')
                continue
            if path in taken or _get(original, path) is not None:
                continue
            taken.add(path)
            if _get(out, path) == value:
                continue
            if _set(out, path, value):
                applied.append(f'policy "{policy.name}": {_display(path)} = {_json(value)}')
    return PolicyDefaulted(obj=out, applied=applied, skipped=skipped)


def _json(value: Any) -> str:
    return QUOTE.encode(value)
