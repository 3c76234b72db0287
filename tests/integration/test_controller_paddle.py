"""PaddleJob through the real controller against devcluster: the pods of a parameter-server and a
collective job, the PADDLE_* environment as the kubelet resolves it (the rendezvous pod's
`$(POD_IP_DUMMY)` becomes its IP), elastic Workers resized with the scale subresource, then
Succeeded."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import job_resource

from .controller_support import Harness, condition, eventually, is_true, job_manifest, pod_env, replica_status

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


def by_name(pods: list[Obj]) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in pods}


async def pod_log(h: Harness, ns: str, name: str) -> list[str]:
    text = await h.kube.request("get", "GET", f"/api/v1/namespaces/{ns}/pods/{name}/log")
    assert isinstance(text, str)
    return text.splitlines()


async def test_parameter_server_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pd")
    job = await h.create_job(job_manifest("PaddleJob", "ps", {"Master": 2, "Worker": 2}), ns)
    pods = by_name(await h.wait_pods(ns, "ps", 4))
    assert sorted(pods) == ["ps-master-0", "ps-master-1", "ps-worker-0", "ps-worker-1"]
    endpoint = f"ps-master-0.ps.{ns}.svc:36543"
    for name, pod in pods.items():
        labels = pod["metadata"]["labels"]
        assert (labels.get("kubetrain.io/job-role") == "master") is (name == "ps-master-0")
        assert pod["spec"]["restartPolicy"] == "OnFailure"
        env_vars = pod_env(pod, "paddle")
        assert (env_vars["PADDLE_JOB_ID"], env_vars["PADDLE_NNODES"]) == ("ps", "4")
        if name == "ps-master-0":
            assert env_vars["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
        else:
            assert env_vars["PADDLE_MASTER"] == endpoint
        role = "PADDLE_SERVER_NUM" if "master" in name else "PADDLE_TRAINER_NUM"
        assert env_vars[role] == "1"
    # The kubelet resolves the reference: Master 0 listens on its own IP.
    master0 = pods["ps-master-0"]
    log = await pod_log(h, ns, "ps-master-0")
    assert f"POD_IP_DUMMY={master0['status']['podIP']}" in log
    assert f"PADDLE_MASTER={master0['status']['podIP']}:36543" in log
    assert f"PADDLE_MASTER={endpoint}" in await pod_log(h, ns, "ps-worker-1")
    await h.wait_condition("PaddleJob", ns, "ps", "Running")
    # The Masters decide: Workers finishing is not the job finishing, one Master is not enough.
    for name in ("ps-worker-0", "ps-worker-1", "ps-master-0"):
        await h.sim.finish(ns, name)
    await h.wait_pods(ns, "ps", 3, phase="Succeeded")
    assert not is_true(await h.job("PaddleJob", ns, "ps"), "Succeeded")
    await h.sim.finish(ns, "ps-master-1")
    done = await h.wait_condition("PaddleJob", ns, "ps", "Succeeded")
    cond = condition(done, "Succeeded")
    assert cond is not None and cond["reason"] == "JobSucceeded"
    assert replica_status(done, "Master").get("succeeded") == 2
    assert job["metadata"]["uid"] == done["metadata"]["uid"]


async def test_elastic_collective_job_scales_its_workers(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("pde")
    manifest = job_manifest(
        "PaddleJob", "coll", {"Worker": 2}, extra_spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 3}}
    )
    await h.create_job(manifest, ns)
    pods = by_name(await h.wait_pods(ns, "coll", 2))
    assert pod_env(pods["coll-worker-1"])["PADDLE_MASTER"] == f"coll-worker-0.coll.{ns}.svc:36543"
    # `kubectl scale pdj/coll --replicas=3`: the scale subresource of the Workers.
    ref = job_resource("PaddleJob")
    scale = await h.kube.request("get", "GET", f"/apis/kubetrain.io/v1/namespaces/{ns}/paddlejobs/coll/scale")
    scale["spec"]["replicas"] = 3
    # No resourceVersion, as `kubectl scale` sends it: the controller's status writes between the
    # GET and the PUT must not make it a stale precondition (409).
    scale["metadata"].pop("resourceVersion", None)
    await h.kube.request(
        "update", "PUT", f"/apis/kubetrain.io/v1/namespaces/{ns}/paddlejobs/coll/scale", body=scale
    )
    pods = by_name(await h.wait_pods(ns, "coll", 3))
    assert pod_env(pods["coll-worker-2"])["PADDLE_NNODES"] == "3"
    stored = await h.kube.get(ref, ns, "coll")
    assert stored["spec"]["paddleReplicaSpecs"]["Worker"]["replicas"] == 3
    for name in sorted(pods):
        await h.sim.finish(ns, name)

    async def succeeded() -> bool:
        return is_true(await h.job("PaddleJob", ns, "coll"), "Succeeded")

    await eventually(succeeded, what="the elastic PaddleJob to succeed with all 3 Workers")
