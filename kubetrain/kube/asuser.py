"""API calls made for a user, with that user's credentials — never the caller's own.

    base = await anonymous_client("/path/kubeconfig")    # the API server's address and CA only
    api = AsUser(base, [("Authorization", "Bearer …")])  # or Impersonate-User/-Group headers
    await api.get(PODS, "ns", "p")                       # every KubeClient verb, as that user
    await api.can(verb="list", group="kubetrain.io", resource="tfjobs", namespace="team-a")
    text = await api.pod_log("ns", "p", container="c", tail_lines=200)
    async for chunk in api.follow_pod_log("ns", "p", container="c"): ...

`anonymous_client` reads a kubeconfig (or the in-cluster config) for the server's URL, CA and TLS
settings and drops its credentials (client certificate, token, exec plugin): kube-apiserver
authenticates a client certificate before a bearer token, so a user's token sent over a
connection that presents the server's own certificate would act as the server. In proxy mode
the caller passes its own authenticated client and impersonation headers instead: the API server
then checks that the caller may impersonate, and authorizes every call as the user.
`AsUser` shares the base client's connection pool and rate limits.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Sequence
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from multidict import CIMultiDict

from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError, api_error
from kubetrain.kube.kubeconfig import default_kubeconfig_path
from kubetrain.kube.resources import PODS, ResourceRef

SELF_SUBJECT_ACCESS_REVIEWS = ResourceRef(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False
)
MAX_LOG_BYTES = 2 * 1024 * 1024


async def anonymous_client(
    kubeconfig: str | None = None, *, context: str | None = None, qps: float = 100.0, burst: int = 200
) -> KubeClient:
    """A client for the API server of `kubeconfig` (in-cluster config when None in a pod) that
    carries no credentials of its own."""
    loaded = Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        kube_config.load_incluster_config(client_configuration=loaded)  # type: ignore[no-untyped-call]
    else:
        await kube_config.load_kube_config(
            config_file=kubeconfig or default_kubeconfig_path(),
            context=context,
            client_configuration=loaded,
            persist_config=False,
        )
    bare = Configuration(host=loaded.host)
    bare.ssl_ca_cert = loaded.ssl_ca_cert
    bare.verify_ssl = loaded.verify_ssl
    bare.tls_server_name = loaded.tls_server_name
    bare.proxy = loaded.proxy
    bare.connection_pool_maxsize = 64
    return KubeClient(ApiClient(configuration=bare), qps=qps, burst=burst, owns_api_client=True)


class AsUser(KubeClient):
    """A view of `base` whose every request carries `headers` (the user's credentials)."""

    def __init__(self, base: KubeClient, headers: Sequence[tuple[str, str]]) -> None:
        super().__init__(base.api_client, request_timeout=base.request_timeout, user_agent=base.user_agent)
        self.limiter = base.limiter
        self.event_limiter = base.event_limiter
        self._base = base
        self._user_headers = list(headers)

    @property
    def _session(self) -> aiohttp.ClientSession:
        return self._base._session

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        # Impersonate-Group repeats, one header per group (kube-apiserver reads each header line
        # as one group): a CIMultiDict keeps every line where a dict would keep one.
        headers = CIMultiDict(await super()._headers(content_type))
        for name, value in self._user_headers:
            if name == "Impersonate-Group":
                headers.add(name, value)
            else:
                headers[name] = value
        return cast(dict[str, str], headers)

    async def close(self) -> None:  # the base owns the connections
        return None

    async def can(
        self,
        *,
        verb: str,
        group: str,
        resource: str,
        namespace: str = "",
        name: str = "",
        subresource: str = "",
    ) -> bool:
        """SelfSubjectAccessReview: may this user do `verb` on the resource (namespace "" = all)?"""
        attrs = {"verb": verb, "group": group, "resource": resource}
        attrs.update(
            {k: v for k, v in (("namespace", namespace), ("name", name), ("subresource", subresource)) if v}
        )
        answer = await self.create(
            SELF_SUBJECT_ACCESS_REVIEWS,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs},
            },
        )
        return bool((answer.get("status") or {}).get("allowed"))

    async def pod_log(
        self, namespace: str, name: str, *, container: str = "", tail_lines: int = 200, previous: bool = False
    ) -> str:
        query = {"tailLines": str(tail_lines), "limitBytes": str(MAX_LOG_BYTES)}
        if container:
            query["container"] = container
        if previous:
            query["previous"] = "true"
        raw = await self.request("get", "GET", PODS.path(namespace, name, "log"), query=query)
        return raw if isinstance(raw, str) else str(raw) if raw else ""

    async def follow_pod_log(
        self, namespace: str, name: str, *, container: str = "", tail_lines: int = 50
    ) -> AsyncGenerator[str, None]:
        """The pod log API with follow=true: text as the container writes it, until it ends."""
        query = {"follow": "true", "tailLines": str(tail_lines)}
        if container:
            query["container"] = container
        await self.limiter.acquire()
        headers = await self._headers(None)
        headers["Accept"] = "*/*"
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout)
        path = PODS.path(namespace, name, "log")
        try:
            async with self._session.get(
                self.host + path, params=query, headers=headers, **self._request_kwargs(timeout)
            ) as resp:
                if resp.status != 200:
                    raise api_error(resp.status, _json_or_text(await resp.read()), resp.reason or "")
                async for chunk in resp.content.iter_any():
                    yield chunk.decode("utf-8", "replace")
        except aiohttp.ClientError as err:
            raise ApiError(0, type(err).__name__, f"log {path}: {err}") from err


def _json_or_text(raw: bytes) -> Any:
    import orjson

    try:
        return orjson.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
