"""The job as the planner sees it: defaulted, validated and laid out — once per spec generation.

`prepare_job` applies `kubetrain.jobs.defaulting.default_job` in memory (the same function the
mutating webhook uses, so a job stored without the webhook behaves the same), validates the
result with `kubetrain.jobs.validation.validate_job` (pod templates included) and builds the
engine's `JobLayout` and the job's `JobShape` (kubetrain.jobs.shape). That work depends only on
the spec, so `JobCache` keeps the result per (uid, generation, gang scheduling, service mode): a
reconcile of an unchanged job does no deep copy, no defaulting and no schema validation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain.api import servicemode
from kubetrain.api.servicemode import HEADLESS
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout
from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.kubedllayout import layout_errors, to_v1
from kubetrain.jobs.shape import JobShape, RunPolicy
from kubetrain.jobs.v1shape import v1_shape
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS, validate_job


@dataclass(frozen=True)
class PreparedJob:
    framework: Framework | None  # None: a kind kubetrain does not know
    layout: JobLayout | None  # None when the job is invalid
    errors: list[str] = field(default_factory=list)  # "path: Kind: message" per problem
    warnings: list[str] = field(default_factory=list)
    defaulted: Mapping[str, Any] = field(default_factory=dict)  # the defaulted job (no status)
    # What the controller adjusted to run the job (`Framework.adjust`: elastic Workers clamped).
    adjustments: list[str] = field(default_factory=list)
    # The job as the planner reads it (kubetrain.jobs.shape); None when the job is invalid.
    shape: JobShape | None = None
    # Its run policy — also of an invalid job, whose clean-up and TTL still apply.
    run_policy: RunPolicy = field(default_factory=RunPolicy)

    @property
    def valid(self) -> bool:
        return self.shape is not None and not self.errors


def prepare_job(
    obj: Mapping[str, Any],
    *,
    gang_scheduling: bool = False,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    service_mode: str = HEADLESS,
) -> PreparedJob:
    """Default, validate and lay out one job (no caching; see `JobCache`). A job over
    `max_replicas` in total is invalid like any other spec error. `service_mode` is the
    operator's default; the job's `kubetrain.io/service-mode` annotation overrides it."""
    kind = obj.get("kind")
    framework = get_framework(kind) if isinstance(kind, str) else None
    if framework is None:
        return PreparedJob(None, None, [f"kind: Unsupported value: {kind!r}"])
    bare = {k: v for k, v in obj.items() if k != "status"}
    defaulted = default_job(bare, gang_scheduling=gang_scheduling)
    # A training.kubedl.io job is run from kubetrain's layout of it (jobs/kubedllayout.py).
    defaulted = replace(defaulted, obj=to_v1(defaulted.obj))
    adjustments = framework.adjust(defaulted.obj)
    result = validate_job(defaulted.obj, max_replicas=max_replicas)
    errors = [str(e) for e in [*layout_errors(bare), *result.errors]]
    warnings = [*defaulted.warnings, *result.warnings]
    per_pod = servicemode.service_mode(defaulted.obj, service_mode) == servicemode.PER_POD
    produced = v1_shape(defaulted.obj, framework, per_pod_services=per_pod)
    errors = errors or produced.errors
    shape = produced.shape
    if errors or shape is None:
        return PreparedJob(
            framework, None, errors, warnings, defaulted.obj, adjustments, None, produced.run_policy
        )
    return PreparedJob(
        framework, shape.layout, [], warnings, defaulted.obj, adjustments, shape, shape.run_policy
    )


class JobCache:
    """Prepared jobs by (uid, generation, gang scheduling, service mode), least recently used dropped first.

    `metadata.generation` changes with every spec change of a CRD with the status subresource,
    so a cached entry never goes stale. Objects without uid or generation (e.g. `render` input)
    are prepared every time.
    """

    def __init__(self, max_entries: int = 8192) -> None:
        self._entries: OrderedDict[tuple[str, int, bool, str, int], PreparedJob] = OrderedDict()
        self._max = max_entries

    def get(
        self,
        obj: Mapping[str, Any],
        *,
        gang_scheduling: bool = False,
        max_replicas: int = DEFAULT_MAX_REPLICAS,
        service_mode: str = HEADLESS,
    ) -> PreparedJob:
        meta = obj.get("metadata") or {}
        uid, generation = meta.get("uid"), meta.get("generation")
        if not isinstance(uid, str) or not uid or not isinstance(generation, int):
            return prepare_job(
                obj, gang_scheduling=gang_scheduling, max_replicas=max_replicas, service_mode=service_mode
            )
        # The service mode is part of the key: an annotation change does not bump generation.
        mode = servicemode.service_mode(obj, service_mode)
        key = (uid, generation, gang_scheduling, f"{obj.get('kind')}/{mode}", max_replicas)
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        prepared = prepare_job(
            obj, gang_scheduling=gang_scheduling, max_replicas=max_replicas, service_mode=service_mode
        )
        self._entries[key] = prepared
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return prepared

    def forget(self, uid: str) -> None:
        """Drop every entry of a job (call when the job is deleted)."""
        for key in [k for k in self._entries if k[0] == uid]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)


DEFAULT_CACHE = JobCache()
