"""The job list: one row per job, filters, sorting, counts and server-side pagination. Pure.

A `JobRow` is computed once per job version (the watch layer keeps them, keyed by the job) so
the list page only filters, sorts and slices rows: 10,000 jobs cost one pass, not 10,000
re-derivations (docs/performance.md). A row's pod summary (`views/podsummary.py`) is kept the
same way, per pod event; the list shows it, sorts by it (`sort=pods`: the jobs with failing pods
first) and filters by it (`pods=not-working`) only in the namespaces where the user may list pods.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.dashboard.views import trainjob
from kubetrain.dashboard.views.kinds import JobKind
from kubetrain.dashboard.views.podsummary import NO_PODS, PodSummary
from kubetrain.dashboard.views.timeutil import parse_time

Obj = dict[str, Any]

# Display states, in the order the filter offers them.
STATES = (
    "Pending",
    "Created",
    "GangScheduling",
    "PodsNotStarting",
    "Running",
    "Restarting",
    "Suspended",
    "Succeeded",
    "Failed",
)
TERMINAL = ("Succeeded", "Failed")
SORT_KEYS = ("created", "name", "namespace", "kind", "state", "pods", "progress", "restarts")
# The pods filter: "" (every job) or the jobs with a pod not Running-and-ready nor Succeeded.
POD_FILTERS = ("not-working",)
PER_PAGE_CHOICES = (10, 25, 50, 100, 200, 500)
DEFAULT_PER_PAGE = 50
# The Replicas column's tooltip: its unit, which is not the same for every kind.
REPLICAS_TITLE = f"Pods of each replica type, active or succeeded / desired. {trainjob.REPLICAS_UNIT}"


def job_state(job: Mapping[str, Any]) -> str:
    """The state a user reads: a terminal condition wins, then Suspended, then the last true
    condition; `GangScheduling` while Running is False for that reason; `Pending` without any.
    A TrainJob's conditions say less (`views/trainjob.py`)."""
    if trainjob.is_trainjob(job):
        return trainjob.state(job)
    conditions = [c for c in ((job.get("status") or {}).get("conditions") or ()) if isinstance(c, dict)]
    true = [str(c.get("type")) for c in conditions if c.get("status") == "True"]
    for terminal in TERMINAL:
        if terminal in true:
            return terminal
    if "Suspended" in true:
        return "Suspended"
    for c in conditions:
        if c.get("type") == "Running" and c.get("status") == "False" and c.get("reason") == "GangScheduling":
            return "GangScheduling"
    return true[-1] if true else "Pending"


def replica_specs(job: Mapping[str, Any]) -> dict[str, Obj]:
    """`spec.<x>ReplicaSpecs` of any kind (tfReplicaSpecs, pytorchReplicaSpecs, mpiReplicaSpecs…)."""
    spec = job.get("spec") or {}
    for key, value in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(value, dict):
            return {str(k): v for k, v in value.items() if isinstance(v, dict)}
    return {}


def replica_summary(job: Mapping[str, Any]) -> str:
    """`Master 1/1 · Worker 2/3`: active (or succeeded, once finished) of desired, per type (a
    TrainJob's counts Jobs per step: `views/trainjob.py`)."""
    if trainjob.is_trainjob(job):
        return trainjob.replica_summary(job)
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    parts = []
    for rtype, rspec in replica_specs(job).items():
        desired = rspec.get("replicas", 1)
        st = statuses.get(rtype) or {}
        done = int(st.get("active") or 0) + int(st.get("succeeded") or 0)
        parts.append(f"{rtype} {done}/{desired}")
    return " · ".join(parts)


def restart_count(job: Mapping[str, Any]) -> int:
    status = job.get("status") or {}
    per_type = sum(
        int((rs or {}).get("restarts") or 0) for rs in (status.get("replicaStatuses") or {}).values()
    )
    return per_type + int(status.get("jobRestarts") or 0)


