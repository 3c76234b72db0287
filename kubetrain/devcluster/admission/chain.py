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
- Matching (see `match`): rules, namespaceSelector, objectSelector, scope.
  matchPolicy Equivalent behaves as Exact, except that a custom resource served through a
  conversion webhook is admitted at its storage version (apiserver/verbs/conversion.py), with
  requestKind naming the client's version; matchConditions (CEL) are not evaluated.
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

Where it lives: this module is the chain (ordering, reinvocation, parallel validation,
failurePolicy); `match` decides whether a webhook applies; `review` builds the AdmissionReview,
verifies the answer, applies patches and words every error; `client` resolves the endpoint and
makes the HTTPS call.

AdmissionAttributes carry `options` (the Create/Update/DeleteOptions object sent to webhooks);
AdmissionOutcome carries `reason` and `status` (the full metav1.Status body to return).
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from dataclasses import replace
from typing import Any

from kubetrain.devcluster.admission.client import WebhookClient
from kubetrain.devcluster.admission.match import MatchError, is_exempt_resource, webhook_applies
from kubetrain.devcluster.admission.review import (
    DEFAULT_TIMEOUT_SECONDS,
    MAX_TIMEOUT_SECONDS,
    AdmissionAttributes,
    AdmissionOutcome,
    CallError,
    Hook,
    Rejected,
    apply_patch,
    build_request,
    calling_error_status,
    check_dry_run,
    default_options,
    denial_status,
    hooks,
    rejection,
    review_version,
    timeout_seconds,
    verify_response,
)

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_TIMEOUT_SECONDS",
    "AdmissionAttributes",
    "AdmissionChain",
    "AdmissionOutcome",
    "build_request",
    "calling_error_status",
    "default_options",
    "denial_status",
    "verify_response",
]


class AdmissionChain:
    def __init__(self, service_ports: dict[tuple[str, str, int], int] | None = None) -> None:
        self._client = WebhookClient(service_ports)

    @property
    def client(self) -> WebhookClient:
        """The HTTPS client webhooks are called with (CRD conversion webhooks use it too)."""
        return self._client

    @property
    def service_ports(self) -> dict[tuple[str, str, int], int]:
        """(namespace, service, port) -> loopback port for webhook service references (mutable)."""
        return self._client.service_ports

    @service_ports.setter
    def service_ports(self, value: dict[tuple[str, str, int], int]) -> None:
        self._client.service_ports = value

    async def __aenter__(self) -> AdmissionChain:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._client.close()

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
        ordered = hooks(configs)
        previously_invoked: set[str] = set()
        reinvoke: set[str] = set()
        should_reinvoke = False
        for round_ in (0, 1):
            if round_ == 1 and not should_reinvoke:
                break
            for hook in ordered:
                current = replace(attrs, obj=obj)
                try:
                    if not self._applies(hook, current):
                        continue
                except MatchError as exc:
                    return rejection(exc.status, warnings, obj)
                if round_ == 1 and hook.key not in reinvoke:
                    continue
                changed = False
                try:
                    response = await self._call(hook, current, mutating=True, warnings=warnings)
                    new_obj = apply_patch(hook, response, obj)
                    changed = new_obj != obj
                    obj = new_obj
                except CallError as exc:
                    if not hook.ignore_failures:
                        return rejection(calling_error_status(hook.name, str(exc)), warnings, obj)
                except Rejected as exc:
                    return rejection(exc.status, warnings, obj)
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
        relevant: list[Hook] = []
        for hook in hooks(configs):
            try:
                if self._applies(hook, attrs):
                    relevant.append(hook)
            except MatchError as exc:
                return rejection(exc.status, [], obj)
        per_hook_warnings: list[list[str]] = [[] for _ in relevant]
        results = await asyncio.gather(
            *(self._validate_one(h, attrs, w) for h, w in zip(relevant, per_hook_warnings, strict=True))
        )
        warnings = [w for ws in per_hook_warnings for w in ws]
        for status in results:
            if status is not None:
                return rejection(status, warnings, obj)
        return AdmissionOutcome(True, obj, warnings)

    async def _validate_one(
        self, hook: Hook, attrs: AdmissionAttributes, warnings: list[str]
    ) -> dict[str, Any] | None:
        try:
            await self._call(hook, attrs, mutating=False, warnings=warnings)
        except CallError as exc:
            if hook.ignore_failures:
                return None
            return calling_error_status(hook.name, str(exc))
        except Rejected as exc:
            return exc.status
        return None

    def _applies(self, hook: Hook, attrs: AdmissionAttributes) -> bool:
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
        self, hook: Hook, attrs: AdmissionAttributes, *, mutating: bool, warnings: list[str]
    ) -> dict[str, Any]:
        """Call one webhook; return its verified, allowed `response`. Raises CallError/Rejected."""
        if attrs.dry_run:
            check_dry_run(hook)
        version = review_version(hook)
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": f"admission.k8s.io/{version}",
            "kind": "AdmissionReview",
            "request": build_request(uid, attrs),
        }
        timeout = timeout_seconds(hook.webhook)
        endpoint = self._client.endpoint(hook.webhook.get("clientConfig") or {}, timeout)
        body = await self._client.post(endpoint, review, timeout)
        response = verify_response(body, uid, version, mutating=mutating)
        warnings.extend(str(w) for w in response.get("warnings") or [])
        if not response.get("allowed"):
            raise Rejected(denial_status(hook.name, response.get("status")))
        return response
