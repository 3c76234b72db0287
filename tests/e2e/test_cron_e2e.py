"""Scheduled training end to end (`pytest -m e2e`, needs KUBECONFIG): against a real API server,
the real operator creates a TrainingCron's job at the next minute boundary, the job runs to
Succeeded and the cron records it; a bad schedule is refused at apply time naming spec.schedule.

The one real wait is for a minute boundary (`* * * * *`): at most 60 s plus the operator's pass.
`KUBETRAIN_E2E_CRON_WAIT` (seconds, default 90) bounds it; when the boundary plus the margin
would exceed it the test is skipped rather than flaking. Forbid, Replace, missed starts and
history limits are covered deterministically with an injected clock in
tests/integration/test_cron_devcluster.py and tests/unit/test_cron_decide.py.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from crons import template_of, training_cron
from e2e import scenarios_support as support

from kubetrain.api.labels import LABEL_CRON_NAME
from kubetrain.kube.resources import job_resource
from kubetrain.operator.crons import TRAINING_CRONS

pytestmark = support.E2E
Obj = dict[str, Any]
MARGIN = 25.0  # the operator's pass, the create, a pod started


def seconds_to_next_minute() -> float:
    now = time.time()
    return 60.0 - now % 60.0


async def test_training_cron_creates_its_job_at_the_minute_and_records_it(cluster: Any) -> None:
    budget = float(os.environ.get("KUBETRAIN_E2E_CRON_WAIT", "90"))
    if seconds_to_next_minute() + MARGIN > budget:
        pytest.skip(f"the next minute boundary is further than KUBETRAIN_E2E_CRON_WAIT={budget:.0f}s away")
    ns = cluster.namespace
    template = template_of(
        "TFJob", {"Worker": 1}, image=os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36")
    )
    template["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = [
        "sh",
        "-c",
        "exit 0",
    ]
    cron = training_cron(
        "every-minute", "* * * * *", namespace=ns, template=template, concurrencyPolicy="Forbid"
    )
    created = await cluster.client.create(TRAINING_CRONS, cron, namespace=ns)
    assert created["spec"]["successfulJobsHistoryLimit"] == 3  # the CRD's defaults (batch/v1's)

    async def first_job() -> Obj | None:
        page = await cluster.client.list(
            job_resource("TFJob"), ns, label_selector=f"{LABEL_CRON_NAME}=every-minute"
        )
        items: list[Obj] = page.get("items", [])
        return items[0] if items else None

    job = await support.eventually(first_job, within=budget, what="the cron's first job")
    name = job["metadata"]["name"]
    minute = int(name.rsplit("-", 1)[1])
    assert datetime.fromtimestamp(minute * 60, UTC).second == 0
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainingCron", "every-minute", True)
    await cluster.wait_pods(name, 1, running=False)
    await cluster.finish_pods(name, 1)
    await cluster.wait_job("TFJob", name, "Succeeded", lambda j: support.has_condition(j, "Succeeded"))

    async def recorded() -> Obj | None:
        stored: Obj = await cluster.client.get(TRAINING_CRONS, ns, "every-minute")
        status = stored.get("status") or {}
        return stored if status.get("lastScheduleTime") and status.get("lastSuccessfulTime") else None

    stored = await support.eventually(recorded, within=30, what="lastScheduleTime and lastSuccessfulTime")
    assert (
        datetime.fromisoformat(stored["status"]["lastScheduleTime"].replace("Z", "+00:00")).timestamp()
        == minute * 60
    )
    # suspend it, so no further job starts while the namespace is cleaned up
    stored["spec"]["suspend"] = True
    await cluster.client.replace(TRAINING_CRONS, stored)


async def test_bad_schedule_is_refused_at_apply_time(cluster: Any) -> None:
    ns = cluster.namespace
    cron = training_cron("bad", "*/61 * * * *", namespace=ns, template=template_of("TFJob", {"Worker": 1}))
    cron["spec"]["schedule"] = "0 0 30 2 *"
    with pytest.raises(support.ApiError) as excinfo:
        await cluster.client.create(TRAINING_CRONS, cron, namespace=ns)
    message = excinfo.value.message
    assert 'admission webhook "validate.crons.kubetrain.io" denied the request' in message
    assert "spec.schedule" in message and "never runs" in message
