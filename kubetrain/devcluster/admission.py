"""The dynamic admission chain of kube-apiserver, for devcluster's write path.

Usage (devcluster's request handler)::

    chain = AdmissionChain(service_ports)           # one per server; `await chain.close()` on stop
    outcome = await chain.admit(attrs, mutating_configs, validating_configs)
    # or, to run schema validation between the two phases as kube does:
    outcome = await chain.mutate(attrs, mutating_configs)
    ... validate outcome.obj against the schema ...
    outcome = await chain.validate(replace(attrs, obj=outcome.obj), validating_configs)
    if not outcome.allowed: respond outcome.status_code with body outcome.status (a metav1.Status)
    warnings go out as `Warning: 299 - "<text>"` headers, whatever the outcome.

`mutating_configs` / `validating_configs` are the stored Mutating/ValidatingWebhookConfiguration
objects (plain dicts, admissionregistration.k8s.io/v1). What is implemented, following
kube-apiserver (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook):

- Configurations are ordered by name, webhooks in list order. Requests for webhook/policy
  configuration resources themselves never go to webhooks.
- Matching (see `admission_match`): rules, namespaceSelector, objectSelector, scope.
  matchPolicy Equivalent behaves as Exact (devcluster serves one version per resource);
  matchConditions (CEL) are not evaluated.
- Calls: HTTPS POST of an AdmissionReview (v1, or v1beta1 if that is the first version the webhook
  accepts) to `clientConfig.url`, or for `clientConfig.service` {namespace, name, path, port=443}
  to https://127.0.0.1:<service_ports[(namespace, name, port)]><path> with TLS server name
  `<name>.<namespace>.svc`; the certificate is verified against `caBundle` (system roots when
  absent). `?timeout=Ns` is appended; timeoutSeconds defaults to 10 and is capped at 30.
- dryRun: a webhook whose sideEffects is not None/NoneOnDryRun rejects the request with 400
  `admission webhook "NAME" does not support dry run` (failurePolicy does not apply).
- Responses are verified as kube does (uid must match, kind AdmissionReview of the same version,
  patch and patchType together, validating webhooks may not patch). Call failures (connection,
  TLS, timeout, non-2xx, undecodable or invalid response, unsupported patch type) follow
  failurePolicy (default Fail): Ignore skips the webhook; Fail answers 500 InternalError with the
  message `Internal error occurred: failed calling webhook "NAME": <reason>` (Go wording, e.g.
  `failed to call webhook: Post "https://svc.ns.svc:443/path?timeout=10s": context deadline
  exceeded`). A patch that cannot be applied is a 500 regardless of failurePolicy.
- Denials: `admission webhook "NAME" denied the request: MSG` (response.status.message, else
  .reason, else `admission webhook "NAME" denied the request without explanation`), HTTP code
  from response.status.code, raised to 400 if below 400.
- Mutating webhooks: JSONPatch responses applied in order (the `jsonpatch` library);
  reinvocationPolicy IfNeeded re-invokes, once, a webhook called before a later webhook changed
  the object (kube's reinvocation bookkeeping, without in-tree plugins).
- Validating webhooks run concurrently; when several reject, the first in configuration order is
  reported (kube reports whichever finished first).
- `warnings` from every called webhook are collected in order.

AdmissionAttributes/AdmissionOutcome carry more than the team interface listed: `options`
(the Create/Update/DeleteOptions object sent to webhooks) on the attributes; `reason` and
`status` (the full metav1.Status body to return) on the outcome.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import json
import ssl
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
import jsonpatch

from kubetrain.devcluster.admission_match import (
    MatchError,
    bad_request_status,
    internal_error_status,
    is_exempt_resource,
    webhook_applies,
)

DEFAULT_TIMEOUT_SECONDS = 10
MAX_TIMEOUT_SECONDS = 30
_REVIEW_VERSIONS = ("v1", "v1beta1")
_NO_SIDE_EFFECTS_ON_DRY_RUN = ("None", "NoneOnDryRun")


@dataclass
class AdmissionAttributes:
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    group: str
    version: str
    resource: str
    subresource: str = ""
    kind: tuple[str, str, str] = ("", "", "")  # (group, version, kind) of obj
    namespace: str = ""
    name: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None
    dry_run: bool = False
    user_info: dict[str, Any] = field(default_factory=dict)
    namespace_labels: dict[str, str] | None = None  # labels of the request's namespace, if it exists
    options: dict[str, Any] | None = None  # Create/Update/DeleteOptions; a default one if None


@dataclass
class AdmissionOutcome:
    allowed: bool
    obj: dict[str, Any] | None
    warnings: list[str]
    status_code: int = 200
    message: str = ""
    reason: str = ""
    status: dict[str, Any] | None = None  # metav1.Status to answer with when not allowed


class _CallError(Exception):
    """webhookutil.ErrCallingWebhook: the call failed; failurePolicy decides."""


class _Rejected(Exception):
    """An answer for the client that failurePolicy does not soften (denial, dry run, bad patch)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status


