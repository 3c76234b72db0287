"""Scheduled training in devcluster: a TrainingCron creates jobs on schedule, with the cron
controller's clock injected (FakeClock) — no real minute is waited. Forbid holds the next run
back until the running job ends, Replace deletes it, the history limit deletes the oldest
finished job, and admission refuses a bad schedule naming spec.schedule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio
from crons import kubedl_cron, template_of, training_cron

from kubetrain.api.labels import LABEL_CRON_NAME
from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, job_resource
from kubetrain.operator.apigroups import ApiGroupRefused
from kubetrain.operator.crons import KUBEDL_CRONS, TRAINING_CRONS, CronController, CronControllerConfig
from kubetrain.serving.metrics import REGISTRY

from .controller_support import (
    Harness,
    advance_to,
    eventually,
    is_true,
    open_clocked_stack,
    ticking,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
Obj = dict[str, Any]
TFJOBS = job_resource("TFJob")
START = datetime.now(UTC).replace(microsecond=0)
QUIET = 0.4  # real seconds to watch for something that must NOT happen


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for triple in open_clocked_stack(START, api_groups=("kubetrain.io", "apps.kubedl.io")):
        yield triple


def boundary_after(when: datetime, minutes: int = 5) -> datetime:
    base = when.replace(second=0, microsecond=0)
    return base + timedelta(minutes=minutes - base.minute % minutes)


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def name_at(cron: str, when: datetime) -> str:
    return f"{cron}-{int(when.timestamp()) // 60}"


def catch_up(cron: Obj, clock: FakeClock, minutes: int, name: str) -> list[str]:
    """The job a cron starts at once: the controller's clock runs ahead of the API server's (the
    fake clock was advanced by earlier tests), so a scheduled time may lie between the cron's
    creationTimestamp and the controller's now — the most recent one starts (batch/v1)."""
    created = parse(cron["metadata"]["creationTimestamp"])
    due = boundary_after(created, minutes)
    if due > clock.now():
        return []
    while due + timedelta(minutes=minutes) <= clock.now():
        due += timedelta(minutes=minutes)
    return [name_at(name, due)]


async def cron_jobs(h: Harness, ns: str, cron: str) -> list[Obj]:
    page = await h.kube.list(TFJOBS, ns, label_selector=f"{LABEL_CRON_NAME}={cron}")
    return sorted(page["items"], key=lambda j: j["metadata"]["name"])


async def job_names(h: Harness, ns: str, cron: str, alive_only: bool = True) -> list[str]:
    jobs = await cron_jobs(h, ns, cron)
    return [
        j["metadata"]["name"] for j in jobs if not (alive_only and j["metadata"].get("deletionTimestamp"))
    ]


async def wait_names(clock: FakeClock, h: Harness, ns: str, cron: str, expected: list[str]) -> None:
    async def check() -> bool:
        return await job_names(h, ns, cron) == expected

    await ticking(clock, lambda: eventually(check, what=lambda: f"jobs of {cron} == {expected}"))


async def finish_job(clock: FakeClock, h: Harness, ns: str, job: str) -> None:
    await h.sim.finish(ns, f"{job}-worker-0")

    async def done() -> bool:
        return is_true(await h.get(TFJOBS, ns, job), "Succeeded")

    await ticking(clock, lambda: eventually(done, what=f"{job} Succeeded"))


def tf_template() -> Obj:
    return template_of("TFJob", {"Worker": 1})


async def create_cron(h: Harness, ns: str, obj: Obj) -> Obj:
    ref = KUBEDL_CRONS if obj["kind"] == "Cron" else TRAINING_CRONS
    created: Obj = await h.kube.create(ref, obj, namespace=ns)
    return created


