"""The HTTPS side of devcluster's admission chain: one POST of an AdmissionReview to a webhook.

`WebhookClient(service_ports)` resolves a webhook's `clientConfig` — `url`, or `service`
{namespace, name, path, port=443} to https://127.0.0.1:<service_ports[(namespace, name, port)]><path>
with TLS server name `<name>.<namespace>.svc` — verifies the server certificate against
`caBundle` (system roots when absent), appends `?timeout=Ns` and posts. Every failure is a
`CallError` worded as client-go / kube-apiserver word it (e.g. `failed to call webhook: Post
"https://svc.ns.svc:443/path?timeout=10s": context deadline exceeded`); failurePolicy is the
chain's business.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp

from kubetrain.devcluster.admission.review import CallError


class WebhookClient:
    def __init__(self, service_ports: dict[tuple[str, str, int], int] | None = None) -> None:
        self.service_ports: dict[tuple[str, str, int], int] = dict(service_ports or {})
        self._session: aiohttp.ClientSession | None = None
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def endpoint(self, client_config: dict[str, Any], timeout: int) -> Endpoint:
        try:
            ssl_context = self._ssl_context(client_config.get("caBundle"))
        except (ValueError, ssl.SSLError, binascii.Error) as exc:
            raise CallError(f"could not get REST client: unable to load root certificates: {exc}") from exc
        query = f"?timeout={timeout}s"
        url = client_config.get("url")
        if url:
            target = f"{url}{query}"
            return Endpoint(target, target, ssl_context, None, None, None)
        service = client_config.get("service")
        if not isinstance(service, dict):
            raise CallError("could not get REST client: webhook clientConfig has neither url nor service")
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = int(service.get("port") or 443)
        path = str(service.get("path") or "/")
        host = f"{name}.{namespace}.svc"
        display = f"https://{host}:{port}{path}{query}"
        local_port = self.service_ports.get((namespace, name, port))
        if local_port is None:
            missing = f'service "{name}" not found'
            return Endpoint(display, None, ssl_context, host, f"{host}:{port}", missing)
        return Endpoint(
            display, f"https://127.0.0.1:{local_port}{path}{query}", ssl_context, host, f"{host}:{port}", None
        )

    def _ssl_context(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = ca_bundle or ""
        context = self._ssl_contexts.get(key)
        if context is None:
            if ca_bundle:
                pem = base64.b64decode(ca_bundle, validate=True).decode("ascii")
                if "-----BEGIN CERTIFICATE-----" not in pem:
                    raise ValueError("unable to parse bytes as PEM block")
                context = ssl.create_default_context(cadata=pem)
            else:
                context = ssl.create_default_context()
            self._ssl_contexts[key] = context
        return context

    async def post(self, endpoint: Endpoint, review: dict[str, Any], seconds: int) -> Any:
        where = f'Post "{endpoint.display_url}"'
        if endpoint.unresolved is not None or endpoint.connect_url is None:
            raise CallError(f"failed to call webhook: {where}: {endpoint.unresolved}")
        if self._session is None:
            self._session = aiohttp.ClientSession()
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        if endpoint.host_header:
            headers["Host"] = endpoint.host_header
        try:
            async with asyncio.timeout(seconds):
                async with self._session.post(
                    endpoint.connect_url,
                    data=json.dumps(review),
                    headers=headers,
                    ssl=endpoint.ssl_context,
                    server_hostname=endpoint.server_hostname,
                ) as resp:
                    raw = await resp.read()
                    status, content_type = resp.status, resp.content_type
        except TimeoutError as exc:
            raise CallError(f"failed to call webhook: {where}: context deadline exceeded") from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            raise CallError(f"failed to call webhook: {where}: {_tls_error(exc, endpoint)}") from exc
        except aiohttp.ClientConnectorError as exc:
            detail = (
                f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
                if isinstance(exc.os_error, ConnectionRefusedError)
                else str(exc)
            )
            raise CallError(f"failed to call webhook: {where}: {detail}") from exc
        except aiohttp.ClientError as exc:
            raise CallError(f"failed to call webhook: {where}: {exc}") from exc
        if not 200 <= status < 300:
            raise CallError(f"failed to call webhook: {_http_error_message(status, raw, content_type)}")
        try:
            return json.loads(raw)
        except ValueError as exc:
            reason = f"couldn't get version/kind; json parse error: {exc}"
            raise CallError(f"failed to call webhook: {reason}") from exc


@dataclass(frozen=True)
class Endpoint:
    display_url: str  # the URL kube would report in errors
    connect_url: str | None
    ssl_context: ssl.SSLContext
    server_hostname: str | None
    host_header: str | None
    unresolved: str | None  # why a service reference could not be resolved


def _tls_error(exc: aiohttp.ClientConnectorCertificateError, endpoint: Endpoint) -> str:
    cert_error = exc.certificate_error
    detail = getattr(cert_error, "verify_message", "") or str(cert_error)
    if "hostname" in detail.lower() or "ip address mismatch" in detail.lower():
        host = endpoint.server_hostname or exc.host
        return f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
    if "issuer" in detail or "self-signed" in detail or "self signed" in detail:
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return f"tls: failed to verify certificate: x509: {detail}"


_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing "
    "the request",
}


def _http_error_message(code: int, raw: bytes, content_type: str) -> str:
    """What client-go's REST client reports for a non-2xx answer (a Status body wins)."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code]
    if code >= 500:
        text = raw.decode("utf-8", "replace").strip() if content_type.startswith("text/") else "unknown"
        return f"an error on the server ({json.dumps(text)}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"
