"""Raw JSON requests through kubernetes_asyncio's ApiClient, for the simulated kubelet and gang
scheduler: requests, watch streams and a list-then-watch loop.

kubernetes_asyncio does configuration, authentication (client certificates, tokens, exec
plugins) and TLS; the bodies stay plain dicts (`_preload_content=False`, JSON decoded here), so
no generated model classes are involved.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.body = body


class RawApi:
    def __init__(self, api_client: client.ApiClient) -> None:
        self._client = api_client

    @classmethod
    async def from_kubeconfig(cls, path: str, user_agent: str) -> RawApi:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=path, client_configuration=configuration)
        api_client = client.ApiClient(configuration)
        api_client.user_agent = user_agent
        return cls(api_client)

    async def close(self) -> None:
        await self._client.close()

    async def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        request_timeout: aiohttp.ClientTimeout | float | None,
        content_type: str = "application/json",
    ) -> aiohttp.ClientResponse:
        response: aiohttp.ClientResponse = await self._client.call_api(
            path,
            method,
            query_params=list((query or {}).items()),
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=request_timeout,
        )
        return response

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body or None); a PATCH names its patch type in `content_type`."""
        response = await self._send(method, path, query, body, 60, content_type)
        async with response:
            raw = await response.read()
            status = response.status
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, {"message": raw.decode("utf-8", "replace")}

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
        """Watch events, one JSON object per line, until the server ends the stream."""
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=30, sock_read=float(query.get("timeoutSeconds", 300)) + 60
        )
        response = await self._send("GET", path, query, None, timeout)
        async with response:
            if response.status != 200:
                raw = await response.read()
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = {"message": raw.decode("utf-8", "replace")}
                raise ApiError(response.status, body)
            async for line in response.content:
                if line.strip():
                    yield json.loads(line)


async def list_then_watch(
    api: RawApi,
    path: str,
    observe: Callable[[str, dict[str, Any]], Awaitable[None]],
    relisted: Callable[[list[dict[str, Any]]], Awaitable[None]],
) -> None:
    """List `path` (paginated) and hand the items to `relisted`, then watch from the list's
    resourceVersion with bookmarks, passing ADDED/MODIFIED/DELETED to `observe`. Relists on
    410 Gone; re-watches (with back-off on errors) when a stream ends. Runs until cancelled."""
    resource_version: str | None = None
    failures = 0
    while True:
        try:
            if resource_version is None:
                items, resource_version = await _list_all(api, path)
                await relisted(items)
            query = {
                "watch": "true",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
            async for event in api.stream(path, query):
                failures = 0
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        resource_version = None
                        break
                    raise ApiError(int(obj.get("code") or 500), obj)
                resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or resource_version)
                if kind != "BOOKMARK":
                    await observe(kind, obj)
        except asyncio.CancelledError:
            raise
        except ApiError as exc:
            if exc.status == 410:
                resource_version = None
            failures += 1
        except Exception as exc:  # connection loss, server restart: back off and re-watch
            log.debug("watch of %s interrupted: %s", path, exc)
            failures += 1
        if failures:
            await asyncio.sleep(min(5.0, 0.05 * 2**failures))


async def _list_all(api: RawApi, path: str) -> tuple[list[dict[str, Any]], str]:
    items: list[dict[str, Any]] = []
    query: dict[str, str] = {"limit": "500"}
    while True:
        code, body = await api.request("GET", path, query=query)
        if code != 200:
            raise ApiError(code, body)
        items.extend(body.get("items") or [])
        meta = body.get("metadata") or {}
        if not meta.get("continue"):
            return items, str(meta.get("resourceVersion", ""))
        query = {"limit": "500", "continue": str(meta["continue"])}
