"""KubeClient: plain-dict access to the Kubernetes API.

kubernetes-asyncio provides configuration, authentication and the HTTP transport (kubeconfig
or in-cluster config, client certificates, bearer tokens with refresh, the aiohttp session);
requests and responses are JSON <-> plain dicts — the generated `V1Pod`-style models are never
built (their deserialisation dominates CPU at scale).

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
`GoneError` (an expired resourceVersion in a watch, or an expired `continue` token).
Requests pass a client-side token bucket (`qps`, `burst`; `qps <= 0` disables it) that bounds
the rate without serialising concurrent requests; 429 answers are retried (honouring
Retry-After, at most `max_429_retries` times). Each request counts in the Prometheus counter
`kubetrain_api_requests_total{verb, code}` (code "error" for transport failures). The
User-Agent is `kubetrain/<version>`.
"""

from __future__ import annotations

import os
import re
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration

from kubetrain import __version__
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.errors import ApiError, GoneError, api_error
from kubetrain.kube.ratelimit import TokenBucket
from kubetrain.kube.resources import ResourceRef
from kubetrain.serving.metrics import API_REQUESTS

USER_AGENT = f"kubetrain/{__version__}"
# 300 requests at once, then 150/s: 1,000 pods take ~4.7 s of limiter time, the time a bare
# 16-concurrent client needs on a real API server (docs/performance.md), well under kube-apiserver's
# default in-flight limits (400 read / 200 mutating) because each request is short.
DEFAULT_QPS = 150.0
DEFAULT_BURST = 300
DEFAULT_MAX_CONNECTIONS = 128
DEFAULT_REQUEST_TIMEOUT = 60.0

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

Obj = dict[str, Any]
Objs = list[Obj]  # (module-level alias: `list` is also a KubeClient method name)
Warnings = list[str]  # the texts of an answer's Warning headers


