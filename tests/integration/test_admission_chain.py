"""The devcluster admission chain against a real HTTPS webhook server on loopback."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubetrain.certs.generate import generate_bundle, generate_ca
from kubetrain.devcluster.admission.chain import AdmissionAttributes, AdmissionChain

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | web.StreamResponse]]


@dataclass
class Webhook:
    """An HTTPS server whose answer per path is set by the test."""

    port: int
    ca_bundle: str  # base64 PEM, as stored in a webhook configuration
    other_ca_bundle: str  # a CA that did not sign the server certificate
    handlers: dict[str, Handler] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def allow(self, path: str, **response: Any) -> None:
        async def handler(review: dict[str, Any]) -> dict[str, Any]:
            return reply(review, allowed=True, **response)

        self.handlers[path] = handler


def reply(review: dict[str, Any], **response: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], **response},
    }


def patch_of(ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"patch": base64.b64encode(json.dumps(ops).encode()).decode(), "patchType": "JSONPatch"}


def _server_tls() -> tuple[ssl.SSLContext, str, str]:
    """A server context for hook.default.svc and 127.0.0.1, its CA bundle and an unrelated one."""
    bundle = generate_bundle(["hook.default.svc"], ["127.0.0.1"])
    other_ca = generate_ca(common_name="other-ca")
    with tempfile.TemporaryDirectory() as tmp:
        cert_file, key_file = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert_file.write_bytes(bundle.serving.cert_pem)
        key_file.write_bytes(bundle.serving.key_pem)
        server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ssl.load_cert_chain(cert_file, key_file)
    return (
        server_ssl,
        base64.b64encode(bundle.ca_bundle).decode(),
        base64.b64encode(other_ca.cert_pem).decode(),
    )


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    server_ssl, ca_bundle, other_ca_bundle = _server_tls()
    state = Webhook(0, ca_bundle, other_ca_bundle)

    async def handle(request: web.Request) -> web.StreamResponse:
        review = await request.json()
        state.requests.setdefault(request.path_qs, []).append(review)
        state.requests.setdefault(request.path, []).append(review)
        state.hosts.append(request.headers.get("Host", ""))
        handler = state.handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no handler")
        answer = await handler(review)
        if isinstance(answer, web.StreamResponse):
            return answer
        return web.json_response(answer)

    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl)
    await site.start()
    state.port = runner.addresses[0][1]
    try:
        yield state
    finally:
        await runner.cleanup()


@pytest.fixture
async def chain(webhook: Webhook) -> AsyncIterator[AdmissionChain]:
    async with AdmissionChain({("default", "hook", 443): webhook.port}) as c:
        yield c


def config(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "webhooks": list(hooks)}


def hook(
    name: str, client_config: dict[str, Any], *, operations: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "clientConfig": client_config,
        "rules": [
            {
                "operations": operations or ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    spec.update(extra)
    return spec


def url_client(wh: Webhook, path: str, ca: str | None = None) -> dict[str, Any]:
    return {"url": wh.url(path), "caBundle": ca if ca is not None else wh.ca_bundle}


def pod_attrs(**overrides: Any) -> AdmissionAttributes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker-0", "namespace": "default", "labels": {"app": "train"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    values: dict[str, Any] = {
        "operation": "CREATE",
        "group": "",
        "version": "v1",
        "resource": "pods",
        "kind": ("", "v1", "Pod"),
        "namespace": "default",
        "name": "worker-0",
        "obj": pod,
        "user_info": {"username": "alice", "groups": ["system:authenticated"]},
        "namespace_labels": {"kubernetes.io/metadata.name": "default"},
    }
    values.update(overrides)
    return AdmissionAttributes(**values)


async def test_review_request_carries_the_request_attributes(webhook: Webhook, chain: AdmissionChain) -> None:
    webhook.allow("/validate")
    outcome = await chain.admit(
        pod_attrs(), [], [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))]
    )
    assert outcome.allowed
    [review] = webhook.requests["/validate?timeout=10s"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    request = review["request"]
    assert request["uid"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["requestKind"] == request["kind"]
    assert request["operation"] == "CREATE"
    assert request["name"] == "worker-0"
    assert request["namespace"] == "default"
    assert request["userInfo"]["username"] == "alice"
    assert request["object"]["metadata"]["labels"] == {"app": "train"}
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}


async def test_denial_is_worded_as_kube_apiserver(webhook: Webhook, chain: AdmissionChain) -> None:
    async def deny(review: dict[str, Any]) -> dict[str, Any]:
        return reply(review, allowed=False, status={"code": 403, "message": "spec.replicas must be > 0"})

    webhook.handlers["/validate"] = deny
    outcome = await chain.admit(
        pod_attrs(), [], [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))]
    )
    assert not outcome.allowed
    assert outcome.status_code == 403
    assert (
        outcome.message == 'admission webhook "v.kubetrain.io" denied the request: spec.replicas must be > 0'
    )
    assert outcome.status is not None
    assert outcome.status["kind"] == "Status"
    assert outcome.status["status"] == "Failure"


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (None, 400, 'admission webhook "v.kubetrain.io" denied the request without explanation'),
        ({"code": 200}, 400, 'admission webhook "v.kubetrain.io" denied the request without explanation'),
        ({"reason": "Forbidden"}, 400, 'admission webhook "v.kubetrain.io" denied the request: Forbidden'),
        ({"code": 422, "message": "bad"}, 422, 'admission webhook "v.kubetrain.io" denied the request: bad'),
    ],
)
async def test_denial_without_message_or_code(
    webhook: Webhook, chain: AdmissionChain, status: dict[str, Any] | None, code: int, message: str
) -> None:
    async def deny(review: dict[str, Any]) -> dict[str, Any]:
        return reply(review, allowed=False, **({"status": status} if status is not None else {}))

    webhook.handlers["/validate"] = deny
    outcome = await chain.admit(
        pod_attrs(), [], [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))]
    )
    assert (outcome.allowed, outcome.status_code, outcome.message) == (False, code, message)


async def test_mutating_patches_apply_in_configuration_name_order(
    webhook: Webhook, chain: AdmissionChain
) -> None:
    async def first(review: dict[str, Any]) -> dict[str, Any]:
        return reply(
            review, allowed=True, **patch_of([{"op": "add", "path": "/metadata/labels/order", "value": "a"}])
        )

    async def second(review: dict[str, Any]) -> dict[str, Any]:
        seen = review["request"]["object"]["metadata"]["labels"].get("order")
        value = f"{seen}b"
        return reply(
            review,
            allowed=True,
            warnings=["second was here"],
            **patch_of([{"op": "replace", "path": "/metadata/labels/order", "value": value}]),
        )

    webhook.handlers["/first"] = first
    webhook.handlers["/second"] = second
    configs = [
        config("z-second", hook("second.kubetrain.io", url_client(webhook, "/second"))),
        config("a-first", hook("first.kubetrain.io", url_client(webhook, "/first"))),
    ]
    attrs = pod_attrs()
    outcome = await chain.admit(attrs, configs, [])
    assert outcome.allowed
    assert outcome.obj is not None
    assert outcome.obj["metadata"]["labels"]["order"] == "ab"
    assert outcome.warnings == ["second was here"]
    assert attrs.obj is not None and "order" not in attrs.obj["metadata"]["labels"]  # input untouched


async def test_validating_webhooks_see_the_mutated_object(webhook: Webhook, chain: AdmissionChain) -> None:
    webhook.allow(
        "/mutate", **patch_of([{"op": "add", "path": "/metadata/annotations", "value": {"m": "1"}}])
    )
    webhook.allow("/validate")
    await chain.admit(
        pod_attrs(),
        [config("m", hook("m.kubetrain.io", url_client(webhook, "/mutate")))],
        [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))],
    )
    assert webhook.requests["/validate"][0]["request"]["object"]["metadata"]["annotations"] == {"m": "1"}


async def test_service_reference_resolves_through_the_port_map_with_svc_server_name(
    webhook: Webhook, chain: AdmissionChain
) -> None:
    webhook.allow("/validate")
    service = {
        "service": {"namespace": "default", "name": "hook", "path": "/validate"},
        "caBundle": webhook.ca_bundle,
    }
    outcome = await chain.admit(pod_attrs(), [], [config("v", hook("v.kubetrain.io", service))])
    assert outcome.allowed, outcome.message
    assert webhook.hosts == ["hook.default.svc:443"]


async def test_service_certificate_must_match_the_service_name(webhook: Webhook) -> None:
    webhook.allow("/validate")
    # "other" resolves to the same server, whose certificate is only valid for hook.default.svc.
    async with AdmissionChain({("default", "other", 8443): webhook.port}) as chain:
        service = {
            "service": {"namespace": "default", "name": "other", "path": "/validate", "port": 8443},
            "caBundle": webhook.ca_bundle,
        }
        outcome = await chain.admit(pod_attrs(), [], [config("v", hook("v.kubetrain.io", service))])
    assert not outcome.allowed
    assert outcome.status_code == 500
    assert outcome.message.startswith(
        'Internal error occurred: failed calling webhook "v.kubetrain.io": failed to call webhook: '
        'Post "https://other.default.svc:8443/validate?timeout=10s": tls: failed to verify certificate'
    )
    assert webhook.requests == {}


async def test_unresolvable_service_fails_closed(chain: AdmissionChain) -> None:
    service = {"service": {"namespace": "ops", "name": "missing"}}
    outcome = await chain.admit(pod_attrs(), [], [config("v", hook("v.kubetrain.io", service))])
    assert outcome.status_code == 500
    assert outcome.message == (
        'Internal error occurred: failed calling webhook "v.kubetrain.io": failed to call webhook: '
        'Post "https://missing.ops.svc:443/?timeout=10s": service "missing" not found'
    )


async def test_wrong_ca_bundle_fails_closed_by_default_and_open_with_ignore(
    webhook: Webhook, chain: AdmissionChain
) -> None:
    webhook.allow("/validate")
    client = url_client(webhook, "/validate", ca=webhook.other_ca_bundle)
    outcome = await chain.admit(pod_attrs(), [], [config("v", hook("v.kubetrain.io", client))])
    assert not outcome.allowed
    assert outcome.status_code == 500
    assert outcome.reason == "InternalError"
    assert outcome.message == (
        'Internal error occurred: failed calling webhook "v.kubetrain.io": failed to call webhook: '
        f'Post "{webhook.url("/validate")}?timeout=10s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    ignoring = hook("v.kubetrain.io", client, failurePolicy="Ignore")
    assert (await chain.admit(pod_attrs(), [], [config("v", ignoring)])).allowed
    assert webhook.requests == {}


async def test_connection_refused(chain: AdmissionChain) -> None:
    client = {"url": "https://127.0.0.1:1/validate"}
    outcome = await chain.admit(pod_attrs(), [], [config("v", hook("v.kubetrain.io", client))])
    assert outcome.message == (
        'Internal error occurred: failed calling webhook "v.kubetrain.io": failed to call webhook: '
        'Post "https://127.0.0.1:1/validate?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused'
    )
    mutating = hook("m.kubetrain.io", client, failurePolicy="Ignore")
    outcome = await chain.admit(pod_attrs(), [config("m", mutating)], [])
    assert outcome.allowed
    assert outcome.obj == pod_attrs().obj


async def test_timeout_seconds(webhook: Webhook, chain: AdmissionChain) -> None:
    release = asyncio.Event()

    async def slow(review: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return reply(review, allowed=True)

    webhook.handlers["/slow"] = slow
    slow_hook = hook("slow.kubetrain.io", url_client(webhook, "/slow"), timeoutSeconds=1)
    try:
        outcome = await asyncio.wait_for(chain.admit(pod_attrs(), [], [config("v", slow_hook)]), 10)
    finally:
        release.set()
    assert outcome.message == (
        'Internal error occurred: failed calling webhook "slow.kubetrain.io": failed to call webhook: '
        f'Post "{webhook.url("/slow")}?timeout=1s": context deadline exceeded'
    )
    assert "/slow?timeout=1s" in webhook.requests


async def test_non_200_answer(webhook: Webhook, chain: AdmissionChain) -> None:
    async def broken(review: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=500, text="boom")

    webhook.handlers["/validate"] = broken
    outcome = await chain.admit(
        pod_attrs(), [], [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))]
    )
    assert outcome.message == (
        'Internal error occurred: failed calling webhook "v.kubetrain.io": failed to call webhook: '
        'an error on the server ("boom") has prevented the request from succeeding'
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            lambda r: {**reply(r, allowed=True), "response": {"uid": "not-the-request", "allowed": True}},
            'received invalid webhook response: expected response.uid="{uid}", got "not-the-request"',
        ),
        (
            lambda r: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
            "received invalid webhook response: webhook response was absent",
        ),
        (
            lambda r: reply(r, allowed=True, **patch_of([])),
            "received invalid webhook response: validating webhook may not return response.patch",
        ),
    ],
)
async def test_malformed_responses_follow_failure_policy(
    webhook: Webhook, chain: AdmissionChain, answer: Callable[[dict[str, Any]], dict[str, Any]], reason: str
) -> None:
    async def handler(review: dict[str, Any]) -> dict[str, Any]:
        return answer(review)

    webhook.handlers["/validate"] = handler
    outcome = await chain.admit(
        pod_attrs(), [], [config("v", hook("v.kubetrain.io", url_client(webhook, "/validate")))]
    )
    uid = webhook.requests["/validate"][0]["request"]["uid"]
    assert outcome.status_code == 500
    assert (
        outcome.message
        == 'Internal error occurred: failed calling webhook "v.kubetrain.io": ' + reason.format(uid=uid)
    )
    ignoring = hook("v.kubetrain.io", url_client(webhook, "/validate"), failurePolicy="Ignore")
    assert (await chain.admit(pod_attrs(), [], [config("v", ignoring)])).allowed


async def test_dry_run_requires_side_effect_free_webhooks(webhook: Webhook, chain: AdmissionChain) -> None:
    webhook.allow("/validate")
    some = hook(
        "v.kubetrain.io", url_client(webhook, "/validate"), sideEffects="Some", failurePolicy="Ignore"
    )
    outcome = await chain.admit(pod_attrs(dry_run=True), [], [config("v", some)])
    assert (outcome.allowed, outcome.status_code) == (False, 400)
    assert outcome.message == 'admission webhook "v.kubetrain.io" does not support dry run'
    assert webhook.requests == {}

    none = hook("v.kubetrain.io", url_client(webhook, "/validate"), sideEffects="NoneOnDryRun")
    assert (await chain.admit(pod_attrs(dry_run=True), [], [config("v", none)])).allowed
    request = webhook.requests["/validate"][0]["request"]
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]


async def test_rules_and_selectors_decide_who_is_called(webhook: Webhook, chain: AdmissionChain) -> None:
    webhook.allow("/validate")
    client = url_client(webhook, "/validate")
    configs = [
        config(
            "v",
            hook("updates-only.kubetrain.io", client, operations=["UPDATE"]),
            hook("other-ns.kubetrain.io", client, namespaceSelector={"matchLabels": {"team": "b"}}),
            hook("serving.kubetrain.io", client, objectSelector={"matchLabels": {"app": "serve"}}),
        )
    ]
    assert (await chain.admit(pod_attrs(), [], configs)).allowed
    assert webhook.requests == {}


async def test_reinvocation_if_needed(webhook: Webhook, chain: AdmissionChain) -> None:
    calls: list[str] = []

    async def watcher(review: dict[str, Any]) -> dict[str, Any]:
        calls.append("watcher:" + review["request"]["object"]["metadata"]["labels"].get("late", "-"))
        return reply(review, allowed=True)

    async def late(review: dict[str, Any]) -> dict[str, Any]:
        calls.append("late")
        labels = review["request"]["object"]["metadata"]["labels"]
        if "late" in labels:
            return reply(review, allowed=True)
        return reply(
            review, allowed=True, **patch_of([{"op": "add", "path": "/metadata/labels/late", "value": "x"}])
        )

    webhook.handlers["/watcher"] = watcher
    webhook.handlers["/late"] = late
    configs = [
        config(
            "a", hook("watcher.kubetrain.io", url_client(webhook, "/watcher"), reinvocationPolicy="IfNeeded")
        ),
        config("b", hook("late.kubetrain.io", url_client(webhook, "/late"), reinvocationPolicy="IfNeeded")),
    ]
    outcome = await chain.admit(pod_attrs(), configs, [])
    assert outcome.allowed
    # The watcher ran before "late" changed the object, so it is called once more; "late" is not.
    assert calls == ["watcher:-", "late", "watcher:x"]

    calls.clear()
    configs[0]["webhooks"][0]["reinvocationPolicy"] = "Never"
    await chain.admit(pod_attrs(), configs, [])
    assert calls == ["watcher:-", "late"]


async def test_validating_webhooks_run_concurrently(webhook: Webhook, chain: AdmissionChain) -> None:
    arrived = 0
    both_here = asyncio.Event()

    async def barrier(review: dict[str, Any]) -> dict[str, Any]:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both_here.set()
        await asyncio.wait_for(both_here.wait(), 5)
        return reply(review, allowed=True, warnings=[f"seen {arrived}"])

    webhook.handlers["/a"] = barrier
    webhook.handlers["/b"] = barrier
    configs = [
        config(
            "v",
            hook("a.kubetrain.io", url_client(webhook, "/a")),
            hook("b.kubetrain.io", url_client(webhook, "/b")),
        )
    ]
    outcome = await chain.admit(pod_attrs(), [], configs)
    assert outcome.allowed, outcome.message
    assert outcome.warnings == ["seen 2", "seen 2"]


async def test_patch_on_delete_is_an_internal_error(webhook: Webhook, chain: AdmissionChain) -> None:
    webhook.allow("/mutate", **patch_of([{"op": "add", "path": "/metadata/labels/x", "value": "y"}]))
    attrs = pod_attrs(operation="DELETE", obj=None, old_obj=pod_attrs().obj)
    mutating = hook(
        "m.kubetrain.io", url_client(webhook, "/mutate"), operations=["DELETE"], failurePolicy="Ignore"
    )
    outcome = await chain.admit(attrs, [config("m", mutating)], [])
    assert outcome.status_code == 500
    assert outcome.message == (
        'Internal error occurred: admission webhook "m.kubetrain.io" attempted to modify the object, '
        "which is not supported for this operation"
    )
    assert webhook.requests["/mutate"][0]["request"]["options"]["kind"] == "DeleteOptions"


async def test_webhook_configurations_never_go_to_webhooks(webhook: Webhook, chain: AdmissionChain) -> None:
    everything = hook("all.kubetrain.io", url_client(webhook, "/validate"))
    everything["rules"] = [
        {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    ]
    attrs = pod_attrs(
        group="admissionregistration.k8s.io",
        resource="validatingwebhookconfigurations",
        namespace="",
        obj={"metadata": {"name": "x"}},
    )
    assert (await chain.admit(attrs, [config("m", everything)], [config("v", everything)])).allowed
    assert webhook.requests == {}
