"""`kubetrain dev` with a cron manifest (TrainingCron, KubeDL's Cron): print when its first job
is due, wait for the cron controller to create it, then follow that job like any other.

The wait is real time (the cron runs on the wall clock): `* * * * *` starts within a minute; a
nightly schedule ends at `--timeout` saying when its job would start."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from kubetrain.api import cron as cronapi
from kubetrain.api.errors import QUOTE
from kubetrain.api.groups import group_of
from kubetrain.cron.decide import schedule_of
from kubetrain.cron.schedule import ScheduleError
from kubetrain.cron.shape import CronUnreadable, read_cron
from kubetrain.dev.stack import DevStack
from kubetrain.operator.crons import CRON_RESOURCES

Obj = dict[str, Any]


def is_cron(manifest: Obj) -> bool:
    group = group_of(manifest.get("apiVersion"))
    return cronapi.CRON_KINDS.get(group) == manifest.get("kind")


def cron_ref(manifest: Obj) -> Any:
    return CRON_RESOURCES[group_of(manifest.get("apiVersion"))]


async def wait_for_first_job(stack: DevStack, cron: Obj, limit: float, out: Any) -> Obj | None:
    """The cron's first job, once the cron controller created it (None after `limit` seconds)."""
    label = f"{cron['kind']} {cron['metadata'].get('namespace')}/{cron['metadata'].get('name')}"
    try:
        shape = read_cron(cron)
        schedule, zone = schedule_of(shape)
    except (CronUnreadable, ScheduleError) as err:
        print(f"{label}: {err}", file=out, flush=True)
        return None
    due = schedule.next_after(datetime.now(UTC), zone)
    when = due.astimezone(zone).isoformat() if due is not None else "never"
    print(f"{label}: schedule {QUOTE.encode(shape.schedule)}, first job due at {when}", file=out, flush=True)
    assert stack.crons is not None
    started = time.monotonic()
    while time.monotonic() - started < limit:
        jobs = stack.crons.jobs_of(shape)
        if jobs:
            job = min(jobs, key=lambda j: str(j["metadata"]["name"]))
            print(f"{label} created {job['kind']} {job['metadata']['name']}", file=out, flush=True)
            return job
        await asyncio.sleep(0.2)
    print(f"{label}: no job after {limit:.0f}s (first due at {when})", file=out, flush=True)
    return None
