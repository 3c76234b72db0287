"""The webhook under hostile or huge reviews: bounded answers, a live event loop, deadlines,
a connection cap, nesting refused as a field error."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import aiohttp
import orjson
import pytest
from serving import closed_within
from webhooks import client_context

from kubetrain.certs.generate import CertificateBundle
from kubetrain.jobs.defaulting import default_job
from kubetrain.serving.guard import ConnectionLimits
from kubetrain.webhook.decider import Decider
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse, request_review
from kubetrain.webhook.server import WebhookServer

LIMITS = ConnectionLimits(header_timeout=0.3, body_timeout=0.3, idle_timeout=0.3, max_connections=4)


def pytorchjob(*containers: dict[str, Any]) -> dict[str, Any]:
    """PyTorchJob `big` in team-a, defaulted: 2 Workers running `containers` (one plain
    `pytorch` container when none is given)."""
    return default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "big", "namespace": "team-a"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Worker": {
                        "replicas": 2,
                        "template": {
                            "spec": {"containers": list(containers) or [{"name": "pytorch", "image": "p"}]}
                        },
                    }
                }
            },
        }
    ).obj


@pytest.fixture
def webhook_options() -> dict[str, Any]:
    return {"limits": LIMITS}


async def validate(
    session: aiohttp.ClientSession, server: WebhookServer, obj: Any, deep: bytes = b""
) -> tuple[int, bytes]:
    """POST a review of `obj`; the string "DEEP" in it is replaced by the JSON text `deep`."""
    body = orjson.dumps(request_review(obj))
    if deep:
        body = body.replace(b'"DEEP"', deep)
    async with session.post(
        server.url + "/validate", data=body, headers={"Content-Type": "application/json"}
    ) as r:
        return r.status, await r.read()


async def test_many_unknown_fields_get_a_bounded_answer(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    container = {"name": "pytorch", "image": "p", **{f"junk{i}": i for i in range(5_000)}}
    started = time.perf_counter()
    status, body = await validate(session, server, pytorchjob(container))
    elapsed = time.perf_counter() - started
    assert status == 200
    response = json.loads(body)["response"]
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert 'unknown field "junk0"' in message
    assert "too many problems: only the first 100 are reported" in message
    assert len(body) < 64 * 1024  # not one error line per unknown field
    assert elapsed < 5


async def test_a_map_with_too_many_fields_is_refused_before_the_schema_check(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    container = {"name": "pytorch", "image": "p", **{f"f{i}": i for i in range(125_000)}}
    started = time.perf_counter()
    status, body = await validate(session, server, pytorchjob(container))
    assert status == 200 and time.perf_counter() - started < 2
    message = json.loads(body)["response"]["status"]["message"]
    assert message == (
        'PyTorchJob "big" is invalid: spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]: '
        "Invalid: has 125003 fields; at most 10000 are accepted (in the object)"
    )


async def test_healthz_answers_while_a_review_is_being_decided(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    class SlowDecider(Decider):
        def validate(self, request: AdmissionRequest) -> AdmissionResponse:
            time.sleep(0.8)  # CPU-bound deciding (a thread holding the interpreter)
            return AdmissionResponse.allow(request.uid)

    server.decider = SlowDecider  # type: ignore[method-assign]
    large = pytorchjob()
    large["metadata"]["annotations"] = {"padding": "x" * 100_000}  # over INLINE_BYTES: off the loop
    review = asyncio.create_task(validate(session, server, large))
    await asyncio.sleep(0.1)
    async with session.get(server.url + "/healthz") as r:
        assert r.status == 200
    # answered while the review is still being decided (not queued behind it): an ordering,
    # not a wall-clock bound, so a loaded machine cannot fail it
    assert not review.done()
    status, _ = await review
    assert status == 200


async def test_deep_nesting_is_a_field_error_not_a_500(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    deep = b'{"a":' * 990 + b'"x"' + b"}" * 990  # as a client would send it (no Python recursion)
    job = pytorchjob({"name": "pytorch", "image": "p", "env": [{"name": "X", "valueFrom": "DEEP"}]})
    status, body = await validate(session, server, job, deep)
    assert status == 200
    response = json.loads(body)["response"]
    assert response["allowed"] is False and response["status"]["code"] == 422
    message = response["status"]["message"]
    assert "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[0].valueFrom.a.a" in message
    assert "nested more than 64 objects or lists deep" in message
    assert "RecursionError" not in message


async def open_tls(server: WebhookServer, bundle: CertificateBundle) -> tuple[Any, Any]:
    return await asyncio.open_connection("127.0.0.1", server.port, ssl=client_context(bundle))


async def test_idle_and_partial_header_connections_are_closed(
    server: WebhookServer, bundle: CertificateBundle
) -> None:
    idle_reader, idle = await open_tls(server, bundle)
    partial_reader, partial = await open_tls(server, bundle)
    partial.write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
    assert await closed_within(idle_reader, 3)
    assert await closed_within(partial_reader, 3)
    assert server.guard.expired >= 2
    for w in (idle, partial):
        w.close()


async def test_stalled_body_is_dropped_without_an_error_log(
    server: WebhookServer, bundle: CertificateBundle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    reader, writer = await open_tls(server, bundle)
    writer.write(
        b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n" + b" " * 1000
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readline(), 3)
    assert b"408" in head
    assert await closed_within(reader, 2)  # the rest of the body is not waited for
    # and a client that goes away mid-upload
    _reader2, writer2 = await open_tls(server, bundle)
    writer2.write(
        b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n" + b" " * 1000
    )
    await writer2.drain()
    writer2.transport.abort()
    # Polled until the server logged the aborted upload (30 s: a hang guard, not a budget).
    for _ in range(600):
        if any("did not send its whole request body" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.05)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("did not send its whole request body" in r.getMessage() for r in caplog.records)
    writer.close()


async def test_connections_past_the_cap_are_closed(server: WebhookServer, bundle: CertificateBundle) -> None:
    held = [await open_tls(server, bundle) for _ in range(LIMITS.max_connections)]
    reader, _ = await open_tls(server, bundle)
    assert await closed_within(reader, 1)
    assert server.guard.refused >= 1
    for _, w in held:
        w.close()


async def test_keepalive_connection_serves_several_reviews(
    server: WebhookServer, session: aiohttp.ClientSession
) -> None:
    for _ in range(3):
        status, _ = await validate(session, server, pytorchjob())
        assert status == 200
