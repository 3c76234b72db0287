"""Each framework's happy path through the real controller against devcluster: the pods and the
headless Service it creates (names, labels, ownerReferences, env vars), then Succeeded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import (
    Harness,
    condition,
    is_true,
    job_manifest,
    pod_env,
    replica_status,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


def by_name(pods: list[Obj]) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in pods}


def check_child_metadata(obj: Obj, job: Obj) -> None:
    meta = obj["metadata"]
    refs = [r for r in meta.get("ownerReferences") or () if r.get("controller")]
    assert refs == [
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": job["kind"],
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    labels = meta["labels"]
    assert labels["kubetrain.io/job-name"] == job["metadata"]["name"]
    assert labels["app.kubernetes.io/managed-by"] == "kubetrain"


def check_pod_labels(pod: Obj, job: Obj, rtype: str, index: int, *, master: bool) -> None:
    check_child_metadata(pod, job)
    labels = pod["metadata"]["labels"]
    assert labels["kubetrain.io/job-kind"] == job["kind"]
    assert labels["kubetrain.io/replica-type"] == rtype.lower()
    assert labels["kubetrain.io/replica-index"] == str(index)
    assert (labels.get("kubetrain.io/job-role") == "master") is master, pod["metadata"]["name"]
    assert pod["spec"]["hostname"] == pod["metadata"]["name"]
    assert pod["spec"]["subdomain"] == job["metadata"]["name"]


async def check_service(h: Harness, ns: str, job: Obj) -> None:
    svc = await h.service(ns, job["metadata"]["name"])
    assert svc is not None, "the headless Service is created"
    check_child_metadata(svc, job)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {"kubetrain.io/job-name": job["metadata"]["name"]}


async def run_to_success(h: Harness, ns: str, job: Obj, finish_order: list[str]) -> Obj:
    kind, name = job["kind"], job["metadata"]["name"]
    for pod_name in finish_order:
        await h.sim.finish(ns, pod_name)
    done = await h.wait_condition(kind, ns, name, "Succeeded")
    cond = condition(done, "Succeeded")
    assert cond is not None and cond["reason"] == "JobSucceeded"
    assert not is_true(done, "Running")
    assert done["status"].get("completionTime")
    assert done["status"].get("startTime")
    await h.wait_event(ns, name, "JobSucceeded")
    return done


async def test_tf_ps_worker(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tf")
    job = await h.create_job(job_manifest("TFJob", "tfps", {"PS": 2, "Worker": 2}), ns)
    pods = by_name(await h.wait_pods(ns, "tfps", 4))
    assert sorted(pods) == ["tfps-ps-0", "tfps-ps-1", "tfps-worker-0", "tfps-worker-1"]
    await check_service(h, ns, job)
    addr = "{}.tfps." + ns + ".svc:2222"
    cluster = {
        "ps": [addr.format("tfps-ps-0"), addr.format("tfps-ps-1")],
        "worker": [addr.format("tfps-worker-0"), addr.format("tfps-worker-1")],
    }
    for name, pod in pods.items():
        rtype, index = name.split("-")[1], int(name.split("-")[2])
        check_pod_labels(pod, job, "PS" if rtype == "ps" else "Worker", index, master=name == "tfps-worker-0")
        assert pod["spec"]["restartPolicy"] == "Never"
        tf_config = json.loads(pod_env(pod, "tensorflow")["TF_CONFIG"])
        assert tf_config == {
            "cluster": cluster,
            "task": {"type": rtype, "index": index},
            "environment": "cloud",
        }
        ports = pod["spec"]["containers"][0]["ports"]
        assert {"name": "tfjob-port", "containerPort": 2222} in [
            {k: p[k] for k in ("name", "containerPort")} for p in ports
        ]
    running = await h.wait_condition("TFJob", ns, "tfps", "Running")
    assert condition(running, "Created") is not None
    # No Chief: Worker 0 succeeding is the job succeeding (default successPolicy); PS keep running.
    done = await run_to_success(h, ns, job, ["tfps-worker-0"])
    assert replica_status(done, "Worker").get("succeeded", 0) >= 1
    # cleanPodPolicy defaults to Running: the still-running pods and the Service are deleted.
    await h.wait_pod_names(ns, "tfps", ["tfps-worker-0"])
    assert (await h.pod(ns, "tfps-worker-0") or {})["status"]["phase"] == "Succeeded"


async def test_tf_with_chief(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tfc")
    job = await h.create_job(
        job_manifest("TFJob", "tfc", {"Chief": 1, "Worker": 2, "Evaluator": 1}, restart_policy="Never"), ns
    )
    pods = by_name(await h.wait_pods(ns, "tfc", 4))
    for name, pod in pods.items():
        rtype = name.split("-")[1]
        tf_config = json.loads(pod_env(pod)["TF_CONFIG"])
        assert sorted(tf_config["cluster"]) == ["chief", "evaluator", "worker"]
        assert tf_config["cluster"]["chief"] == [f"tfc-chief-0.tfc.{ns}.svc:2222"]
        assert tf_config["task"] == {"type": rtype, "index": int(name.split("-")[2])}
        labels = pod["metadata"]["labels"]
        assert (labels.get("kubetrain.io/job-role") == "master") is (rtype == "chief")
    # Workers finishing first do not end the job: the Chief decides.
    await h.sim.finish(ns, "tfc-worker-0")
    await h.sim.finish(ns, "tfc-worker-1")
    await h.wait_pods(ns, "tfc", 2, phase="Succeeded")
    current = await h.job("TFJob", ns, "tfc")
    assert not is_true(current, "Succeeded")
    await run_to_success(h, ns, job, ["tfc-chief-0"])
    await h.wait_pod_names(ns, "tfc", ["tfc-chief-0", "tfc-worker-0", "tfc-worker-1"])


async def test_pytorch_ddp(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pt")
    job = await h.create_job(job_manifest("PyTorchJob", "ddp", {"Master": 1, "Worker": 3}), ns)
    pods = by_name(await h.wait_pods(ns, "ddp", 4))
    await check_service(h, ns, job)
    for name, pod in pods.items():
        rtype, index = name.split("-")[1], int(name.split("-")[2])
        check_pod_labels(
            pod, job, "Master" if rtype == "master" else "Worker", index, master=rtype == "master"
        )
        assert pod["spec"]["restartPolicy"] == "OnFailure"
        env_vars = pod_env(pod, "pytorch")
        rank = 0 if rtype == "master" else index + 1
        assert env_vars["MASTER_ADDR"] == f"ddp-master-0.ddp.{ns}.svc"
        assert env_vars["MASTER_PORT"] == "23456"
        assert env_vars["PET_MASTER_ADDR"] == env_vars["MASTER_ADDR"]
        assert env_vars["PET_MASTER_PORT"] == "23456"
        assert env_vars["WORLD_SIZE"] == "4"
        assert env_vars["RANK"] == str(rank)
        assert env_vars["PET_NODE_RANK"] == str(rank)
        assert env_vars["PYTHONUNBUFFERED"] == "1"
        assert env_vars["PET_NNODES"] == "4"
    await h.wait_condition("PyTorchJob", ns, "ddp", "Running")
    # The Master decides; workers still running are cleaned up (cleanPodPolicy Running).
    done = await run_to_success(h, ns, job, ["ddp-master-0"])
    assert replica_status(done, "Master").get("succeeded") == 1
    # The last status does not show the workers cleanPodPolicy deletes as active.
    assert replica_status(done, "Worker").get("active") == 0
    await h.wait_pod_names(ns, "ddp", ["ddp-master-0"])


async def test_pytorch_elastic(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pte")
    manifest = job_manifest(
        "PyTorchJob",
        "elastic",
        {"Worker": 3},
        extra_spec={
            "elasticPolicy": {
                "minReplicas": 2,
                "maxReplicas": 4,
                "maxRestarts": 5,
                "rdzvId": "run-7",
                "rdzvConf": [{"key": "timeout", "value": "900"}, {"key": "join_timeout", "value": "60"}],
            },
            "nprocPerNode": "2",
        },
    )
    job = await h.create_job(manifest, ns)
    pods = by_name(await h.wait_pods(ns, "elastic", 3))
    for name, pod in pods.items():
        index = int(name.split("-")[2])
        env_vars = pod_env(pod, "pytorch")
        assert env_vars["PET_NNODES"] == "2:4"
        assert env_vars["PET_RDZV_ENDPOINT"] == f"elastic-worker-0.elastic.{ns}.svc:23456"
        assert env_vars["PET_RDZV_BACKEND"] == "c10d"
        assert env_vars["PET_RDZV_ID"] == "run-7"
        assert env_vars["PET_RDZV_CONF"] == "timeout=900,join_timeout=60"
        assert env_vars["PET_MAX_RESTARTS"] == "5"
        assert env_vars["PET_NPROC_PER_NODE"] == "2"
        assert "MASTER_ADDR" not in env_vars  # no Master replica
        labels = pod["metadata"]["labels"]
        assert (labels.get("kubetrain.io/job-role") == "master") is (index == 0)
    # Elastic: any Worker succeeding is the job succeeding.
    await run_to_success(h, ns, job, ["elastic-worker-2"])


async def test_mxnet_distributed(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("mx")
    job = await h.create_job(job_manifest("MXJob", "mxd", {"Scheduler": 1, "Server": 2, "Worker": 2}), ns)
    pods = by_name(await h.wait_pods(ns, "mxd", 5))
    await check_service(h, ns, job)
    for name, pod in pods.items():
        rtype, index = name.split("-")[1], int(name.split("-")[2])
        env_vars = pod_env(pod, "mxnet")
        assert env_vars["DMLC_PS_ROOT_URI"] == f"mxd-scheduler-0.mxd.{ns}.svc"
        assert env_vars["DMLC_PS_ROOT_PORT"] == "9091"
        assert env_vars["DMLC_NUM_SERVER"] == "2"
        assert env_vars["DMLC_NUM_WORKER"] == "2"
        assert env_vars["DMLC_ROLE"] == rtype
        assert env_vars["DMLC_USE_KUBERNETES"] == "1"
        assert ("DMLC_WORKER_ID" in env_vars) is (rtype == "worker")
        if rtype == "worker":
            assert env_vars["DMLC_WORKER_ID"] == str(index)
        mx_config = json.loads(env_vars["MX_CONFIG"])
        assert mx_config["task"] == {"type": rtype, "index": index}
        assert mx_config["cluster"]["scheduler"] == [{"url": f"mxd-scheduler-0.mxd.{ns}.svc", "port": 9091}]
        labels = pod["metadata"]["labels"]
        assert (labels.get("kubetrain.io/job-role") == "master") is (rtype == "scheduler")
    # Workers finishing do not end a distributed job; the Scheduler does.
    await h.sim.finish(ns, "mxd-worker-0")
    await h.wait_pods(ns, "mxd", 1, phase="Succeeded")
    assert not is_true(await h.job("MXJob", ns, "mxd"), "Succeeded")
    await run_to_success(h, ns, job, ["mxd-scheduler-0"])


async def test_mxnet_local(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("mxl")
    job = await h.create_job(job_manifest("MXJob", "mxl", {"Worker": 1}), ns)
    pods = await h.wait_pods(ns, "mxl", 1)
    env_vars = pod_env(pods[0], "mxnet")
    # A local job gets MX_CONFIG and DMLC_* too, as Kubeflow sets them (no Scheduler: root "" / 0).
    assert json.loads(env_vars["MX_CONFIG"])["task"] == {"type": "worker", "index": 0}
    assert (env_vars["DMLC_PS_ROOT_URI"], env_vars["DMLC_PS_ROOT_PORT"]) == ("", "0")
    role = (env_vars["DMLC_ROLE"], env_vars["DMLC_NUM_WORKER"], env_vars["DMLC_WORKER_ID"])
    assert role == ("worker", "1", "0")
    done = await run_to_success(h, ns, job, ["mxl-worker-0"])
    assert replica_status(done, "Worker").get("succeeded") == 1
