"""The job as the planner sees it: parsed, defaulted, validated and laid out — once per spec
generation.

`prepare_job` is one pipeline whose stages each take the previous stage's output
(docs/architecture.md, "One form per stage"):

1. parse (`kubetrain.jobs.jobdraft.read_job`): the wire dict → a `JobDraft` — the framework (and
   the apiVersions its kind is created at, `served_versions`), the job in kubetrain's layout (a
   KubeDL job converted here, once), the parse stage's own errors, the job's annotations parsed
   (`JobAnnotations`, which the later stages take);
2. default (`kubetrain.jobs.defaulting.default_v1`, the function the mutating webhook uses, so a
   job stored without the webhook behaves the same; with the controller's `Framework.adjust`)
   → the defaulted job, its replica drafts, its warnings and adjustments, and the framework's
   gates read once from the defaulted spec (`Defaulted.gates`);
3. type (`kubetrain.jobs.parse.read_typed`): the defaulted job's draft (its kind and apiVersion
   checked, its framework settled by the parse stage) → its pydantic model, once, with the
   model's errors (`TypedJob`);
4. validate (`kubetrain.jobs.validation.validate_v1`, pod templates included) → field errors;
5. lay out (`kubetrain.jobs.v1shape.v1_shape`, from the defaulted draft's replica entries,
   the gates defaulting read and, for a `training.kubedl.io` job without gang scheduling,
   KubeDL's DAG, `kubedldag`) → the engine's `JobLayout` and the `JobShape`.

That work depends only on the spec and the operator's settings, so `JobCache` keeps the result
per (uid, generation, gang scheduling, service mode, replica limit, cluster domain): a reconcile
of an unchanged job does no deep copy, no defaulting and no schema validation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api import servicemode
from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.errors import QUOTE
from kubetrain.api.servicemode import HEADLESS
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout
from kubetrain.frameworks.mpilabels import written_as_mpi_operator
from kubetrain.frameworks.registry import known_kinds
from kubetrain.jobs import kubedldag
from kubetrain.jobs.defaulting import default_v1
from kubetrain.jobs.jobdraft import read_job
from kubetrain.jobs.parse import read_typed
from kubetrain.jobs.shape import JobShape, RunPolicy
from kubetrain.jobs.v1shape import v1_shape
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS, validate_v1
from kubetrain.operator.statusprojection import KUBEFLOW, MPI_OPERATOR


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
    cluster_domain: ClusterDomain = UNSET,
) -> PreparedJob:
    """Default, validate and lay out one job (no caching; see `JobCache`). A job over
    `max_replicas` in total is invalid like any other spec error. `service_mode` is the
    operator's default; the job's `kubetrain.io/service-mode` annotation overrides it.
    `cluster_domain` is the operator's (the DNS names that carry one)."""
    draft = read_job(obj)  # 1. parse
    framework = draft.framework
    if framework is None:
        valid = ", ".join(map(QUOTE.encode, known_kinds()))
        return PreparedJob(
            None, None, [f"kind: Unsupported value: {QUOTE.encode(draft.kind)}: must be one of {valid}"]
        )
    defaulted = default_v1(draft, gang_scheduling=gang_scheduling, adjust=True)  # 2. default
    assert defaulted.draft is not None  # default_v1 reads what it defaults
    typed = read_typed(defaulted.draft)  # 3. type
    result = validate_v1(defaulted.draft, typed, max_replicas=max_replicas)  # 4. validate
    errors = [str(e) for e in [*draft.errors, *result.errors]]
    warnings = [*defaulted.warnings, *result.warnings]
    per_pod = draft.runs_service_mode(service_mode) == servicemode.PER_POD
    started = (  # KubeDL's DAG: which replica types wait for which to have started
        kubedldag.dependencies(
            framework, {r.type for r in defaulted.draft.replicas or ()}, gang_scheduling=gang_scheduling
        )
        if draft.converted
        else {}
    )
    produced = v1_shape(
        defaulted.draft,
        framework,
        # mpi-operator's JobStatus for an MPIJob written as mpi-operator's (frameworks/mpilabels.py)
        status=MPI_OPERATOR
        if written_as_mpi_operator(draft.kind, draft.group, draft.annotations.created_api_version)
        else KUBEFLOW,
        per_pod_services=per_pod,
        annotations=draft.annotations,
        gates=defaulted.gates,
        started=started,
        cluster_domain=cluster_domain,
    )  # 5. lay out
    errors = errors or produced.errors
    shape = produced.shape
    if errors or shape is None:
        return PreparedJob(
            framework, None, errors, warnings, defaulted.obj, defaulted.adjustments, None, produced.run_policy
        )
    return PreparedJob(
        framework, shape.layout, [], warnings, defaulted.obj, defaulted.adjustments, shape, shape.run_policy
    )


_Key = tuple[str, int, bool, str, int, ClusterDomain]


class JobCache:
    """Prepared jobs by (uid, generation, gang scheduling, service mode, replica limit, cluster
    domain), least recently used dropped first.

    `metadata.generation` changes with every spec change of a CRD with the status subresource,
    so a cached entry never goes stale. Objects without uid or generation (e.g. `render` input)
    are prepared every time.
    """

    def __init__(self, max_entries: int = 8192) -> None:
        self._entries: OrderedDict[_Key, PreparedJob] = OrderedDict()
        self._by_uid: dict[str, list[_Key]] = {}  # uid -> its entries' keys, for `forget`
        self._max = max_entries

    def get(
        self,
        obj: Mapping[str, Any],
        *,
        gang_scheduling: bool = False,
        max_replicas: int = DEFAULT_MAX_REPLICAS,
        service_mode: str = HEADLESS,
        cluster_domain: ClusterDomain = UNSET,
    ) -> PreparedJob:
        meta = obj.get("metadata") or {}
        uid, generation = meta.get("uid"), meta.get("generation")

        def prepare() -> PreparedJob:
            return prepare_job(
                obj,
                gang_scheduling=gang_scheduling,
                max_replicas=max_replicas,
                service_mode=service_mode,
                cluster_domain=cluster_domain,
            )

        if not isinstance(uid, str) or not uid or not isinstance(generation, int):
            return prepare()
        # The service mode is part of the key: an annotation change does not bump generation.
        # So is every operator setting the layout reads: the cache may be shared by planners
        # configured differently (tests, `kubetrain dev` restarted in one process).
        mode = servicemode.service_mode(obj, service_mode)
        key = (uid, generation, gang_scheduling, f"{obj.get('kind')}/{mode}", max_replicas, cluster_domain)
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        prepared = prepare()
        self._entries[key] = prepared
        self._by_uid.setdefault(uid, []).append(key)
        if len(self._entries) > self._max:
            evicted, _ = self._entries.popitem(last=False)
            keys = self._by_uid[evicted[0]]
            keys.remove(evicted)
            if not keys:
                del self._by_uid[evicted[0]]
        return prepared

    def forget(self, uid: str) -> None:
        """Drop every entry of a job: the controller calls it when it sees the job deleted, so
        a deleted job's prepared form (several KB) is not kept until the LRU bound pushes it out."""
        for key in self._by_uid.pop(uid, ()):
            del self._entries[key]

    def uids(self) -> set[str]:
        """The jobs (by uid) with an entry."""
        return set(self._by_uid)

    def __len__(self) -> int:
        return len(self._entries)


DEFAULT_CACHE = JobCache()
