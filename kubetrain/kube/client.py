"""KubeClient: plain-dict access to the Kubernetes API — the verbs and watches, over
`kubetrain.kube.transport.Transport` (configuration, authentication, rate limit, one request).

    client = await KubeClient.connect()               # in-cluster, else $KUBECONFIG / ~/.kube/config
    client = await KubeClient.connect("/path/kubeconfig", qps=150, burst=300)
    client = KubeClient(api_client)                   # wrap an existing kubernetes_asyncio ApiClient
    async with client: ...                            # close() on exit

    pod   = await client.get(PODS, "ns", "name")
    page  = await client.list(PODS, "ns", label_selector="a=b", limit=500, continue_=token)
    items, rv = await client.list_all(PODS, None)     # every page; rv = the list's resourceVersion
    async with contextlib.aclosing(client.watch(PODS, "ns", resource_version=rv)) as events:
        async for event_type, obj in events: ...      # ADDED/MODIFIED/DELETED/BOOKMARK
    await client.create(PODS, pod_dict)               # namespace from metadata (or namespace=…)
    await client.replace(JOBS, job) / client.replace_status(JOBS, job)   # JOBS = job_resource("TFJob")
    await client.patch(PODS, "ns", "name", {"metadata": {...}})                 # merge patch
    await client.patch(PODS, "ns", "name", [{"op": ...}], patch_type="json")    # JSON patch
    await client.patch_status(JOBS, "ns", "name", {"status": {...}})
    await client.delete(PODS, "ns", "name", propagation_policy="Background",
                        preconditions={"uid": uid}, grace_period_seconds=0)
    await client.has_api("scheduling.volcano.sh", "v1beta1", "podgroups")     # discovery

Every method returns the decoded JSON (dicts) or raises `ApiError(status, reason, message,
body)` — transport failures are `ApiError` with status 0 — and 410 Gone is the subclass
`GoneError` (an expired resourceVersion in a watch, or an expired `continue` token). The rate
limit, 429 retries, the request metric and the User-Agent are the transport's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

import aiohttp
import orjson

from kubetrain.kube.errors import ApiError, GoneError, api_error
from kubetrain.kube.resources import ResourceRef
from kubetrain.kube.transport import Transport, Warnings, decode_body
from kubetrain.serving.metrics import API_REQUESTS

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

Obj = dict[str, Any]
Objs = list[Obj]  # (module-level alias: `list` is also a KubeClient method name)


def _query(**params: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _meta(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta.get("name", "")


class KubeClient(Transport):
    """The API verbs over `Transport.request`, and watches."""

    # --- verbs ----------------------------------------------------------------------------------
    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> Obj:
        result: Obj = await self.request("get", "GET", ref.path(namespace, name))
        return result

    async def list(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> Obj:
        """One page: the List object (`items`, `metadata.resourceVersion`, `metadata.continue`).
        `namespace=None` lists across all namespaces."""
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
            **{"continue": continue_},
        )
        result: Obj = await self.request("list", "GET", ref.path(namespace), query=query)
        return result

    async def list_all(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[Objs, str]:
        """Every page of a consistent list: (items, the list's resourceVersion). A continue
        token that expires mid-way (410) restarts the list from the beginning (twice at most)."""
        for attempt in range(3):
            items: Objs = []
            token: str | None = None
            try:
                while True:
                    page = await self.list(
                        ref,
                        namespace,
                        label_selector=label_selector,
                        field_selector=field_selector,
                        limit=page_size,
                        continue_=token,
                    )
                    items.extend(page.get("items") or ())
                    meta = page.get("metadata") or {}
                    token = meta.get("continue") or None
                    if not token:
                        return items, str(meta.get("resourceVersion") or "")
            except GoneError:
                if token is None or attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def watch(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        read_timeout: float | None = None,
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        """Yield (type, object) events — ADDED, MODIFIED, DELETED, BOOKMARK — until the server
        ends the stream (e.g. after `timeout_seconds`). Raises GoneError when the resourceVersion
        is too old (HTTP 410 or an ERROR event with code 410), ApiError for other ERROR events
        and failures; a stream silent for `read_timeout` seconds raises ApiError(0, "Timeout").
        Use `contextlib.aclosing` (or cancel the consuming task) to stop early."""
        query = _query(
            watch=True,
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            allowWatchBookmarks=allow_bookmarks,
            timeoutSeconds=timeout_seconds,
        )
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.request_timeout, sock_read=read_timeout or None
        )
        await self.limiter.acquire()
        headers = await self._headers(None)
        path = ref.path(namespace)
        try:
            async with self._session.request(
                "GET", self.host + path, params=query, headers=headers, **self._request_kwargs(timeout)
            ) as resp:
                API_REQUESTS.labels(verb="watch", code=str(resp.status)).inc()
                if resp.status != 200:
                    raise api_error(resp.status, decode_body(await resp.read()), resp.reason or "")
                buf = bytearray()
                async for chunk in resp.content.iter_any():
                    if not buf and chunk.endswith(b"\n"):  # whole events only (the usual chunk): no copy
                        for line in chunk.split(b"\n"):
                            if line and not line.isspace():
                                yield _watch_event(line)
                        continue
                    buf.extend(chunk)
                    start = 0
                    while (end := buf.find(b"\n", start)) >= 0:
                        line = bytes(buf[start:end])
                        start = end + 1
                        if line and not line.isspace():
                            yield _watch_event(line)
                    del buf[:start]
                if buf.strip():
                    yield _watch_event(bytes(buf))
        except (aiohttp.ClientError, TimeoutError) as err:
            if isinstance(err, TimeoutError):
                raise ApiError(0, "Timeout", f"watch {path}: no data for {read_timeout} s") from err
            raise ApiError(0, type(err).__name__, f"watch {path}: {err}") from err

    async def create(
        self,
        ref: ResourceRef,
        obj: Obj,
        namespace: str | None = None,
        *,
        field_validation: str | None = None,
        warnings: Warnings | None = None,
    ) -> Obj:
        """POST `obj` (namespace from its metadata unless given; generateName works).
        `field_validation` is the fieldValidation query parameter (Strict, Warn, Ignore);
        `warnings` collects the server's Warning headers."""
        ns = namespace if namespace is not None else _meta(obj)[0]
        if ref.namespaced and not ns:
            raise ValueError(f"creating a {ref.kind} needs a namespace (metadata.namespace or namespace=)")
        result: Obj = await self.request(
            "create",
            "POST",
            ref.path(ns if ref.namespaced else None),
            query=_query(fieldValidation=field_validation),
            body=obj,
            warnings=warnings,
        )
        return result

    async def create_only(self, ref: ResourceRef, obj: Obj, namespace: str | None = None) -> None:
        """POST `obj` like `create`, without decoding the created object the server answers
        with: for a writer that reads its objects from a watch (the operator's pod creates,
        ~10 µs of JSON decoding per pod saved). Failures raise ApiError as for `create`."""
        ns = namespace if namespace is not None else _meta(obj)[0]
        if ref.namespaced and not ns:
            raise ValueError(f"creating a {ref.kind} needs a namespace (metadata.namespace or namespace=)")
        await self.request("create", "POST", ref.path(ns if ref.namespaced else None), body=obj, decode=False)

    async def replace(self, ref: ResourceRef, obj: Obj, *, subresource: str | None = None) -> Obj:
        """PUT `obj` (its metadata.resourceVersion, when set, makes a stale write a 409)."""
        ns, name = _meta(obj)
        result: Obj = await self.request(
            "update", "PUT", ref.path(ns if ref.namespaced else None, name, subresource), body=obj
        )
        return result

    async def replace_status(self, ref: ResourceRef, obj: Obj) -> Obj:
        return await self.replace(ref, obj, subresource="status")

    async def patch(
        self,
        ref: ResourceRef,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        """PATCH with `patch_type` "merge" (RFC 7386), "json" (RFC 6902 list of ops) or
        "strategic" (built-in kinds only)."""
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(
                f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}, not {patch_type!r}"
            ) from None
        result: Obj = await self.request(
            "patch", "PATCH", ref.path(namespace, name, subresource), body=patch, content_type=content_type
        )
        return result

    async def patch_status(
        self, ref: ResourceRef, namespace: str | None, name: str, patch: Any, *, patch_type: str = "merge"
    ) -> Obj:
        return await self.patch(ref, namespace, name, patch, patch_type=patch_type, subresource="status")

    async def delete(
        self,
        ref: ResourceRef,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj:
        """DELETE with DeleteOptions: `propagation_policy` Foreground | Background | Orphan,
        `preconditions` {"uid": …, "resourceVersion": …}. Returns the server's answer (the
        object, or a Status)."""
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        result: Obj = await self.request("delete", "DELETE", ref.path(namespace, name), body=options)
        return result

    async def has_api(self, group: str, version: str, plural: str) -> bool:
        """Whether the server serves `plural` in `group/version` (discovery; e.g. whether a
        PodGroup CRD is installed). Needs no RBAC."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = await self.request("get", "GET", path)
        except ApiError as err:
            if err.is_not_found:
                return False
            raise
        resources = doc.get("resources") if isinstance(doc, dict) else None
        return any(r.get("name") == plural for r in resources or ())


def _watch_event(line: bytes) -> tuple[str, Obj]:
    event = orjson.loads(line)
    event_type = event.get("type", "")
    obj = event.get("object") or {}
    if event_type == "ERROR":
        code = obj.get("code")
        raise api_error(code if isinstance(code, int) else 500, obj, "WatchError")
    return event_type, obj


__all__ = ["ApiError", "GoneError", "KubeClient", "api_error"]