def progress_of(job: Mapping[str, Any]) -> float | None:
    """`status.trainerStatus.progressPercentage` (0-100) when the job reports it."""
    value = ((job.get("status") or {}).get("trainerStatus") or {}).get("progressPercentage")
    try:
        return None if value is None else max(0.0, min(100.0, float(value)))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class JobRow:
    kind: JobKind
    namespace: str
    name: str
    state: str
    created: float
    replicas: str
    restarts: int
    progress: float | None
    uid: str
    replicas_title: str = ""  # the Replicas cell's tooltip, where its unit is not pods
    pods: PodSummary = NO_PODS  # its pods now, from the pod informer (`watch.py`)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind.group, self.kind.plural, self.namespace, self.name)


def job_row(kind: JobKind, job: Mapping[str, Any]) -> JobRow:
    meta = job.get("metadata") or {}
    return JobRow(
        kind=kind,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        state=job_state(job),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        replicas=replica_summary(job),
        restarts=restart_count(job),
        progress=progress_of(job),
        uid=str(meta.get("uid") or ""),
        replicas_title=trainjob.replica_title(job) if trainjob.is_trainjob(job) else "",
    )


@dataclass(frozen=True)
class ListQuery:
    namespace: str = ""
    kind: str = ""  # a JobKind.resource, "" for all
    state: str = ""
    pods: str = ""  # "" or one of POD_FILTERS
    sort: str = "created"
    descending: bool = True
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    def params(self, **changes: Any) -> dict[str, str]:
        """The query string of this list with `changes` applied (defaults left out)."""
        values = {
            "namespace": self.namespace,
            "kind": self.kind,
            "state": self.state,
            "pods": self.pods,
            "sort": self.sort,
            "order": "desc" if self.descending else "asc",
            "page": str(self.page),
            "per_page": str(self.per_page),
        }
        for key, value in changes.items():
            values[key] = str(value)
        defaults = {"sort": "created", "order": "desc", "page": "1", "per_page": str(DEFAULT_PER_PAGE)}
        return {k: v for k, v in values.items() if v and defaults.get(k) != v}


def parse_query(params: Mapping[str, str], kinds: Sequence[JobKind]) -> tuple[ListQuery, list[str]]:
    """The list query of a request's parameters, and an error per invalid one (each naming the
    parameter and what is valid); an invalid parameter falls back to its default."""
    errors: list[str] = []
    namespace = params.get("namespace", "").strip()
    kind = params.get("kind", "").strip()
    if kind and kind not in {k.resource for k in kinds} | {k.plural for k in kinds}:
        errors.append(
            f"kind: {QUOTE.encode(kind)} is not served (valid: {', '.join(k.resource for k in kinds)})"
        )
        kind = ""
    elif kind and "." not in kind:
        kind = next(k.resource for k in kinds if k.plural == kind)
    state = params.get("state", "").strip()
    if state and state not in STATES:
        errors.append(f"state: {QUOTE.encode(state)} is not a job state (valid: {', '.join(STATES)})")
        state = ""
    pods = params.get("pods", "").strip()
    if pods and pods not in POD_FILTERS:
        errors.append(
            f"pods: {QUOTE.encode(pods)} is not a pod filter (valid: {', '.join(POD_FILTERS)}, or empty for "
            "all)"
        )
        pods = ""
    sort = params.get("sort", "created").strip() or "created"
    if sort not in SORT_KEYS:
        errors.append(f"sort: {QUOTE.encode(sort)} is not a column (valid: {', '.join(SORT_KEYS)})")
        sort = "created"
    order = params.get("order", "desc").strip() or "desc"
    if order not in ("asc", "desc"):
        errors.append(f"order: {QUOTE.encode(order)} must be asc or desc")
        order = "desc"
    page = _int(params.get("page", "1"), "page", 1, errors)
    if page < 1:
        errors.append(f"page: {page} must be 1 or more")
        page = 1
    per_page = _int(params.get("per_page", str(DEFAULT_PER_PAGE)), "per_page", DEFAULT_PER_PAGE, errors)
    if per_page not in PER_PAGE_CHOICES:
        errors.append(f"per_page: {per_page} is not offered (valid: {', '.join(map(str, PER_PAGE_CHOICES))})")
        per_page = DEFAULT_PER_PAGE
    query = ListQuery(namespace, kind, state, pods, sort, order == "desc", page, per_page)
    return query, errors


