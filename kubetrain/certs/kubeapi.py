"""The few API calls the self-managed certificate mode makes, as plain dicts.

`CertApi` is the protocol `SelfManagedCertificates` needs. `KubeClientCertApi` implements it on
the shared kube I/O layer (`kubetrain.kube.client.KubeClient`, what `kubetrain webhook` uses);
`ApiClientCertApi` implements it directly on a kubernetes_asyncio `ApiClient` with raw JSON
requests (no generated `V1...` model is ever built) for callers that only have an ApiClient.

RBAC used: secrets in the operator's namespace (get, create, update, watch) and
mutating/validatingwebhookconfigurations (get, watch, patch).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol
from urllib.parse import quote

ADMISSION_PATH = "/apis/admissionregistration.k8s.io/v1"
WEBHOOK_PLURALS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}


class CertApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}")


class CertApi(Protocol):
    async def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    async def create_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]: ...
    async def update_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]: ...
    async def get_webhook_config(self, kind: str, name: str) -> dict[str, Any] | None: ...
    async def patch_webhook_config(
        self, kind: str, name: str, patch: list[dict[str, Any]]
    ) -> dict[str, Any]: ...
    def watch_webhook_config(
        self, kind: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]: ...
    def watch_secret(
        self, namespace: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]: ...


def _error_from(status: int, raw: bytes) -> CertApiError:
    try:
        body = json.loads(raw)
        return CertApiError(status, str(body.get("reason", "")), str(body.get("message", "")))
    except (ValueError, AttributeError):
        return CertApiError(status, "", raw[:200].decode("utf-8", "replace"))


class ApiClientCertApi:
    """`CertApi` over a kubernetes_asyncio ApiClient (`api_client` is any configured client)."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float | None = 30,
    ) -> Any:
        resp = await self.api_client.call_api(
            path,
            method,
            query_params=query or [],
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=request_timeout,
        )
        return resp

    async def _json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        resp = await self._call(method, path, **kw)
        async with resp:
            raw = await resp.read()
            if not 200 <= resp.status < 300:
                raise _error_from(resp.status, raw)
        out: dict[str, Any] = json.loads(raw)
        return out

    async def _get_or_none(self, path: str) -> dict[str, Any] | None:
        try:
            return await self._json("GET", path)
        except CertApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def _watch(
        self, path: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        query = [
            ("watch", "true"),
            ("fieldSelector", f"metadata.name={name}"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "300"),
        ]
        resp = await self._call("GET", path, query=query, request_timeout=None)
        async with resp:
            if resp.status != 200:
                raise _error_from(resp.status, await resp.read())
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                if not line.strip():
                    continue
                event = json.loads(line)
                etype, obj = event.get("type", ""), event.get("object") or {}
                if etype == "ERROR":
                    raise CertApiError(
                        int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", ""))
                    )
                yield etype, obj

    async def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await self._get_or_none(f"/api/v1/namespaces/{quote(namespace)}/secrets/{quote(name)}")

    async def create_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        return await self._json("POST", f"/api/v1/namespaces/{quote(namespace)}/secrets", body=secret)

    async def update_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        name = secret["metadata"]["name"]
        return await self._json(
            "PUT", f"/api/v1/namespaces/{quote(namespace)}/secrets/{quote(name)}", body=secret
        )

    async def get_webhook_config(self, kind: str, name: str) -> dict[str, Any] | None:
        return await self._get_or_none(f"{ADMISSION_PATH}/{WEBHOOK_PLURALS[kind]}/{quote(name)}")

    async def patch_webhook_config(self, kind: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._json(
            "PATCH",
            f"{ADMISSION_PATH}/{WEBHOOK_PLURALS[kind]}/{quote(name)}",
            body=patch,
            content_type="application/json-patch+json",
        )

    def watch_webhook_config(
        self, kind: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(f"{ADMISSION_PATH}/{WEBHOOK_PLURALS[kind]}", name, resource_version)

    def watch_secret(
        self, namespace: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(f"/api/v1/namespaces/{quote(namespace)}/secrets", name, resource_version)


class KubeClientCertApi:
    """`CertApi` over the shared kube I/O layer (`kubetrain.kube.client.KubeClient`): requests
    count in `kubetrain_api_requests_total` and share the client's rate limit."""

    def __init__(self, kube: Any) -> None:
        from kubetrain.kube import resources

        self.kube = kube
        self._secrets = resources.SECRETS
        self._configs = {
            "MutatingWebhookConfiguration": resources.MUTATING_WEBHOOK_CONFIGURATIONS,
            "ValidatingWebhookConfiguration": resources.VALIDATING_WEBHOOK_CONFIGURATIONS,
        }

    async def _get_or_none(self, ref: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        from kubetrain.kube.errors import ApiError

        try:
            obj: dict[str, Any] = await self.kube.get(ref, namespace, name)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise CertApiError(exc.status, exc.reason, exc.message) from exc
        return obj

    async def _write(self, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from kubetrain.kube.errors import ApiError

        try:
            obj: dict[str, Any] = await call(*args, **kwargs)
        except ApiError as exc:
            raise CertApiError(exc.status, exc.reason, exc.message) from exc
        return obj

    async def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await self._get_or_none(self._secrets, namespace, name)

    async def create_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        return await self._write(self.kube.create, self._secrets, secret, namespace)

    async def update_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        return await self._write(self.kube.replace, self._secrets, secret)

    async def get_webhook_config(self, kind: str, name: str) -> dict[str, Any] | None:
        return await self._get_or_none(self._configs[kind], None, name)

    async def patch_webhook_config(self, kind: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._write(self.kube.patch, self._configs[kind], None, name, patch, patch_type="json")

    async def _watch(
        self, ref: Any, namespace: str | None, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        events = self.kube.watch(
            ref,
            namespace,
            resource_version=resource_version or None,
            field_selector=f"metadata.name={name}",
            timeout_seconds=300,
        )
        try:
            async for etype, obj in events:
                if etype != "BOOKMARK":
                    yield etype, obj
        finally:
            await events.aclose()

    def watch_webhook_config(
        self, kind: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(self._configs[kind], None, name, resource_version)

    def watch_secret(
        self, namespace: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(self._secrets, namespace, name, resource_version)
