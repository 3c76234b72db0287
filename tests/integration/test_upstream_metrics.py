"""The replaced operators' metric names on kubetrain's /metrics (docs/operations.md "Kubeflow's
and KubeDL's metric names"): kubeflow.org v1 jobs, a kubeflow.org MPIJob created at v2beta1 and
a training.kubedl.io job run through the real webhooks and controller against devcluster to
success, failure, restart and deletion; the scrape shows training-operator's, mpi-operator's
and KubeDL's series with their label names and values, counted once at each moment."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.metatime import parse_time
from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import job_resources_in

from .controller_support import Harness, eventually, job_manifest, replica_status, scrape

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
GROUPS = ("kubetrain.io", "kubeflow.org", "training.kubedl.io")
KF = job_resources_in(["kubeflow.org"])
KUBEDL = job_resources_in(["training.kubedl.io"])
MPIJOBS = KF["MPIJob.kubeflow.org"]
PYTORCHJOBS = KF["PyTorchJob.kubeflow.org"]
TFJOBS = KF["TFJob.kubeflow.org"]
KUBEDL_PYTORCHJOBS = KUBEDL["PyTorchJob.training.kubedl.io"]


STACK_OPTIONS = {"api_groups": GROUPS}


def series(samples: dict[str, float], prefix: str, needle: str) -> dict[str, float]:
    """The samples named `prefix…` whose labels contain `needle`, without prometheus_client's
    `_created` timestamps."""
    return {
        k: v
        for k, v in samples.items()
        if k.startswith(prefix) and needle in k and not k.split("{")[0].endswith("_created")
    }


def in_group(job: Obj, api_version: str) -> Obj:
    job["apiVersion"] = api_version
    return job


async def wait_gone(h: Harness, ref: Any, ns: str, name: str) -> None:
    await eventually(lambda: h.absent(ref, ns, name), what=f"{ref.kind} {name} deleted")


async def test_training_operator_series(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kfmetrics")
    ok = job_manifest(
        "PyTorchJob", "ok", {"Master": 1, "Worker": 1}, run_policy={"ttlSecondsAfterFinished": 0}
    )
    await h.kube.create(PYTORCHJOBS, in_group(ok, "kubeflow.org/v1"), namespace=ns)
    bad = job_manifest("TFJob", "bad", {"Worker": 1}, restart_policy="Never")
    await h.kube.create(TFJOBS, in_group(bad, "kubeflow.org/v1"), namespace=ns)
    rs = job_manifest("PyTorchJob", "rs", {"Master": 1}, restart_policy="ExitCode")
    await h.kube.create(PYTORCHJOBS, in_group(rs, "kubeflow.org/v1"), namespace=ns)
    await h.end_ok_bad_and_rs(ns)
    await wait_gone(h, PYTORCHJOBS, ns, "ok")  # its TTL: the operator deleted it
    await h.wait_true(TFJOBS, ns, "bad", "Failed")

    async def restarted() -> Obj | None:
        job = await h.get(PYTORCHJOBS, ns, "rs")
        return job if replica_status(job, "Master").get("restarts") == 1 else None

    await eventually(restarted, what="rs restarted once")
    await h.kube.delete(TFJOBS, ns, "bad")  # deleted by a user: training-operator does not count it
    await wait_gone(h, TFJOBS, ns, "bad")

    assert series(await scrape(), "training_operator_", f'job_namespace="{ns}"') == {
        f'training_operator_jobs_created_total{{framework="pytorch",job_namespace="{ns}"}}': 2,
        f'training_operator_jobs_created_total{{framework="tensorflow",job_namespace="{ns}"}}': 1,
        f'training_operator_jobs_successful_total{{framework="pytorch",job_namespace="{ns}"}}': 1,
        f'training_operator_jobs_deleted_total{{framework="pytorch",job_namespace="{ns}"}}': 1,
        f'training_operator_jobs_failed_total{{framework="tensorflow",job_namespace="{ns}"}}': 1,
        f'training_operator_jobs_restarted_total{{framework="pytorch",job_namespace="{ns}"}}': 1,
    }


async def test_mpi_operator_series(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("mpimetrics")
    names = (
        "mpi_operator_jobs_created_total",
        "mpi_operator_jobs_successful_total",
        "mpi_operator_jobs_failed_total",
    )
    before = await scrape()
    for name, exit_code in (("pi", 0), ("broken", 1)):
        # backoffLimit 0: mpi-operator's launcher Job would retry a failed Never Launcher.
        job = job_manifest(
            "MPIJob",
            name,
            {"Launcher": 1, "Worker": 1},
            restart_policy="Never",
            run_policy={"backoffLimit": 0},
        )
        await h.kube.create(MPIJOBS, in_group(job, "kubeflow.org/v2beta1"), namespace=ns)
        await h.wait_pods(ns, name, 2)
        await h.sim.finish(ns, f"{name}-launcher-0", exit_code=exit_code)
    await h.wait_true(MPIJOBS, ns, "pi", "Succeeded")
    await h.wait_true(MPIJOBS, ns, "broken", "Failed")

    after = await scrape()
    assert [after.get(n, 0) - before.get(n, 0) for n in names] == [2, 1, 1]
    assert series(after, "mpi_operator_job_info", f'namespace="{ns}"') == {
        f'mpi_operator_job_info{{launcher="broken-launcher",namespace="{ns}"}}': 1,
        f'mpi_operator_job_info{{launcher="pi-launcher",namespace="{ns}"}}': 1,
    }
    assert series(after, "training_operator_", f'job_namespace="{ns}"') == {}

    await h.kube.delete(MPIJOBS, ns, "pi")
    await wait_gone(h, MPIJOBS, ns, "pi")

    async def info_left() -> dict[str, float] | None:
        left = series(await scrape(), "mpi_operator_job_info", f'namespace="{ns}"')
        return left if len(left) == 1 else None

    assert await eventually(info_left, what="pi's job info removed") == {
        f'mpi_operator_job_info{{launcher="broken-launcher",namespace="{ns}"}}': 1
    }


async def test_kubedl_series(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kdlmetrics")
    events = ("created", "deleted", "successful", "failed", "restarted")
    key = {e: f'kubedl_jobs_{e}{{kind="pytorchjob"}}' for e in events}
    before = await scrape()
    failing = job_manifest("PyTorchJob", "fails", {"Master": 1}, restart_policy="Never")
    await h.kube.create(KUBEDL_PYTORCHJOBS, in_group(failing, "training.kubedl.io/v1alpha1"), namespace=ns)
    retried = job_manifest("PyTorchJob", "retried", {"Master": 1}, restart_policy="ExitCode")
    await h.kube.create(KUBEDL_PYTORCHJOBS, in_group(retried, "training.kubedl.io/v1alpha1"), namespace=ns)
    await h.wait_pods(ns, "fails", 1)
    (first,) = await h.wait_pods(ns, "retried", 1)

    async def both_running() -> bool:
        return (await scrape()).get('kubedl_jobs_running{kind="pytorchjob"}') == 2

    await eventually(both_running, what="kubedl_jobs_running 2")
    await h.sim.finish(ns, "fails-master-0", exit_code=1)
    await h.sim.finish(ns, "retried-master-0", exit_code=137)
    await h.wait_true(KUBEDL_PYTORCHJOBS, ns, "fails", "Failed")
    await h.wait_recreated(ns, "retried-master-0", first["metadata"]["uid"])
    await h.finish_all(ns, "retried")
    await h.wait_true(KUBEDL_PYTORCHJOBS, ns, "retried", "Succeeded")
    await h.kube.delete(KUBEDL_PYTORCHJOBS, ns, "fails")
    await wait_gone(h, KUBEDL_PYTORCHJOBS, ns, "fails")

    async def counted() -> dict[str, float] | None:
        after = await scrape()
        delta = {e: after.get(key[e], 0) - before.get(key[e], 0) for e in events}
        return delta if delta["deleted"] else None

    assert await eventually(counted, what="the deletion counted") == {
        "created": 2,
        "deleted": 1,
        "successful": 1,
        "failed": 1,
        "restarted": 1,
    }
    after = await scrape()
    assert after['kubedl_jobs_running{kind="pytorchjob"}'] == 0
    # Every kind served has KubeDL's series from the start, 0 until counted.
    assert after['kubedl_jobs_created{kind="xgboostjob"}'] == before['kubedl_jobs_created{kind="xgboostjob"}']
    assert after['kubedl_jobs_running{kind="tfjob"}'] == 0


def _seconds(value: str) -> float:
    parsed = parse_time(value)
    assert parsed is not None
    return parsed.timestamp()


def _ready_at(pod: Obj) -> float:
    (ready,) = [c for c in pod["status"]["conditions"] if c["type"] == "Ready" and c["status"] == "True"]
    return _seconds(ready["lastTransitionTime"])


async def test_kubedl_launch_delays(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("kdllaunch")
    job = job_manifest("PyTorchJob", "launch", {"Master": 1, "Worker": 2})
    await h.kube.create(KUBEDL_PYTORCHJOBS, in_group(job, "training.kubedl.io/v1alpha1"), namespace=ns)
    kubeflow = job_manifest("PyTorchJob", "kf", {"Master": 1})
    await h.kube.create(PYTORCHJOBS, in_group(kubeflow, "kubeflow.org/v1"), namespace=ns)
    running = await h.wait_true(KUBEDL_PYTORCHJOBS, ns, "launch", "Running")
    await h.wait_true(PYTORCHJOBS, ns, "kf", "Running")
    meta = running["metadata"]
    labels = f'kind="PyTorchJob",name="launch",namespace="{ns}",uid="{meta["uid"]}"'
    first = f"kubedl_jobs_first_pod_launch_delay_seconds_{{}}{{{{{labels}}}}}"
    every = f"kubedl_jobs_all_pods_launch_delay_seconds_{{}}{{{{{labels}}}}}"

    async def observed() -> dict[str, float] | None:
        samples = await scrape()
        return samples if every.format("count") in samples else None

    samples = await eventually(observed, what="the all-pods launch delay observed")
    pods = await h.pods(ns, "launch")
    assert len(pods) == 3
    created = _seconds(meta["creationTimestamp"])
    ready = sorted(_ready_at(pod) for pod in pods)
    assert samples[first.format("count")] == 1
    assert samples[first.format("sum")] == ready[0] - created
    assert samples[every.format("count")] == 1
    assert samples[every.format("sum")] == ready[-1] - created
    # A kubeflow.org job has no such series.
    assert series(samples, "kubedl_jobs_", 'name="kf"') == {}

    await h.finish_all(ns, "launch")
    await h.wait_true(KUBEDL_PYTORCHJOBS, ns, "launch", "Succeeded")
    assert (await scrape())[first.format("count")] == 1  # observed once, whatever happened since
    await h.kube.delete(KUBEDL_PYTORCHJOBS, ns, "launch")
    await wait_gone(h, KUBEDL_PYTORCHJOBS, ns, "launch")

    async def removed() -> bool:
        return series(await scrape(), "kubedl_jobs_", f'namespace="{ns}"') == {}

    await eventually(removed, what="the deleted job's launch-delay series removed")
