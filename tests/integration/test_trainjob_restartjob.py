"""JobSet's `RestartJob` failure-policy action on a TrainJob, through the controller against
devcluster: a failed Job's pods alone are recreated as that Job's next attempt
(`jobset.sigs.k8s.io/job-restart-attempt`), every other pod keeps its uid; each restart is a
`RestartJobFailurePolicyAction` Warning, counted in `kubetrain_jobs_restarted_total` and in the
snapshot's record (`jobRestarts`, read back after an operator restart), and the failure that
finds maxRestarts used up fails the TrainJob with JobSet's reason and message."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS
from kubetrain.serving.metrics import REGISTRY

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_controller_resilience import restart_controller
from .test_trainjob_controller import get_tj, training_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
JOB_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def restart_job_runtime(name: str, max_restarts: int) -> Obj:
    """Trainer's torch runtime with a `worker` replicated job of 3 one-pod Jobs before `node`;
    every Job fails on its first failed pod (backoffLimit 0, restartPolicy Never), and any failed
    Job restarts alone (`RestartJob`)."""
    runtime = training_runtime(name)
    spec = runtime["spec"]["template"]["spec"]
    worker = copy.deepcopy(spec["replicatedJobs"][0])
    worker["name"], worker["replicas"] = "worker", 3
    worker["template"]["metadata"] = {}  # no trainer ancestor label: a plain replicated job
    spec["replicatedJobs"].insert(0, worker)
    for rjob in spec["replicatedJobs"]:
        rjob["template"]["spec"]["backoffLimit"] = 0
        rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    worker["template"]["spec"].update(parallelism=1, completions=1)
    spec["failurePolicy"] = {"maxRestarts": max_restarts, "rules": [{"name": "one", "action": "RestartJob"}]}
    return runtime


def restarted(ns: str) -> float:
    labels = {"kind": "TrainJob", "namespace": ns}
    return REGISTRY.get_sample_value("kubetrain_jobs_restarted_total", labels) or 0.0


async def uids(h: Harness, ns: str, name: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in await h.pods(ns, name)
        if not p["metadata"].get("deletionTimestamp")
    }


async def record(h: Harness, ns: str, name: str) -> Obj:
    cm = await h.get(CONFIG_MAPS, ns, f"{name}-runtime-snapshot")
    assert cm is not None
    state: Obj = json.loads(cm["data"]["state"])
    return state


async def restart_of(h: Harness, ns: str, pods: list[str], before: dict[str, str], attempt: str) -> None:
    """Wait until each pod of `pods` runs again with a new uid as its Job's `attempt`."""
    for pod_name in pods:
        new = await h.wait_recreated(ns, pod_name, before[pod_name])
        assert new["metadata"]["labels"][JOB_ATTEMPT] == attempt
        assert new["metadata"]["annotations"][JOB_ATTEMPT] == attempt
        assert new["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"  # no whole restart


async def test_a_failed_job_restarts_alone_until_max_restarts_fails_the_trainjob(
    env: tuple[DevStack, Harness],
) -> None:
    stack, h = env
    ns = await h.namespace("rj")
    await h.kube.create(TRAINING_RUNTIMES, restart_job_runtime("per-job", max_restarts=2), namespace=ns)
    await h.kube.create(
        TRAINJOBS,
        trainjob("pj", num_nodes=2, runtime="per-job", runtime_kind="TrainingRuntime"),
        namespace=ns,
    )
    workers = [f"pj-worker-{j}-0" for j in range(3)]
    nodes = ["pj-node-0-0", "pj-node-0-1"]
    created = await h.wait_pod_names(ns, "pj", sorted([*nodes, *workers]))
    assert {p["metadata"]["labels"][JOB_ATTEMPT] for p in created} == {"0"}
    for name in [*nodes, *workers]:
        await eventually(lambda n=name: h.running_pod(ns, n), what=f"{name} Running")
    first = await uids(h, ns, "pj")

    # one node pod fails: its Job (both node pods) restarts, every worker keeps its pod
    await h.sim.finish(ns, "pj-node-0-1", exit_code=1)
    await restart_of(h, ns, nodes, first, "1")
    second = await uids(h, ns, "pj")
    assert {w: second[w] for w in workers} == {w: first[w] for w in workers}
    event = await h.wait_event(ns, "pj", "RestartJobFailurePolicyAction")
    assert event["type"] == "Warning"
    assert event["message"] == "applying RestartJob failure policy action (first failed job: pj-node-0)"
    assert restarted(ns) == 1.0
    state = await record(h, ns, "pj")
    assert state["restarts"] == 0
    assert state["jobRestarts"] == {"node": [1]} and state["jobRestartsCountTowardsMax"] == {"node": [1]}
    assert not any(
        c["type"] == "Failed" for c in (await get_tj(h, ns, "pj")).get("status", {}).get("conditions") or []
    )

    # a worker Job fails: its one pod restarts, the other workers and the new node pods stay
    await h.sim.finish(ns, "pj-worker-1-0", exit_code=1)
    await restart_of(h, ns, ["pj-worker-1-0"], second, "1")
    third = await uids(h, ns, "pj")
    assert {n: third[n] for n in third if n != "pj-worker-1-0"} == {
        n: second[n] for n in second if n != "pj-worker-1-0"
    }
    await eventually(lambda: _restarted_at_least(ns, 2.0), what="the second restart counted")
    state = await record(h, ns, "pj")
    assert state["jobRestarts"] == {"node": [1], "worker": [0, 1, 0]}

    # an operator restart: the counts are read back from the snapshot, nothing is made again
    await restart_controller(stack)
    assert await uids(h, ns, "pj") == third
    # maxRestarts 2 used up: the next failed Job fails the TrainJob, as JobSet fails the JobSet
    await h.sim.finish(ns, "pj-worker-2-0", exit_code=1)
    tj = await wait_condition(h, ns, "pj", "Failed")
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ReachedMaxRestarts"
    assert (
        failed["message"]
        == "jobset failed due to reaching max number of restarts (first failed job: pj-worker-2)"
    )
    assert restarted(ns) == 2.0
    assert (await h.event_reasons(ns, "pj")).count("RestartJobFailurePolicyAction") == 2


async def _restarted_at_least(ns: str, n: float) -> bool | None:
    return True if restarted(ns) >= n else None


async def test_the_webhook_refuses_a_runtime_whose_restart_job_rule_meets_over_1024_replicas(
    env: tuple[DevStack, Harness],
) -> None:
    from kubetrain.kube.client import ApiError

    _, h = env
    ns = await h.namespace("rjv")
    runtime = restart_job_runtime("too-many", max_restarts=1)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 1025
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    assert refused.value.status == 422
    assert "replicas > 1024" in str(refused.value)
    assert "spec.template.spec.replicatedJobs[0].replicas" in str(refused.value)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 1024  # the most JobSet allows
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
