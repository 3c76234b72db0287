"""The shared in-memory cache the informers fill and the controller reads (zero API calls).

    cache = Cache()
    pods = cache.store(PODS)                 # one Store per resource, created on demand
    pods.get("ns", "name")                   # -> dict | None
    pods.list("ns")                          # every pod of a namespace (None: all namespaces)
    pods.for_job("ns", "my-job")             # children labelled kubetrain.io/job-name=my-job
    pods.for_job("ns", "my-job", kind="TFJob")   # … and kubetrain.io/job-kind=TFJob

Objects are stored as the API server sent them (no copies), less what an informer's transform
drops (`slim_pod`): treat them as read-only, and copy before mutating one to write it back.
Keys are "namespace/name" (just "name" for cluster-scoped objects): `object_key(obj)` / `split_key(key)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubetrain.api.labels import LABEL_JOB_KIND, LABEL_JOB_NAME
from kubetrain.kube.resources import ResourceRef

Obj = dict[str, Any]
Objs = list[Obj]  # (module-level alias: `list` is also a method name below)

JOB_NAME_LABEL = LABEL_JOB_NAME
JOB_KIND_LABEL = LABEL_JOB_KIND


# What the operator reads of a pod's spec (nodeSelector: an exclusively placed follower's
# domain); the rest (containers, volumes, tolerations, …) is most of a pod's size and is dropped
# from the cache.
POD_SPEC_KEPT = ("nodeName", "schedulerName", "restartPolicy", "priorityClassName", "nodeSelector")


def slim_pod(pod: Obj) -> Obj:
    """A pod as the operator caches it (an informer transform, in place): metadata (without
    managedFields) and status whole, of the spec only `POD_SPEC_KEPT`. The planner reads labels,
    annotations, ownerReferences, deletionTimestamp and the status (phase, reason, conditions,
    containerStatuses); the pods it creates come from the job's template, never from a cached pod."""
    spec = pod.get("spec")
    if isinstance(spec, dict):
        pod["spec"] = {k: spec[k] for k in POD_SPEC_KEPT if k in spec}
    return pod


def slim_node(node: Obj) -> Obj:
    """A Node as the operator caches it (an informer transform): its name, resourceVersion and
    labels — all it reads (a leader's topology domain); spec and status are dropped."""
    meta = node.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "resourceVersion", "labels") if k in meta}
    return {"apiVersion": node.get("apiVersion", "v1"), "kind": node.get("kind", "Node"), "metadata": kept}


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def split_key(key: str) -> tuple[str | None, str]:
    """ "ns/name" -> ("ns", "name"); "name" -> (None, "name")."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, namespace)


def _ns_name(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _labels(obj: Obj) -> dict[str, Any]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


class Store:
    """Objects of one resource by namespace and name, indexed by one label (the job name)."""

    def __init__(self, ref: ResourceRef, *, index_label: str = JOB_NAME_LABEL) -> None:
        self.ref = ref
        self.index_label = index_label
        self._by_ns: dict[str, dict[str, Obj]] = {}
        self._by_label: dict[tuple[str, str], dict[str, Obj]] = {}

    # --- reads ----------------------------------------------------------------------------------
    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self._by_ns.get(namespace or "", {}).get(name)

    def get_by_key(self, key: str) -> Obj | None:
        return self.get(*split_key(key))

    def list(self, namespace: str | None = None) -> Objs:
        if namespace is None:
            return [obj for objs in self._by_ns.values() for obj in objs.values()]
        return list(self._by_ns.get(namespace, {}).values())

    def by_label(self, namespace: str | None, value: str) -> Objs:
        """Objects in `namespace` whose index label (kubetrain.io/job-name) equals `value`."""
        return list(self._by_label.get((namespace or "", value), {}).values())

    def for_job(self, namespace: str, job_name: str, kind: str | None = None) -> Objs:
        """Children of a job by label (and `kubetrain.io/job-kind` when `kind` is given)."""
        children = self.by_label(namespace, job_name)
        if kind is None:
            return children
        return [
            c for c in children if ((c.get("metadata") or {}).get("labels") or {}).get(JOB_KIND_LABEL) == kind
        ]

    def keys(self) -> Iterator[str]:
        for namespace, objs in self._by_ns.items():
            for name in objs:
                yield f"{namespace}/{name}" if namespace else name

    def __len__(self) -> int:
        return sum(len(objs) for objs in self._by_ns.values())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get_by_key(key) is not None

    # --- writes (informers only) ----------------------------------------------------------------
    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace `obj`; return the previous version."""
        namespace, name = _ns_name(obj)
        objs = self._by_ns.setdefault(namespace, {})
        old = objs.get(name)
        objs[name] = obj
        old_value = self._label(old) if old is not None else None
        new_value = self._label(obj)
        if old_value is not None and old_value != new_value:
            self._unindex(namespace, name, old_value)
        if new_value is not None:
            self._by_label.setdefault((namespace, new_value), {})[name] = obj
        return old

    def remove(self, namespace: str | None, name: str) -> Obj | None:
        """Remove and return the object, if present."""
        ns = namespace or ""
        objs = self._by_ns.get(ns)
        if objs is None or name not in objs:
            return None
        old = objs.pop(name)
        if not objs:
            del self._by_ns[ns]
        value = self._label(old)
        if value is not None:
            self._unindex(ns, name, value)
        return old

    def _label(self, obj: Obj) -> str | None:
        labels = (obj.get("metadata") or {}).get("labels")
        if not labels:
            return None
        value = labels.get(self.index_label)
        return value if isinstance(value, str) else None

    def _unindex(self, namespace: str, name: str, value: str) -> None:
        bucket = self._by_label.get((namespace, value))
        if bucket is not None:
            bucket.pop(name, None)
            if not bucket:
                del self._by_label[(namespace, value)]


class Cache:
    """One Store per resource, shared by every informer and reader of this process."""

    def __init__(self) -> None:
        self._stores: dict[ResourceRef, Store] = {}

    def store(self, ref: ResourceRef) -> Store:
        store = self._stores.get(ref)
        if store is None:
            store = self._stores[ref] = Store(ref)
        return store

    def get(self, ref: ResourceRef, namespace: str | None, name: str) -> Obj | None:
        return self.store(ref).get(namespace, name)

    def list(self, ref: ResourceRef, namespace: str | None = None) -> Objs:
        return self.store(ref).list(namespace)

    def for_job(self, ref: ResourceRef, namespace: str, job_name: str, kind: str | None = None) -> Objs:
        return self.store(ref).for_job(namespace, job_name, kind)

    def __contains__(self, ref: object) -> bool:
        return ref in self._stores
