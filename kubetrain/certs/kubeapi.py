"""The few API calls the self-managed certificate mode makes, as plain dicts.

`CertApi` is the protocol `SelfManagedCertificates` needs. `KubeClientCertApi` implements it on
the shared kube I/O layer (`kubetrain.kube.client.KubeClient`, what `kubetrain webhook` uses):
kubetrain.kube is the only package that builds API clients (an import contract holds it).

RBAC used: secrets in the operator's namespace (get, create, update, watch) and
mutating/validatingwebhookconfigurations (get, watch, patch).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol


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
            "CustomResourceDefinition": resources.CUSTOM_RESOURCE_DEFINITIONS,
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