@dataclass
class _Hook:
    config: str
    index: int
    webhook: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.config}/{self.index}"

    @property
    def name(self) -> str:
        return str(self.webhook.get("name", ""))

    @property
    def ignore_failures(self) -> bool:
        return self.webhook.get("failurePolicy") == "Ignore"


def _hooks(configs: list[dict[str, Any]]) -> list[_Hook]:
    ordered = sorted(configs, key=lambda c: str((c.get("metadata") or {}).get("name", "")))
    return [
        _Hook(str((c.get("metadata") or {}).get("name", "")), i, w)
        for c in ordered
        for i, w in enumerate(c.get("webhooks") or [])
    ]


def _rejection(status: dict[str, Any], warnings: list[str], obj: dict[str, Any] | None) -> AdmissionOutcome:
    return AdmissionOutcome(
        allowed=False,
        obj=obj,
        warnings=warnings,
        status_code=int(status.get("code", 500)),
        message=str(status.get("message", "")),
        reason=str(status.get("reason", "")),
        status=status,
    )


def denial_status(webhook_name: str, result: dict[str, Any] | None) -> dict[str, Any]:
    """webhookerrors.ToStatusErr: the Status returned for a webhook's `allowed: false`."""
    result = dict(result or {})
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 400
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": result.get("status") if result.get("status") not in (None, "", "Success") else "Failure",
        "message": message,
        "code": code,
    }
    if result.get("reason"):
        status["reason"] = result["reason"]
    if result.get("details"):
        status["details"] = result["details"]
    return status


def calling_error_status(webhook_name: str, reason: str) -> dict[str, Any]:
    """apierrors.NewInternalError(ErrCallingWebhook): failurePolicy Fail."""
    return internal_error_status(f'failed calling webhook "{webhook_name}": {reason}')


