"""A job's annotations and its Volcano PodGroup (docs/behaviour.md §8) through the real controller
against devcluster: `scheduling.volcano.sh/queue-name` names the queue when
`schedulingPolicy.queue` is unset (mpi-operator's VolcanoCtrl.newPodGroup), and the PodGroup
carries the job's annotations (training-operator's JobController.SyncPodGroup), so the
PodGroup-level settings Volcano reads (`volcano.sh/preemptable`, `sla-waiting-time`) apply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from kubetrain.kube.resources import VOLCANO_PODGROUPS

from .controller_support import Harness, eventually, gang_stack, job_manifest

Obj = dict[str, Any]
QUEUE = "scheduling.volcano.sh/queue-name"


@pytest_asyncio.fixture
async def volcano() -> AsyncIterator[Harness]:
    async with gang_stack("volcano") as (_, h):
        yield h


def annotated_job(name: str, annotations: dict[str, str], scheduling: Obj | None = None) -> Obj:
    return job_manifest(
        "PyTorchJob",
        name,
        {"Master": 1, "Worker": 1},
        run_policy={"schedulingPolicy": scheduling} if scheduling is not None else None,
        annotations=annotations,
    )


async def test_the_queue_annotation_and_the_jobs_annotations_reach_the_pod_group(volcano: Harness) -> None:
    h = volcano
    ns = await h.namespace("vq")
    given = {QUEUE: "production", "volcano.sh/preemptable": "false", "sla-waiting-time": "30m"}
    await h.create_job(annotated_job("named", given), ns)
    group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "named"), what="Volcano PodGroup")
    assert group["spec"]["queue"] == "production"
    annotations = group["metadata"].get("annotations") or {}
    for key, value in given.items():
        assert annotations.get(key) == value

    # schedulingPolicy.queue, when set, is the queue (as in mpi-operator).
    await h.create_job(annotated_job("both", {QUEUE: "production"}, {"queue": "research"}), ns)
    both = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "both"), what="Volcano PodGroup")
    assert both["spec"]["queue"] == "research"