def _query(**params: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _decode(raw: bytes) -> Any:
    if not raw:
        return {}
    try:
        return orjson.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def parse_warnings(headers: list[str]) -> list[str]:
    """The texts of `Warning: 299 - "text"` headers (RFC 7234 §5.5; several may share a header)."""
    return [re.sub(r"\\(.)", r"\1", m.group(1)) for header in headers for m in _WARNING.finditer(header)]


def _meta(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta.get("name", "")


class KubeClient:
    def __init__(
        self,
        api_client: ApiClient,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        user_agent: str = USER_AGENT,
        max_429_retries: int = 3,
        clock: Clock | None = None,
        owns_api_client: bool = False,
    ) -> None:
        self.api_client = api_client
        self.configuration: Configuration = api_client.configuration
        self.host: str = str(self.configuration.host or "").rstrip("/")
        self.user_agent = user_agent
        self.request_timeout = request_timeout
        self.max_429_retries = max_429_retries
        self._clock = clock or SYSTEM_CLOCK
        self.limiter = TokenBucket(qps, burst, clock=self._clock)
        self._owns_api_client = owns_api_client
        self._env_proxy = environment_proxy(self.host)
        self._own_session: aiohttp.ClientSession | None = None

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> KubeClient:
        """Connect with `kubeconfig` when given; else in-cluster config when running in a pod;
        else $KUBECONFIG or ~/.kube/config. `max_connections` bounds concurrent HTTP connections
        (watches hold one each)."""
        configuration = Configuration()
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            path = kubeconfig or default_kubeconfig_path()
            await kube_config.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False
            )
        configuration.connection_pool_maxsize = max_connections
        return cls(
            ApiClient(configuration=configuration),
            qps=qps,
            burst=burst,
            request_timeout=request_timeout,
            owns_api_client=True,
        )

    async def close(self) -> None:
        if self._own_session is not None:
            await self._own_session.close()  # not the connector: it belongs to the ApiClient
            self._own_session = None
        if self._owns_api_client:
            await self.api_client.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- transport ------------------------------------------------------------------------------
    @property
    def _session(self) -> aiohttp.ClientSession:
        """A session on the ApiClient's connector (its TLS settings and pool) with `trust_env`
        off: kubernetes-asyncio's own session re-reads ~/.netrc and the proxy variables on every
        request (two thread-pool hops, about a third of the operator's CPU at scale). The proxy
        from the environment is looked up once instead (`environment_proxy`)."""
        if self._own_session is None or self._own_session.closed:
            shared: aiohttp.ClientSession = self.api_client.rest_client.pool_manager
            self._own_session = aiohttp.ClientSession(
                connector=shared.connector,
                connector_owner=False,
                trust_env=False,
                read_bufsize=2**21,  # watch events of large objects (etcd's limit is 1.5 MiB)
            )
        return self._own_session

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = dict(self.api_client.default_headers)
        headers["User-Agent"] = self.user_agent
        headers["Accept"] = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        for setting in (await self.configuration.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _request_kwargs(self, timeout: aiohttp.ClientTimeout) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"timeout": timeout}
        if self.configuration.tls_server_name:
            kwargs["server_hostname"] = self.configuration.tls_server_name
        if self.configuration.proxy:
            kwargs["proxy"] = self.configuration.proxy
            if self.configuration.proxy_headers:
                kwargs["proxy_headers"] = self.configuration.proxy_headers
        elif self._env_proxy:
            kwargs["proxy"] = self._env_proxy
        return kwargs

    async def request(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = "application/json",
        warnings: Warnings | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON answer; raise ApiError otherwise.
        `verb` is the metric label (get, list, create, update, patch, delete). With `warnings`,
        the texts of the answer's `Warning` headers are appended to it (as kubectl prints them)."""
        data = None if body is None else orjson.dumps(body)
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)
        attempt = 0
        while True:
            await self.limiter.acquire()
            headers = await self._headers(content_type if data is not None else None)
            try:
                async with self._session.request(
                    method,
                    self.host + path,
                    params=query or None,
                    data=data,
                    headers=headers,
                    **self._request_kwargs(timeout),
                ) as resp:
                    raw = await resp.read()
                    status = resp.status
                    retry_after = resp.headers.get("Retry-After")
                    if warnings is not None:
                        warnings.extend(parse_warnings(resp.headers.getall("Warning", [])))
            except (aiohttp.ClientError, TimeoutError) as err:
                API_REQUESTS.labels(verb=verb, code="error").inc()
                raise ApiError(0, type(err).__name__, f"{method} {path}: {err or 'timed out'}") from err
            API_REQUESTS.labels(verb=verb, code=str(status)).inc()
            if 200 <= status < 300:
                return _decode(raw)
            if status == 429 and attempt < self.max_429_retries:
                attempt += 1
                await self._clock.sleep(_retry_after(retry_after, attempt))
                continue
            raise api_error(status, _decode(raw), resp.reason or "")

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
                    raise api_error(resp.status, _decode(await resp.read()), resp.reason or "")
                buf = bytearray()
                async for chunk in resp.content.iter_any():
                    buf.extend(chunk)
                    start = 0
                    while (end := buf.find(b"\n", start)) >= 0:
                        line = bytes(buf[start:end])
                        start = end + 1
                        if line.strip():
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


def environment_proxy(url: str) -> str | None:
    """The proxy $HTTPS_PROXY/$HTTP_PROXY name for `url`, honouring $NO_PROXY (None: direct)."""
    parsed = urllib.parse.urlsplit(url)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    return urllib.request.getproxies().get(parsed.scheme or "https")


def default_kubeconfig_path() -> str:
    """$KUBECONFIG (the first file of a list), else ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    first = env.split(os.pathsep)[0] if env else ""
    return first or os.path.expanduser("~/.kube/config")


def _retry_after(header: str | None, attempt: int) -> float:
    try:
        seconds = float(header) if header else 0.0
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        seconds = 0.1 * 2**attempt
    return min(seconds, 10.0)


def _watch_event(line: bytes) -> tuple[str, Obj]:
    event = orjson.loads(line)
    event_type = event.get("type", "")
    obj = event.get("object") or {}
    if event_type == "ERROR":
        code = obj.get("code")
        raise api_error(code if isinstance(code, int) else 500, obj, "WatchError")
    return event_type, obj


__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "USER_AGENT",
    "ApiError",
    "GoneError",
    "KubeClient",
    "api_error",
]