class AdmissionChain:
    def __init__(self, service_ports: dict[tuple[str, str, int], int] | None = None) -> None:
        self.service_ports: dict[tuple[str, str, int], int] = dict(service_ports or {})
        self._session: aiohttp.ClientSession | None = None
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}

    async def __aenter__(self) -> AdmissionChain:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- phases -------------------------------------------------------------------------------

    async def admit(
        self,
        attrs: AdmissionAttributes,
        mutating: list[dict[str, Any]],
        validating: list[dict[str, Any]],
    ) -> AdmissionOutcome:
        """Mutating webhooks, then validating webhooks on the mutated object."""
        mutated = await self.mutate(attrs, mutating)
        if not mutated.allowed:
            return mutated
        validated = await self.validate(replace(attrs, obj=mutated.obj), validating)
        validated.warnings = mutated.warnings + validated.warnings
        validated.obj = mutated.obj
        return validated

    async def mutate(self, attrs: AdmissionAttributes, configs: list[dict[str, Any]]) -> AdmissionOutcome:
        obj = copy.deepcopy(attrs.obj)
        warnings: list[str] = []
        if is_exempt_resource(attrs.group, attrs.resource):
            return AdmissionOutcome(True, obj, warnings)
        hooks = _hooks(configs)
        previously_invoked: set[str] = set()
        reinvoke: set[str] = set()
        should_reinvoke = False
        for round_ in (0, 1):
            if round_ == 1 and not should_reinvoke:
                break
            for hook in hooks:
                current = replace(attrs, obj=obj)
                try:
                    if not self._applies(hook, current):
                        continue
                except MatchError as exc:
                    return _rejection(exc.status, warnings, obj)
                if round_ == 1 and hook.key not in reinvoke:
                    continue
                changed = False
                try:
                    response = await self._call(hook, current, mutating=True, warnings=warnings)
                    new_obj = self._apply_patch(hook, response, obj)
                    changed = new_obj != obj
                    obj = new_obj
                except _CallError as exc:
                    if not hook.ignore_failures:
                        return _rejection(calling_error_status(hook.name, str(exc)), warnings, obj)
                except _Rejected as exc:
                    return _rejection(exc.status, warnings, obj)
                if changed:
                    reinvoke |= previously_invoked
                    previously_invoked = set()
                    should_reinvoke = True
                if hook.webhook.get("reinvocationPolicy") == "IfNeeded":
                    previously_invoked.add(hook.key)
        return AdmissionOutcome(True, obj, warnings)

    async def validate(self, attrs: AdmissionAttributes, configs: list[dict[str, Any]]) -> AdmissionOutcome:
        obj = attrs.obj
        if is_exempt_resource(attrs.group, attrs.resource):
            return AdmissionOutcome(True, obj, [])
        relevant: list[_Hook] = []
        for hook in _hooks(configs):
            try:
                if self._applies(hook, attrs):
                    relevant.append(hook)
            except MatchError as exc:
                return _rejection(exc.status, [], obj)
        per_hook_warnings: list[list[str]] = [[] for _ in relevant]
        results = await asyncio.gather(
            *(self._validate_one(h, attrs, w) for h, w in zip(relevant, per_hook_warnings, strict=True))
        )
        warnings = [w for ws in per_hook_warnings for w in ws]
        for status in results:
            if status is not None:
                return _rejection(status, warnings, obj)
        return AdmissionOutcome(True, obj, warnings)

    async def _validate_one(
        self, hook: _Hook, attrs: AdmissionAttributes, warnings: list[str]
    ) -> dict[str, Any] | None:
        try:
            await self._call(hook, attrs, mutating=False, warnings=warnings)
        except _CallError as exc:
            if hook.ignore_failures:
                return None
            return calling_error_status(hook.name, str(exc))
        except _Rejected as exc:
            return exc.status
        return None

    def _applies(self, hook: _Hook, attrs: AdmissionAttributes) -> bool:
        return webhook_applies(
            hook.webhook,
            operation=attrs.operation,
            group=attrs.group,
            version=attrs.version,
            resource=attrs.resource,
            subresource=attrs.subresource,
            namespace=attrs.namespace,
            obj=attrs.obj,
            old_obj=attrs.old_obj,
            namespace_labels=attrs.namespace_labels,
        )

    # -- one call -----------------------------------------------------------------------------

    async def _call(
        self, hook: _Hook, attrs: AdmissionAttributes, *, mutating: bool, warnings: list[str]
    ) -> dict[str, Any]:
        """Call one webhook; return its verified, allowed `response`. Raises _CallError/_Rejected."""
        webhook = hook.webhook
        if attrs.dry_run:
            side_effects = webhook.get("sideEffects")
            if side_effects is None:
                raise _CallError("Webhook SideEffects is nil")
            if side_effects not in _NO_SIDE_EFFECTS_ON_DRY_RUN:
                message = f'admission webhook "{hook.name}" does not support dry run'
                raise _Rejected(bad_request_status(message))
        accepted = webhook.get("admissionReviewVersions") or []
        version = next((v for v in accepted if v in _REVIEW_VERSIONS), None)
        if version is None:
            raise _CallError(
                "could not create admission objects: "
                "webhook does not accept known AdmissionReview versions (v1, v1beta1)"
            )
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": f"admission.k8s.io/{version}",
            "kind": "AdmissionReview",
            "request": build_request(uid, attrs),
        }
        timeout = _timeout_seconds(webhook)
        endpoint = self._endpoint(webhook.get("clientConfig") or {}, timeout)
        body = await self._post(endpoint, review, timeout)
        response = verify_response(body, uid, version, mutating=mutating)
        warnings.extend(str(w) for w in response.get("warnings") or [])
        if not response.get("allowed"):
            raise _Rejected(denial_status(hook.name, response.get("status")))
        return response

    def _apply_patch(
        self, hook: _Hook, response: dict[str, Any], obj: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        encoded = response.get("patch")
        if not encoded:
            return obj
        try:
            ops = json.loads(base64.b64decode(encoded, validate=True))
            if not isinstance(ops, list):
                raise ValueError("a JSON patch must be an array of operations")
            patch = jsonpatch.JsonPatch(ops)
        except (ValueError, TypeError, binascii.Error, jsonpatch.JsonPatchException) as exc:
            raise _CallError(f"received undecodable patch in webhook response: {exc}") from exc
        if not ops:
            return obj
        if obj is None:
            raise _Rejected(
                internal_error_status(
                    f'admission webhook "{hook.name}" attempted to modify the object, '
                    "which is not supported for this operation"
                )
            )
        if response.get("patchType") != "JSONPatch":
            raise _CallError(f'unsupported patch type "{response.get("patchType")}"')
        try:
            patched = patch.apply(obj)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
            raise _Rejected(internal_error_status(str(exc))) from exc
        if not isinstance(patched, dict):
            raise _Rejected(internal_error_status("the patched object is not a JSON object"))
        return patched

    def _endpoint(self, client_config: dict[str, Any], timeout: int) -> _Endpoint:
        try:
            ssl_context = self._ssl_context(client_config.get("caBundle"))
        except (ValueError, ssl.SSLError, binascii.Error) as exc:
            raise _CallError(f"could not get REST client: unable to load root certificates: {exc}") from exc
        query = f"?timeout={timeout}s"
        url = client_config.get("url")
        if url:
            target = f"{url}{query}"
            return _Endpoint(target, target, ssl_context, None, None, None)
        service = client_config.get("service")
        if not isinstance(service, dict):
            raise _CallError("could not get REST client: webhook clientConfig has neither url nor service")
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = int(service.get("port") or 443)
        path = str(service.get("path") or "/")
        host = f"{name}.{namespace}.svc"
        display = f"https://{host}:{port}{path}{query}"
        local_port = self.service_ports.get((namespace, name, port))
        if local_port is None:
            missing = f'service "{name}" not found'
            return _Endpoint(display, None, ssl_context, host, f"{host}:{port}", missing)
        return _Endpoint(
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

    async def _post(self, endpoint: _Endpoint, review: dict[str, Any], seconds: int) -> Any:
        where = f'Post "{endpoint.display_url}"'
        if endpoint.unresolved is not None or endpoint.connect_url is None:
            raise _CallError(f"failed to call webhook: {where}: {endpoint.unresolved}")
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
            raise _CallError(f"failed to call webhook: {where}: context deadline exceeded") from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            raise _CallError(f"failed to call webhook: {where}: {_tls_error(exc, endpoint)}") from exc
        except aiohttp.ClientConnectorError as exc:
            detail = (
                f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
                if isinstance(exc.os_error, ConnectionRefusedError)
                else str(exc)
            )
            raise _CallError(f"failed to call webhook: {where}: {detail}") from exc
        except aiohttp.ClientError as exc:
            raise _CallError(f"failed to call webhook: {where}: {exc}") from exc
        if not 200 <= status < 300:
            raise _CallError(f"failed to call webhook: {_http_error_message(status, raw, content_type)}")
        try:
            return json.loads(raw)
        except ValueError as exc:
            reason = f"couldn't get version/kind; json parse error: {exc}"
            raise _CallError(f"failed to call webhook: {reason}") from exc


@dataclass(frozen=True)
class _Endpoint:
    display_url: str  # the URL kube would report in errors
    connect_url: str | None
    ssl_context: ssl.SSLContext
    server_hostname: str | None
    host_header: str | None
    unresolved: str | None  # why a service reference could not be resolved


def _timeout_seconds(webhook: dict[str, Any]) -> int:
    value = webhook.get("timeoutSeconds")
    if not isinstance(value, int) or isinstance(value, bool):
        return DEFAULT_TIMEOUT_SECONDS
    return max(1, min(MAX_TIMEOUT_SECONDS, value))


def _tls_error(exc: aiohttp.ClientConnectorCertificateError, endpoint: _Endpoint) -> str:
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


def default_options(attrs: AdmissionAttributes) -> dict[str, Any] | None:
    kinds = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
    kind = kinds.get(attrs.operation)
    if kind is None:
        return None
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if attrs.dry_run:
        options["dryRun"] = ["All"]
    return options


def build_request(uid: str, attrs: AdmissionAttributes) -> dict[str, Any]:
    """The AdmissionRequest sent to a webhook."""
    kind_group, kind_version, kind = attrs.kind
    gvk = {"group": kind_group, "version": kind_version, "kind": kind}
    gvr = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: dict[str, Any] = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": dict(gvk),
        "requestResource": dict(gvr),
        "operation": attrs.operation,
        "userInfo": attrs.user_info,
        "object": attrs.obj,
        "oldObject": attrs.old_obj,
        "dryRun": attrs.dry_run,
        "options": attrs.options if attrs.options is not None else default_options(attrs),
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return request


def verify_response(body: Any, uid: str, version: str, *, mutating: bool) -> dict[str, Any]:
    """webhookrequest.VerifyAdmissionResponse: the `response` of a valid AdmissionReview."""
    if not isinstance(body, dict) or not body.get("kind"):
        raise _CallError(f"failed to call webhook: Object 'Kind' is missing in '{json.dumps(body)}'")
    invalid = "received invalid webhook response: "
    response = body.get("response")
    if not isinstance(response, dict):
        raise _CallError(invalid + "webhook response was absent")
    if response.get("uid") != uid:
        raise _CallError(invalid + f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    expected = f"admission.k8s.io/{version}"
    if body.get("apiVersion") != expected or body.get("kind") != "AdmissionReview":
        group, _, got_version = str(body.get("apiVersion", "")).rpartition("/")
        raise _CallError(
            invalid + f"expected webhook response of {expected}, Kind=AdmissionReview, "
            f"got {group}/{got_version}, Kind={body.get('kind')}"
        )
    has_patch = bool(response.get("patch"))
    has_type = "patchType" in response and response["patchType"] is not None
    if mutating:
        if has_patch and not has_type:
            raise _CallError(invalid + "webhook returned response.patch but not response.patchType")
        if has_type and not has_patch:
            raise _CallError(invalid + "webhook returned response.patchType but not response.patch")
        if has_type and not response["patchType"]:
            raise _CallError(invalid + 'webhook returned invalid response.patchType of ""')
    else:
        if has_patch:
            raise _CallError(invalid + "validating webhook may not return response.patch")
        if has_type:
            raise _CallError(invalid + "validating webhook may not return response.patchType")
    return response