def _int(raw: str, name: str, default: int, errors: list[str]) -> int:
    try:
        return int(raw)
    except ValueError:
        errors.append(f"{name}: {QUOTE.encode(raw)} is not a whole number")
        return default


@dataclass
class ListPage:
    rows: list[JobRow]
    total: int  # rows matching every filter
    page: int
    pages: int
    state_counts: dict[str, int] = field(default_factory=dict)  # under the namespace and kind filters
    kind_counts: dict[str, int] = field(default_factory=dict)  # under the namespace and state filters
    namespaces: list[str] = field(default_factory=list)  # of every visible job
    # jobs with a pod not working, under the namespace, kind and state filters
    not_working: int = 0
    pod_namespaces: Collection[str] | None = None  # where the user may list pods (None: all)

    def shows_pods(self, row: JobRow) -> bool:
        return self.pod_namespaces is None or row.namespace in self.pod_namespaces


def _sort_key(sort: str, pod_namespaces: Collection[str] | None = None) -> Any:
    if sort == "pods":  # failing pods most (or, asc, least), then pods not working, then newest

        def pods_key(r: JobRow) -> tuple[int, int, float]:
            if pod_namespaces is not None and r.namespace not in pod_namespaces:
                return (0, 0, r.created)
            return (r.pods.failing, r.pods.not_working, r.created)

        return pods_key
    if sort == "name":
        return lambda r: (r.name, r.namespace)
    if sort == "namespace":
        return lambda r: (r.namespace, r.name)
    if sort == "kind":
        return lambda r: (r.kind.label, r.namespace, r.name)
    if sort == "state":
        return lambda r: (STATES.index(r.state) if r.state in STATES else len(STATES), r.created)
    if sort == "progress":
        return lambda r: (-1.0 if r.progress is None else r.progress, r.created)
    if sort == "restarts":
        return lambda r: (r.restarts, r.created)
    return lambda r: (r.created, r.namespace, r.name)


def build_page(
    rows: Iterable[JobRow], query: ListQuery, pod_namespaces: Collection[str] | None = None
) -> ListPage:
    """Filter `rows` (the jobs this user may see) by the query, count, sort and cut one page.
    Pod summaries count only in `pod_namespaces` (where the user may list pods; None: all)."""
    namespaces: set[str] = set()
    state_counts: Counter[str] = Counter()
    kind_counts: Counter[str] = Counter()
    not_working = 0
    selected: list[JobRow] = []
    for row in rows:
        namespaces.add(row.namespace)
        if query.namespace and row.namespace != query.namespace:
            continue
        kind_ok = not query.kind or row.kind.resource == query.kind
        state_ok = not query.state or row.state == query.state
        troubled = row.pods.not_working and (pod_namespaces is None or row.namespace in pod_namespaces)
        if query.pods and not troubled:
            continue
        if kind_ok and state_ok and troubled:
            not_working += 1
        if kind_ok:
            state_counts[row.state] += 1
        if state_ok:
            kind_counts[row.kind.resource] += 1
        if kind_ok and state_ok:
            selected.append(row)
    total = len(selected)
    pages = max(1, -(-total // query.per_page))
    page = min(query.page, pages)
    start = (page - 1) * query.per_page
    key = _sort_key(query.sort, pod_namespaces)
    if start + query.per_page < total // 4:  # an early page: a partial sort is enough
        pick = heapq.nlargest if query.descending else heapq.nsmallest
        ordered = pick(start + query.per_page, selected, key=key)
    else:
        ordered = sorted(selected, key=key, reverse=query.descending)
    return ListPage(
        rows=ordered[start : start + query.per_page],
        total=total,
        page=page,
        pages=pages,
        state_counts=dict(state_counts),
        kind_counts=dict(kind_counts),
        namespaces=sorted(namespaces),
        not_working=not_working,
        pod_namespaces=pod_namespaces,
    )
