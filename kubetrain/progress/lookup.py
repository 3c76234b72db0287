"""Where the status endpoint reads jobs and pods: the controller's informer cache when this
process leads (no API request per report), else GETs through its own API client.

`Routes` is the table of job resources the endpoint serves, by (group, version, plural): the
served groups' job kinds (`for_groups`), TrainJob (trainer.kubeflow.org/v1alpha1 trainjobs)
when the trainer group is served; another kind plugs in with `register(ref)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kubetrain.api.groups import TRAINER_GROUP
from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import PODS, TRAINJOBS, ResourceRef, job_resources_in

Obj = dict[str, Any]


class Routes:
    def __init__(self, refs: Iterable[ResourceRef] = ()) -> None:
        self._refs: dict[tuple[str, str, str], ResourceRef] = {}
        for ref in refs:
            self.register(ref)

    @classmethod
    def for_groups(cls, groups: Iterable[str]) -> Routes:
        groups = list(groups)
        refs = list(job_resources_in(groups).values())
        if TRAINER_GROUP in groups:
            refs.append(TRAINJOBS)
        return cls(refs)

    def register(self, ref: ResourceRef) -> None:
        self._refs[(ref.group, ref.version, ref.plural)] = ref

    def get(self, group: str, version: str, plural: str) -> ResourceRef | None:
        return self._refs.get((group, version, plural))

    def __iter__(self) -> Any:
        return iter(self._refs.values())


class Lookup(Protocol):
    async def job(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None: ...

    async def pod(self, namespace: str, name: str) -> Obj | None: ...

    def pod_count(self, namespace: str, job_name: str) -> int: ...


class CacheLookup:
    """The controller's shared cache (pods slimmed to metadata and status: all that is needed)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    async def job(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
        return self.cache.get(ref, namespace, name) if ref in self.cache else None

    async def pod(self, namespace: str, name: str) -> Obj | None:
        return self.cache.get(PODS, namespace, name)

    def pod_count(self, namespace: str, job_name: str) -> int:
        return len(self.cache.store(PODS).by_label(namespace, job_name))


class ApiLookup:
    """GETs, for a process whose controller is not leading (or not running)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def _get(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
        try:
            return await self.client.get(ref, namespace, name)
        except ApiError as err:
            if err.is_not_found:
                return None
            raise

    async def job(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
        return await self._get(ref, namespace, name)

    async def pod(self, namespace: str, name: str) -> Obj | None:
        pod = await self._get(PODS, namespace, name)
        return pod

    def pod_count(self, namespace: str, job_name: str) -> int:
        return 0  # unknown without a cache: the per-job limit is its minimum burst


def choose(cache_ready: Callable[[], Cache | None], api: ApiLookup) -> Callable[[], Lookup]:
    """The lookup to use now: the cache while `cache_ready()` returns one, else the API."""

    def pick() -> Lookup:
        cache = cache_ready()
        return CacheLookup(cache) if cache is not None else api

    return pick


__all__ = ["LABEL_JOB_NAME", "ApiLookup", "CacheLookup", "Lookup", "Routes", "choose"]
