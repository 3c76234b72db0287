"""Fuzzing the webhook over HTTP: any body gets a well-formed AdmissionReview or a 400, never a 5xx.

Also: for any job-shaped object, the mutate patch applies and gives exactly the defaulted object.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.certs.generate import generate_bundle
from kubetrain.certs.tls import write_cert_dir
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.mutate import json_patch
from kubetrain.webhook.review import request_review
from kubetrain.webhook.server import WebhookServer

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)  # JSON has neither
    | st.text(max_size=8)
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
REPLICA_TYPES = [
    "Worker",
    "worker",
    "Master",
    "Chief",
    "PS",
    "Evaluator",
    "Scheduler",
    "Server",
    "Tuner",
    "Bogus",
]
KINDS = sorted(FRAMEWORKS)


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    """Job-shaped objects: mostly well-typed, with random junk where users make mistakes."""
    kind = draw(st.sampled_from(KINDS))
    field = FRAMEWORKS[kind].replica_field
    container: dict[str, Any] = {
        "name": draw(st.sampled_from([*(f.container_name for f in FRAMEWORKS.values()), "main"])),
        "image": draw(st.sampled_from(["img:1", "", None])),
    }
    if draw(st.booleans()):
        container["ports"] = draw(
            st.lists(
                st.fixed_dictionaries({"name": st.text(max_size=12), "containerPort": json_leaf}), max_size=2
            )
        )
    if draw(st.booleans()):
        container["resources"] = {"limits": {"cpu": draw(json_leaf)}}
    spec_map = {
        draw(st.sampled_from(REPLICA_TYPES)): {
            "replicas": draw(st.integers(-2, 5) | json_leaf),
            "restartPolicy": draw(st.sampled_from(["Never", "OnFailure", "Always", "ExitCode", "Sometimes"])),
            "template": {"spec": {"containers": draw(st.lists(st.just(container), max_size=2))}},
        }
        for _ in range(draw(st.integers(0, 3)))
    }
    spec: dict[str, Any] = {field: draw(st.just(spec_map) | json_value)}
    if draw(st.booleans()):
        spec["runPolicy"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "cleanPodPolicy": st.sampled_from(["All", "Running", "None", "Bad"]),
                    "backoffLimit": st.integers(-1, 3) | json_leaf,
                    "schedulingPolicy": st.fixed_dictionaries({}, optional={"minAvailable": json_leaf}),
                    "suspend": json_leaf,
                },
            )
        )
    if kind == "PyTorchJob" and draw(st.booleans()):
        spec["elasticPolicy"] = draw(
            st.fixed_dictionaries(
                {}, optional={"minReplicas": json_leaf, "maxReplicas": json_leaf, "nProcPerNode": json_leaf}
            )
        )
    if draw(st.booleans()):
        spec[draw(st.text(max_size=6))] = draw(json_value)
    job = {
        "apiVersion": "kubetrain.io/v1",
        "kind": kind,
        "metadata": {"name": draw(st.sampled_from(["ok", "Bad_Name", "x" * 70, ""])), "namespace": "fuzz"},
        "spec": spec,
    }
    return json.loads(json.dumps(job))  # what arrives over the wire: no shared sub-objects


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[WebhookServer]:
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    write_cert_dir(tmp_path, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    srv = WebhookServer(cert_dir=str(tmp_path), host="127.0.0.1", port=0, cert_poll_interval=3600)
    await srv.start()
    srv.ca_pem = bundle.ca.cert_pem  # type: ignore[attr-defined]
    yield srv
    await srv.stop()


async def post(
    server: WebhookServer, path: str, body: bytes, content_type: str = "application/json"
) -> tuple[int, bytes]:
    import ssl

    ctx = ssl.create_default_context(cadata=server.ca_pem.decode())  # type: ignore[attr-defined]
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as s,
        s.post(server.url + path, data=body, headers={"Content-Type": content_type}) as r,
    ):
        return r.status, await r.read()


def assert_well_formed(status: int, body: bytes, uid: str | None = None) -> dict[str, Any] | None:
    assert status in (200, 400), (status, body[:300])
    if status == 400:
        assert b"Traceback" not in body and body.startswith(b"bad AdmissionReview request: ")
        return None
    review = json.loads(body)
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    resp = review["response"]
    assert isinstance(resp["allowed"], bool) and isinstance(resp["uid"], str) and resp["uid"]
    if uid is not None:
        assert resp["uid"] == uid
    if not resp["allowed"]:
        assert resp["status"]["code"] != 500, resp["status"]  # an internal error is a bug
        assert resp["status"]["message"]
    return resp  # type: ignore[no-any-return]


@FUZZ
@given(body=st.binary(max_size=300) | json_value.map(lambda v: json.dumps(v).encode()))
async def test_arbitrary_bodies(server: WebhookServer, body: bytes) -> None:
    for path in ("/mutate", "/validate"):
        assert_well_formed(*await post(server, path, body))


@FUZZ
@given(
    request=st.dictionaries(
        st.sampled_from(
            ["uid", "kind", "operation", "object", "oldObject", "dryRun", "name", "namespace", "subResource"]
        ),
        json_value,
        max_size=9,
    )
)
async def test_arbitrary_request_envelopes(server: WebhookServer, request: dict[str, Any]) -> None:
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()
    for path in ("/mutate", "/validate"):
        assert_well_formed(*await post(server, path, body))


@FUZZ
@given(job=jobs(), operation=st.sampled_from(["CREATE", "UPDATE"]), old=jobs())
async def test_job_specs_answered_and_patch_gives_the_defaults(
    server: WebhookServer, job: dict[str, Any], operation: str, old: dict[str, Any]
) -> None:
    review = request_review(
        job, operation=operation, old=old if operation == "UPDATE" else None, uid="fuzz-uid"
    )
    status, body = await post(server, "/mutate", json.dumps(review).encode())
    resp = assert_well_formed(status, body, "fuzz-uid")
    assert resp is not None and resp["allowed"] is True
    patched = copy.deepcopy(job)
    if "patch" in resp:
        patched = jsonpatch.apply_patch(job, json.loads(base64.b64decode(resp["patch"])))
    assert patched == default_job(job).obj
    review["request"]["object"] = patched
    assert_well_formed(*await post(server, "/validate", json.dumps(review).encode()), "fuzz-uid")


@settings(max_examples=300, deadline=None)
@given(src=json_value, dst=json_value)
def test_json_patch_turns_src_into_dst(src: Any, dst: Any) -> None:
    assert jsonpatch.apply_patch(src, json_patch(src, dst)) == dst


ENVELOPE = b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": '


@pytest.mark.parametrize(
    "body",
    [
        ENVELOPE + b'{"uid": "u", "x": NaN}}',
        ENVELOPE + b'{"uid": "u", "x": Infinity}}',
        ENVELOPE + b'{"uid": "u", "x": 1e999999}}',
        ENVELOPE + b'{"uid": "\\ud800"}}',
        ENVELOPE + b'{"uid": "\xff"}}',
        b"[" * 2000 + b"]" * 2000,
    ],
)
async def test_bodies_that_are_not_strict_json_get_a_400(server: WebhookServer, body: bytes) -> None:
    status, _ = await post(server, "/validate", body)
    assert status == 400