async def test_forbid_holds_the_next_run_until_the_job_ends(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("cronf")
    obj = training_cron(
        "forbid", "*/5 * * * *", namespace=ns, template=tf_template(), concurrencyPolicy="Forbid"
    )
    obj["spec"]["successfulJobsHistoryLimit"] = 1
    cron = await create_cron(h, ns, obj)
    assert cron["spec"]["failedJobsHistoryLimit"] == 1  # the CRD's default (batch/v1's)
    first = boundary_after(max(parse(cron["metadata"]["creationTimestamp"]), clock.now()))
    await asyncio.sleep(QUIET)
    assert await job_names(h, ns, "forbid") == []  # before its time: nothing

    await advance_to(clock, first + timedelta(seconds=1))
    await wait_names(clock, h, ns, "forbid", [name_at("forbid", first)])
    stored = await h.get(TRAINING_CRONS, ns, "forbid")
    assert stored is not None
    assert parse(stored["status"]["lastScheduleTime"]) == first
    assert [a["name"] for a in stored["status"]["active"]] == [name_at("forbid", first)]
    job = (await cron_jobs(h, ns, "forbid"))[0]
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainingCron", "forbid", True)

    # the next time comes while the first job runs: Forbid starts nothing
    second = first + timedelta(minutes=5)
    await advance_to(clock, second + timedelta(seconds=1))
    await asyncio.sleep(QUIET)
    assert await job_names(h, ns, "forbid") == [name_at("forbid", first)]
    reasons = await ticking(clock, lambda: eventually(lambda: h.event_reasons(ns, "forbid")))
    await ticking(
        clock,
        lambda: eventually(
            lambda: _has(h, ns, "forbid", "JobAlreadyActive"), what="a JobAlreadyActive event"
        ),
    )
    assert "SuccessfulCreate" in reasons
    # The cron's series: one job created, the second time skipped once (however often the cron
    # was looked at meanwhile), the last schedule time the first one.
    labels = {"kind": "TrainingCron", "namespace": ns, "name": "forbid"}
    assert metric("kubetrain_cron_jobs_created_total", labels) == 1
    assert metric("kubetrain_cron_jobs_skipped_total", labels) == 1
    assert metric("kubetrain_cron_jobs_failed_to_create_total", labels) in (None, 0)
    assert metric("kubetrain_cron_last_schedule_timestamp_seconds", labels) == first.timestamp()

    # the first job ends: the unmet second time starts, late; its completion is recorded
    await finish_job(clock, h, ns, name_at("forbid", first))
    await wait_names(clock, h, ns, "forbid", [name_at("forbid", first), name_at("forbid", second)])
    stored = await h.get(TRAINING_CRONS, ns, "forbid")
    assert stored is not None and stored["status"].get("lastSuccessfulTime")

    assert metric("kubetrain_cron_jobs_created_total", labels) == 2
    assert metric("kubetrain_cron_jobs_skipped_total", labels) == 1
    assert metric("kubetrain_cron_last_schedule_timestamp_seconds", labels) == second.timestamp()

    # the second ends too: the history limit (1 succeeded job) deletes the first
    await finish_job(clock, h, ns, name_at("forbid", second))
    await wait_names(clock, h, ns, "forbid", [name_at("forbid", second)])
    await h.kube.delete(TRAINING_CRONS, ns, "forbid")  # a deleted cron's series go with it

    async def forgotten() -> bool:
        return metric("kubetrain_cron_jobs_created_total", labels) is None

    await ticking(clock, lambda: eventually(forgotten, what="the deleted cron's series removed"))


def metric(name: str, labels: dict[str, str]) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def _has(h: Harness, ns: str, name: str, reason: str) -> bool:
    return reason in await h.event_reasons(ns, name)


async def test_replace_deletes_the_running_job(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("cronr")
    obj = training_cron(
        "repl", "*/5 * * * *", namespace=ns, template=tf_template(), concurrencyPolicy="Replace"
    )
    cron = await create_cron(h, ns, obj)
    await wait_names(clock, h, ns, "repl", catch_up(cron, clock, 5, "repl"))
    first = boundary_after(max(parse(cron["metadata"]["creationTimestamp"]), clock.now()))
    await advance_to(clock, first + timedelta(seconds=1))
    await wait_names(clock, h, ns, "repl", [name_at("repl", first)])  # the catch-up job replaced
    second = first + timedelta(minutes=5)
    await advance_to(clock, second + timedelta(seconds=1))
    await wait_names(clock, h, ns, "repl", [name_at("repl", second)])
    stored = await h.get(TRAINING_CRONS, ns, "repl")
    assert stored is not None
    assert [a["name"] for a in stored["status"]["active"]] == [name_at("repl", second)]


async def test_kubedl_cron_layout_runs(env: tuple[DevStack, Harness, FakeClock]) -> None:
    _, h, clock = env
    ns = await h.namespace("cronk")
    obj = kubedl_cron("kdl", "@hourly", namespace=ns, template=tf_template(), historyLimit=2)
    cron = await create_cron(h, ns, obj)
    first = boundary_after(max(parse(cron["metadata"]["creationTimestamp"]), clock.now()), 60)
    earlier = catch_up(cron, clock, 60, "kdl")
    await advance_to(clock, first + timedelta(seconds=1))
    await wait_names(clock, h, ns, "kdl", [*earlier, name_at("kdl", first)])
    await finish_job(clock, h, ns, name_at("kdl", first))

    async def finished() -> Obj | None:
        stored = await h.get(KUBEDL_CRONS, ns, "kdl")
        for record in ((stored or {}).get("status") or {}).get("history") or []:
            if record["object"]["name"] == name_at("kdl", first) and record.get("status") == "Succeeded":
                return dict(record)
        return None

    record = await ticking(clock, lambda: eventually(finished, what="KubeDL history with the finished job"))
    assert record["object"] == {"apiGroup": "kubetrain.io", "kind": "TFJob", "name": name_at("kdl", first)}
    assert record.get("finished")


async def test_admission_refuses_a_bad_schedule_naming_the_field(
    env: tuple[DevStack, Harness, FakeClock],
) -> None:
    _, h, _ = env
    ns = await h.namespace("cronv")
    with pytest.raises(ApiError) as exc:
        await create_cron(h, ns, training_cron("bad", "61 * * * *", namespace=ns, template=tf_template()))
    assert (
        "spec.schedule" in exc.value.message
        and "minute field: 61 is above the maximum 59" in exc.value.message
    )
    bad_template = tf_template()
    bad_template["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -1
    with pytest.raises(ApiError) as exc:
        await create_cron(h, ns, training_cron("badt", "@daily", namespace=ns, template=bad_template))
    assert "spec.template.spec.tfReplicaSpecs[Worker].replicas" in exc.value.message


async def test_kubedls_cron_crd_must_be_kubetrains(env: tuple[DevStack, Harness, FakeClock]) -> None:
    """Serving apps.kubedl.io is refused at start when its Cron CRD was installed by KubeDL (no
    part-of label) — both controllers would create the same jobs — and when it is missing."""
    _, h, _ = env
    name = "crons.apps.kubedl.io"
    patch = {"metadata": {"labels": {"app.kubernetes.io/part-of": None}}}
    await h.kube.patch(CUSTOM_RESOURCE_DEFINITIONS, None, name, patch)
    try:
        crons = CronController(h.kube, CronControllerConfig(api_groups=("kubetrain.io", "apps.kubedl.io")))
        with pytest.raises(ApiGroupRefused, match="was not installed by kubetrain"):
            await crons.check()
        served = CronController(h.kube, CronControllerConfig(api_groups=("kubetrain.io",)))
        await served.check()  # not asked for: not read at all
        assert served.served == ["kubetrain.io"]
    finally:
        restore = {"metadata": {"labels": {"app.kubernetes.io/part-of": "kubetrain"}}}
        await h.kube.patch(CUSTOM_RESOURCE_DEFINITIONS, None, name, restore)
