"""TensorBoard (`kubedl.io/tensorboard-config`) through the real controller against devcluster,
with a FakeClock in the controller: the pod, Service and Ingress are created, the address is in
the status and an event, the TensorBoard pod counts for nothing of the job, an annotation change
replaces the pod, and everything is deleted exactly at ttlSecondsAfterJobFinished after the job
finished (no real time slept for the TTL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import INGRESSES, PODS, SERVICES, job_resource
from kubetrain.operator.status import parse_time

from .controller_support import (
    Harness,
    eventually,
    job_manifest,
    open_clocked_stack,
    refusal,
    replica_status,
    ticking,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.3
TFJOBS = job_resource("TFJob")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for triple in open_clocked_stack(START):
        yield triple


def config(**extra: Any) -> dict[str, str]:
    value = {"logDir": "/logs/run", "ttlSecondsAfterJobFinished": 600, **extra}
    return {"kubedl.io/tensorboard-config": json.dumps(value)}


async def test_tensorboard_lives_for_its_ttl_after_the_job_and_never_counts(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await h.namespace("tb")
    ingress = {
        "host": "tb.example.com",
        "pathPrefix": "/tb",
        "annotations": {"kubernetes.io/ingress.class": "nginx"},
    }
    job = job_manifest("TFJob", "tb", {"Worker": 2}, annotations=config(ingressSpec=ingress))
    await h.create_job(job, ns)
    pods = await ticking(clock, lambda: h.wait_pods(ns, "tb", 3, phase="Running"))
    (board,) = [p for p in pods if p["metadata"]["name"] == "tb-tensorboard-0"]
    assert board["spec"]["containers"][0]["command"][:3] == ["tensorboard", "--logdir", "/logs/run"]
    assert "schedulerName" not in board["spec"] or board["spec"]["schedulerName"] == "default-scheduler"
    service = await ticking(
        clock, lambda: eventually(lambda: h.get(SERVICES, ns, "tb-tensorboard"), what="Service")
    )
    assert service["spec"]["ports"][0]["port"] == 6006
    ing = await ticking(
        clock, lambda: eventually(lambda: h.get(INGRESSES, ns, "tb-tensorboard"), what="Ingress")
    )
    assert ing["spec"]["rules"][0]["host"] == "tb.example.com"
    assert ing["metadata"]["annotations"]["kubernetes.io/ingress.class"] == "nginx"

    async def status() -> dict[str, Any] | None:
        got = await h.job("TFJob", ns, "tb")
        record = ((got or {}).get("status") or {}).get("tensorBoard")
        return record if record and record.get("phase") == "Running" else None

    record = await ticking(clock, lambda: eventually(status, what="status.tensorBoard Running"))
    assert record["address"] == f"http://tb-tensorboard.{ns}.svc:6006/tb/{ns}/tb/"
    assert record["url"] == f"http://tb.example.com/tb/{ns}/tb/"  # KubeDL's URL
    event = await ticking(clock, lambda: h.wait_event(ns, "tb", "TensorBoardCreated"))
    assert record["address"] in event["message"]
    # The TensorBoard pod is not a replica: the job's counts and success ignore it.
    got = await h.job("TFJob", ns, "tb")
    assert replica_status(got, "Worker").get("active") == 2 and got["status"].get("active") == 2
    await h.sim.finish(ns, "tb-worker-0")
    await h.sim.finish(ns, "tb-worker-1")
    done = await ticking(clock, lambda: h.wait_condition("TFJob", ns, "tb", "Succeeded"))
    completed = parse_time(done["status"]["completionTime"])
    assert completed is not None
    expiry = completed + timedelta(seconds=600)
    # After the job: still there (cleanPodPolicy Running does not remove it) until the TTL.
    await clock.advance((expiry - clock.now()).total_seconds() - 1)
    await asyncio.sleep(QUIET)
    assert await h.pod(ns, "tb-tensorboard-0") is not None
    assert await h.get(SERVICES, ns, "tb-tensorboard") is not None
    await clock.advance((expiry - clock.now()).total_seconds() + 1e-6)

    async def gone() -> bool:
        return (
            await h.absent(SERVICES, ns, "tb-tensorboard")
            and await h.absent(INGRESSES, ns, "tb-tensorboard")
            and await h.pod(ns, "tb-tensorboard-0") is None
        )

    await eventually(gone, what="TensorBoard pod, Service and Ingress deleted at the TTL")
    assert (await h.job("TFJob", ns, "tb"))["status"]["tensorBoard"]["phase"] == "Deleted"
    await h.wait_event(ns, "tb", "TensorBoardDeleted")


async def test_an_annotation_edited_into_bad_json_is_refused_and_the_tensorboard_kept(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    # `kubectl annotate --overwrite` is a metadata-only update: the webhook still judges a
    # changed KubeDL annotation (without the webhook the controller reports it instead and keeps
    # the TensorBoard: tests/unit/test_kubedl_tensorboard_invalid.py).
    _, h, clock = env
    ns = await h.namespace("tbx")
    await h.create_job(job_manifest("TFJob", "tbx", {"Worker": 1}, annotations=config()), ns)
    pods = await ticking(clock, lambda: h.wait_pods(ns, "tbx", 2, phase="Running"))
    board = next(p for p in pods if p["metadata"]["name"] == "tbx-tensorboard-0")
    bad = {"metadata": {"annotations": {"kubedl.io/tensorboard-config": '{"logDir": "/logs/run",'}}}
    message = await refusal(h.kube.patch(TFJOBS, ns, "tbx", bad))
    assert "metadata.annotations[kubedl.io/tensorboard-config]: Invalid: not valid JSON" in message
    await asyncio.sleep(QUIET)
    kept = await h.pod(ns, "tbx-tensorboard-0")
    assert kept is not None and kept["metadata"]["uid"] == board["metadata"]["uid"]
    stored = await h.job("TFJob", ns, "tbx")
    assert (
        json.loads(stored["metadata"]["annotations"]["kubedl.io/tensorboard-config"])["logDir"] == "/logs/run"
    )


async def test_changing_the_annotation_replaces_the_tensorboard_pod(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await h.namespace("tbu")
    await h.create_job(job_manifest("TFJob", "tbu", {"Worker": 1}, annotations=config()), ns)
    pods = await ticking(clock, lambda: h.wait_pods(ns, "tbu", 2, phase="Running"))
    old = next(p for p in pods if p["metadata"]["name"] == "tbu-tensorboard-0")
    await h.kube.patch(
        TFJOBS,
        ns,
        "tbu",
        {
            "metadata": {
                "annotations": {"kubedl.io/tensorboard-config": json.dumps({"logDir": "/logs/other"})}
            }
        },
    )
    new = await ticking(clock, lambda: h.wait_recreated(ns, "tbu-tensorboard-0", old["metadata"]["uid"]))
    assert new["spec"]["containers"][0]["command"][:3] == ["tensorboard", "--logdir", "/logs/other"]
    assert (await h.pod(ns, "tbu-worker-0"))["metadata"]["uid"]  # the job's own pod is untouched


async def test_a_deleted_or_hand_edited_service_and_ingress_are_put_back(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, clock = env
    ns = await h.namespace("tbr")
    ingress = {"host": "tbr.example.com", "pathPrefix": "/tb", "annotations": {"team": "a"}}
    await h.create_job(
        job_manifest("TFJob", "tbr", {"Worker": 1}, annotations=config(ingressSpec=ingress)), ns
    )
    await ticking(clock, lambda: h.wait_pods(ns, "tbr", 2, phase="Running"))
    first = await ticking(
        clock, lambda: eventually(lambda: h.get(INGRESSES, ns, "tbr-tensorboard"), what="Ingress")
    )
    service = await h.get(SERVICES, ns, "tbr-tensorboard")
    assert service is not None

    # An Ingress edited by hand (its host and its annotation) is rewritten to the desired one.
    await h.kube.patch(
        INGRESSES,
        ns,
        "tbr-tensorboard",
        {"metadata": {"annotations": {"team": "b"}}, "spec": {"rules": [{"host": "evil.example.com"}]}},
    )

    async def repaired(name: str, uid: str) -> dict[str, Any] | None:
        got = await h.get(INGRESSES, ns, name)
        ok = got is not None and got["metadata"]["uid"] != uid
        return got if ok and got["spec"]["rules"][0].get("host") == "tbr.example.com" else None

    fixed = await ticking(
        clock,
        lambda: eventually(
            lambda: repaired("tbr-tensorboard", first["metadata"]["uid"]), what="Ingress repaired"
        ),
    )
    assert fixed["metadata"]["annotations"]["team"] == "a"
    assert fixed["spec"]["rules"][0]["http"]["paths"][0]["path"] == f"/tb/{ns}/tbr/"

    # A deleted Ingress is created again.
    await h.kube.delete(INGRESSES, ns, "tbr-tensorboard")
    await ticking(
        clock,
        lambda: eventually(
            lambda: repaired("tbr-tensorboard", fixed["metadata"]["uid"]), what="Ingress back"
        ),
    )

    # A Service whose selector was edited is replaced; a deleted one is created again.
    await h.kube.patch(SERVICES, ns, "tbr-tensorboard", {"spec": {"selector": {"app": "other"}}})

    async def service_back(uid: str) -> dict[str, Any] | None:
        got = await h.get(SERVICES, ns, "tbr-tensorboard")
        if got is None or got["metadata"]["uid"] == uid:
            return None
        return got if "app" not in got["spec"]["selector"] else None

    again = await ticking(
        clock, lambda: eventually(lambda: service_back(service["metadata"]["uid"]), what="Service")
    )
    assert again["spec"]["ports"][0]["port"] == 6006
    await h.kube.delete(SERVICES, ns, "tbr-tensorboard")
    await ticking(
        clock, lambda: eventually(lambda: service_back(again["metadata"]["uid"]), what="Service back")
    )

    # A TensorBoard pod deleted by hand is created again too.
    board = await h.pod(ns, "tbr-tensorboard-0")
    assert board is not None
    await h.kube.delete(PODS, ns, "tbr-tensorboard-0")
    await ticking(clock, lambda: h.wait_recreated(ns, "tbr-tensorboard-0", board["metadata"]["uid"]))
