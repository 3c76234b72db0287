"""The transport under `KubeClient`: configuration, authentication and HTTP requests.

kubernetes-asyncio provides configuration, authentication and the HTTP transport (kubeconfig
or in-cluster config, client certificates, bearer tokens with refresh, the aiohttp connector);
`Transport.request` sends one request and decodes the JSON answer into plain dicts — the
generated `V1Pod`-style models are never built (their deserialisation dominates CPU at scale).

Requests pass a client-side token bucket (`qps`, `burst`; `qps <= 0` disables it) that bounds
the rate without serialising concurrent requests. The Event recorder's writes (made inside
`event_writes()`) pass a second bucket of the same `qps`/`burst`, `event_limiter`, over the same
connections — as controller-runtime's recorder provider builds its own REST client, hence its own
client-go rate limiter (pkg/internal/recorder/recorder.go `NewProvider`; client-go
rest.RESTClientFor makes a new token bucket from QPS/Burst): Events never take a token from the
pod creates, nor wait for them. 429 answers are retried (honouring
Retry-After, at most `max_429_retries` times). Each request counts in the Prometheus counter
`kubetrain_api_requests_total{verb, code}` (code "error" for transport failures); inside a
`RequestTimes.recording()` (a reconcile) its limiter wait and time in flight are recorded there
(`kubetrain.kube.requesttimes`). The User-Agent is `kubetrain/<version>`. Errors are `ApiError`
(status 0: no answer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Self

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration

from kubetrain import __version__
from kubetrain.kube import requesttimes
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.errors import ApiError, ApiUnreachable, api_error
from kubetrain.kube.kubeconfig import default_kubeconfig_path, load_in_cluster, load_kubeconfig
from kubetrain.kube.ratelimit import TokenBucket
from kubetrain.serving.metrics import API_REQUESTS

USER_AGENT = f"kubetrain/{__version__}"
# 300 requests at once, then 150/s: 1,000 pods take ~4.7 s of limiter time, the time a bare
# 16-concurrent client needs on a real API server (docs/performance.md), well under kube-apiserver's
# default in-flight limits (400 read / 200 mutating) because each request is short.
DEFAULT_QPS = 150.0
DEFAULT_BURST = 300
DEFAULT_MAX_CONNECTIONS = 128
DEFAULT_REQUEST_TIMEOUT = 60.0
# How long a starting controller or webhook waits for the API server to answer before it exits
# (kube-controller-manager likewise waits a bounded time for kube-apiserver's /healthz).
STARTUP_TIMEOUT = 30.0

log = logging.getLogger(__name__)

Warnings = list[str]  # the texts of an answer's Warning headers

_EVENT_WRITES: ContextVar[bool] = ContextVar("kubetrain_event_writes", default=False)


@contextlib.contextmanager
def event_writes() -> Iterator[None]:
    """Requests sent inside (by this task and the tasks it starts) take their token from the
    client's `event_limiter`, not from its `limiter`: the Event recorder's writes."""
    token = _EVENT_WRITES.set(True)
    try:
        yield
    finally:
        _EVENT_WRITES.reset(token)


def decode_body(raw: bytes) -> Any:
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


class Transport:
    """Configuration, authentication, the rate limit and one request at a time (`request`)."""

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
        self.event_limiter = TokenBucket(qps, burst, clock=self._clock)  # inside event_writes()
        self._owns_api_client = owns_api_client
        self._env_proxy = environment_proxy(self.host)
        self._own_session: aiohttp.ClientSession | None = None
        self._request_timeout_obj: aiohttp.ClientTimeout | None = None

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
    ) -> Self:
        """Connect with `kubeconfig` when given; else in-cluster config when running in a pod;
        else $KUBECONFIG or ~/.kube/config. `max_connections` bounds concurrent HTTP connections
        (watches hold one each)."""
        configuration = Configuration()
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            load_in_cluster(configuration)
        else:
            path = kubeconfig or default_kubeconfig_path()
            await load_kubeconfig(path, context, configuration)
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

    async def __aenter__(self) -> Self:
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

    def _timeout(self) -> aiohttp.ClientTimeout:
        """The timeout of a request, built once per `request_timeout` value (not per request)."""
        if self._request_timeout_obj is None or self._request_timeout_obj.total != self.request_timeout:
            self._request_timeout_obj = aiohttp.ClientTimeout(total=self.request_timeout)
        return self._request_timeout_obj

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
        accept: str | None = None,
        decode: bool = True,
    ) -> Any:
        """Send one request and return the decoded JSON answer; raise ApiError otherwise.
        `verb` is the metric label (get, list, create, update, patch, delete). With `warnings`,
        the texts of the answer's `Warning` headers are appended to it (as kubectl prints them).
        `accept` replaces `application/json`, e.g. to ask for server-side printing (a Table).
        `decode=False`: a successful answer is read but not decoded (None is returned) — for a
        caller that learns the object from its watch; an error answer is decoded as always."""
        data = None if body is None else orjson.dumps(body)
        timeout = self._timeout()
        attempt = 0
        times = requesttimes.current()  # a reconcile recording where its requests spend time
        limiter = self.event_limiter if _EVENT_WRITES.get() else self.limiter
        while True:
            waited = requesttimes.now() if times is not None else 0.0
            await limiter.acquire()
            sent = 0.0
            if times is not None:
                sent = requesttimes.now()
                times.waited(waited, sent)
            headers = await self._headers(content_type if data is not None else None)
            if accept:
                headers["Accept"] = accept
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
                _requests_counter(verb, "error").inc()
                raise ApiError(0, type(err).__name__, f"{method} {path}: {err or 'timed out'}") from err
            finally:
                if times is not None:
                    times.flew(sent, requesttimes.now())
            _requests_counter(verb, str(status)).inc()
            if 200 <= status < 300:
                return decode_body(raw) if decode else None
            if status == 429 and attempt < self.max_429_retries:
                attempt += 1
                slept = requesttimes.now()
                await self._clock.sleep(_retry_after(retry_after, attempt))
                if times is not None:  # the server's Retry-After: its time, not the limiter's
                    times.flew(slept, requesttimes.now())
                continue
            raise api_error(status, decode_body(raw), resp.reason or "")

    async def wait_reachable(self, within: float = STARTUP_TIMEOUT, retry: float = 1.0) -> None:
        """Wait until the API server answers `GET /version` (any answer but 401 counts), retrying
        for `within` seconds; raise ApiUnreachable otherwise, or at once for 401 (credentials
        refused). A server that is down at start-up is logged once, as it is retried."""
        deadline = self._clock.monotonic() + within
        warned = False
        while True:
            try:  # an address that drops packets costs the request timeout per attempt
                await self.request("get", "GET", "/version")
                return
            except ApiError as exc:
                err = exc
            if err.status == 401:
                raise ApiUnreachable(
                    f"the API server {self.host} refused the credentials (401 Unauthorized): "
                    "check the kubeconfig's user (token or client certificate)"
                ) from None
            if err.status != 0 and err.status < 500:
                return  # it answers (e.g. 403 for /version): reachable
            if self._clock.monotonic() >= deadline:
                raise ApiUnreachable(
                    f"cannot reach the API server {self.host} within {within:g} s ({err.message}): "
                    "check the server address in the kubeconfig and that the cluster is up"
                ) from None
            if not warned:
                log.warning(
                    "the API server %s does not answer yet (%s); retrying for %g s",
                    self.host,
                    err.message,
                    within,
                )
                warned = True
            await self._clock.sleep(min(retry, max(deadline - self._clock.monotonic(), 0.0)))


_COUNTERS: dict[tuple[str, str], Any] = {}


def _requests_counter(verb: str, code: str) -> Any:
    """The `kubetrain_api_requests_total{verb, code}` child, looked up once per label pair
    (`labels()` takes a lock and builds the key on every call: ~10 µs on each request)."""
    counter = _COUNTERS.get((verb, code))
    if counter is None:
        counter = _COUNTERS[(verb, code)] = API_REQUESTS.labels(verb=verb, code=code)
    return counter


def environment_proxy(url: str) -> str | None:
    """The proxy $HTTPS_PROXY/$HTTP_PROXY name for `url`, honouring $NO_PROXY (None: direct)."""
    parsed = urllib.parse.urlsplit(url)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    return urllib.request.getproxies().get(parsed.scheme or "https")


def _retry_after(header: str | None, attempt: int) -> float:
    try:
        seconds = float(header) if header else 0.0
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        seconds = 0.1 * 2**attempt
    return min(seconds, 10.0)
