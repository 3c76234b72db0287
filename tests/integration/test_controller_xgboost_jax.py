"""XGBoostJob and JAXJob through the real controller against devcluster: pods, env and labels,
then each kind's success rule — XGBoost's Master ends the job (running Workers are cleaned up),
JAX needs every Worker — and a failed pod under `Never` failing the job."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import Harness, eventually, is_true, job_manifest, pod_env, replica_status

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


async def test_xgboost_master_ends_the_job_and_running_workers_are_cleaned_up(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("xgb")
    await h.create_job(job_manifest("XGBoostJob", "xgb", {"Master": 1, "Worker": 2}), ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "xgb", 3)}
    workers = f"xgb-worker-0.xgb.{ns}.svc,xgb-worker-1.xgb.{ns}.svc"
    for name, rank in (("xgb-master-0", "0"), ("xgb-worker-0", "1"), ("xgb-worker-1", "2")):
        values = pod_env(pods[name], "xgboost")
        assert values["MASTER_ADDR"] == f"xgb-master-0.xgb.{ns}.svc", name
        assert (values["MASTER_PORT"], values["WORLD_SIZE"], values["RANK"]) == ("9999", "3", rank), name
        assert (values["WORKER_PORT"], values["WORKER_ADDRS"]) == ("9999", workers), name
        labels = pods[name]["metadata"]["labels"]
        assert (labels.get("kubetrain.io/job-role") == "master") is (name == "xgb-master-0")
    await h.wait_condition("XGBoostJob", ns, "xgb", "Running")
    await h.sim.finish(ns, "xgb-master-0")
    done = await h.wait_condition("XGBoostJob", ns, "xgb", "Succeeded")
    assert replica_status(done, "Master").get("succeeded") == 1
    # cleanPodPolicy Running (the default) deletes the Workers still running.
    async def only_master_left() -> bool:
        return [p["metadata"]["name"] for p in await h.pods(ns, "xgb")] == ["xgb-master-0"]

    await eventually(only_master_left, what="the running Workers deleted")


async def test_xgboost_failed_worker_under_never_fails_the_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("xgbf")
    await h.create_job(job_manifest("XGBoostJob", "xgbf", {"Master": 1, "Worker": 1}), ns)
    await h.wait_pods(ns, "xgbf", 2)
    await h.sim.finish(ns, "xgbf-worker-0", exit_code=1)
    failed = await h.wait_condition("XGBoostJob", ns, "xgbf", "Failed")
    assert not is_true(failed, "Succeeded")


async def test_jax_needs_every_worker(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("jax")
    await h.create_job(job_manifest("JAXJob", "jx", {"Worker": 3}), ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "jx", 3)}
    for index in range(3):
        values = pod_env(pods[f"jx-worker-{index}"], "jax")
        assert values["COORDINATOR_ADDRESS"] == f"jx-worker-0.jx.{ns}.svc"
        assert (values["COORDINATOR_PORT"], values["NUM_PROCESSES"]) == ("6666", "3")
        assert values["PROCESS_ID"] == str(index)
    await h.wait_condition("JAXJob", ns, "jx", "Running")
    # The coordinator finishing first does not end the job.
    await h.sim.finish(ns, "jx-worker-0")
    await h.wait_pods(ns, "jx", 1, phase="Succeeded")
    assert not is_true(await h.job("JAXJob", ns, "jx"), "Succeeded")
    await h.sim.finish(ns, "jx-worker-1")
    await h.sim.finish(ns, "jx-worker-2")
    done = await h.wait_condition("JAXJob", ns, "jx", "Succeeded")
    assert replica_status(done, "Worker").get("succeeded") == 3
