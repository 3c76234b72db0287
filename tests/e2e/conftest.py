"""Fixtures for the shared conformance module (tests/e2e/test_conformance*.py).

The conformance tests run against whichever API server `conformance_cluster` yields:
- `devcluster` (default, part of the normal test run): a fresh `kubetrain.devcluster.DevCluster`
  (the `devcluster` fixture of tests/conftest.py, with a short watch window);
- `kubeconfig` (marked `e2e`, so selected by `pytest -m e2e`): the cluster named by $KUBECONFIG,
  skipped when it is not set. Where the two disagree, devcluster is wrong.

`kube` is a thin raw-request helper over a plain kubernetes-asyncio ApiClient (JSON in, dicts out,
Status bodies of failures included) and `namespace` a throw-away namespace for one test.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.devcluster import DevCluster

Obj = dict[str, Any]


@dataclass
class ConformanceCluster:
    kubeconfig_path: str
    devcluster: DevCluster | None  # None when running against a real cluster


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"watch_window": 100}  # a short watch window, so "410 Gone" is reachable in a test


@pytest.fixture(params=["devcluster", pytest.param("kubeconfig", marks=pytest.mark.e2e)])
def conformance_cluster(request: pytest.FixtureRequest) -> ConformanceCluster:
    if request.param == "kubeconfig":
        path = os.environ.get("KUBECONFIG")
        if not path:
            pytest.skip("conformance against a real cluster needs KUBECONFIG")
        return ConformanceCluster(path.split(os.pathsep)[0], None)
    cluster: DevCluster = request.getfixturevalue("devcluster")  # tests/conftest.py
    return ConformanceCluster(cluster.kubeconfig_path, cluster)


@pytest.fixture
def kubeconfig_path(conformance_cluster: ConformanceCluster) -> str:
    return conformance_cluster.kubeconfig_path


class Response:
    def __init__(self, status: int, body: Any, headers: Any = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers or {}  # case-insensitive (aiohttp's CIMultiDict) when set

    @property
    def warnings(self) -> list[str]:
        """The texts of the response's `Warning: 299 - "..."` headers."""
        headers = self.headers
        if hasattr(headers, "getall"):
            values = headers.getall("Warning", [])
        else:
            values = [v for k, v in dict(headers).items() if k.lower() == "warning"]
        found: list[str] = []
        for value in values:
            found += [m.replace('\\"', '"') for m in re.findall(r'299 - "((?:[^"\\]|\\.)*)"', value)]
        return found

    def __repr__(self) -> str:
        return f"Response({self.status}, {self.body!r})"


class Kube:
    """Raw API requests through kubernetes-asyncio's ApiClient (auth, TLS and transport from the
    kubeconfig), returning (status, decoded JSON) instead of raising on failures."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Response:
        try:
            resp = await self.api.call_api(
                path,
                method,
                query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
            raw = await resp.read()
            return Response(resp.status, json.loads(raw) if raw else None, resp.headers)
        except ApiException as exc:
            return Response(exc.status, json.loads(exc.body) if exc.body else None, exc.headers)

    async def raw(
        self,
        method: str,
        path: str,
        data: bytes,
        *,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Response:
        """A request whose body is sent byte for byte (the client re-encodes objects, which
        would drop a repeated key), with the client's auth and TLS."""
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        params = list((query or {}).items())
        await self.api.update_params_for_auth(headers, params, ["BearerToken"])
        url = self.api.configuration.host + path + ("?" + urlencode(params) if params else "")
        async with self.api.rest_client.pool_manager.request(method, url, data=data, headers=headers) as resp:
            raw = await resp.read()
            return Response(resp.status, json.loads(raw) if raw else None, resp.headers)

    async def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Obj:
        resp = await self.request(method, path, body, **kw)
        assert 200 <= resp.status < 300, resp
        result: Obj = resp.body
        return result

    async def watch(self, path: str, query: dict[str, Any]) -> AsyncIterator[Obj]:
        """Events of a watch (`watch=true` added) until the server ends the stream."""
        resp = await self.api.call_api(
            path,
            "GET",
            query_params=list({**query, "watch": "true"}.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )
        try:
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            resp.release()

    async def eventually_gone(self, path: str, within: float = 60) -> None:
        """Poll (a plain client has nothing better for "is it gone yet") until GET is 404."""
        async with asyncio.timeout(within):
            while True:
                if (await self.request("GET", path)).status == 404:
                    return
                await asyncio.sleep(0.1)


@pytest.fixture
def kube(api: client.ApiClient) -> Kube:
    """`api` (tests/conftest.py) is configured from `kubeconfig_path`, the conformance cluster's."""
    return Kube(api)


@pytest.fixture
async def namespace(kube: Kube) -> AsyncIterator[str]:
    name = f"conformance-{uuid.uuid4().hex[:8]}"
    await kube.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        yield name
    finally:
        await kube.request("DELETE", f"/api/v1/namespaces/{name}")


# --------------------------------------------------------------------------------------------
# The e2e modules (test_scenarios.py, the SDK, KubeDL, MPI-version and cron modules)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """One e2e cluster per test module (tests/e2e/scenarios_support.py: CRDs, `kubetrain run`,
    URL-mode webhooks, a throw-away namespace), the operator serving the module's
    `E2E_API_GROUPS` (default: kubetrain.io) with the extra flags its `E2E_OPERATOR_ARGS(host)`
    returns (default: none)."""
    from e2e import scenarios_support as support

    groups = getattr(request.module, "E2E_API_GROUPS", ("kubetrain.io",))
    operator_args = getattr(request.module, "E2E_OPERATOR_ARGS", None)
    handle, cleanup = await support.open_cluster(
        os.environ["KUBECONFIG"], api_groups=groups, operator_args=operator_args
    )
    try:
        yield handle
    finally:
        await cleanup()
