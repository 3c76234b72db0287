"""End-to-end scenarios against a real API server (`pytest -m e2e`, needs KUBECONFIG).

The real operator (`kubetrain run`) runs on this machine with URL-mode webhook configurations
pointing at it; see tests/e2e/scenarios_support.py for the set-up, the environment variables
and the clean-up (one throw-away namespace; CRDs removed only if this run created them).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from e2e import scenarios_support as support
from jobs import exit_code_rule

from kubetrain.kube.resources import CONFIG_MAPS, SECRETS

pytestmark = support.E2E

Obj = dict[str, Any]


def needs_pod_simulator(cluster: Any) -> None:
    if cluster.simulator is None:
        pytest.skip("choosing exit codes needs the pod simulator (KUBETRAIN_E2E_SIMULATE_PODS=1)")


def succeeded(job: Obj) -> bool:
    return bool(support.has_condition(job, "Succeeded"))


JOBS = {
    "TFJob": {"Chief": 1, "Worker": 1},
    "PyTorchJob": {"Master": 1, "Worker": 1},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1},
    "XGBoostJob": {"Master": 1, "Worker": 2},
    "JAXJob": {"Worker": 2},
    "PaddleJob": {"Master": 1, "Worker": 2},
}


@pytest.mark.parametrize("kind", sorted(JOBS))
async def test_valid_job_of_each_kind_runs_to_succeeded(cluster: Any, kind: str) -> None:
    name = f"ok-{kind.lower()}"
    replicas = JOBS[kind]
    created = await cluster.create_job(support.job_manifest(kind, name, cluster.namespace, replicas))
    # The mutating webhook ran: defaults are stored in the object (docs/behaviour.md §2).
    assert created["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    total = sum(replicas.values())
    pods = await cluster.wait_pods(name, total, running=False)
    assert {p["metadata"]["name"] for p in pods} == {
        f"{name}-{rtype.lower()}-{i}" for rtype, n in replicas.items() for i in range(n)
    }
    for pod in pods:
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == (kind, name, True)
    # The job is seen running before its pods end (real kubelets may end them first: then it
    # may already have succeeded), so that its Running condition has something to turn False.
    await cluster.wait_job(
        kind, name, "Running", lambda j: support.has_condition(j, "Running") or succeeded(j)
    )
    await cluster.finish_pods(name, total)
    job = await cluster.wait_job(kind, name, "Succeeded", succeeded)
    assert job["status"]["completionTime"]
    assert support.has_condition(job, "Running", "False")


async def test_mpijob_runs_to_succeeded_with_its_config_map_and_ssh_secret(cluster: Any) -> None:
    """The launcher waits for Ready workers, mounts the hostfile ConfigMap and the SSH Secret the
    operator created (it never reads Secrets back), and the job succeeds with it."""
    name = "ok-mpijob"
    manifest = support.job_manifest(
        "MPIJob",
        name,
        cluster.namespace,
        {"Launcher": 1, "Worker": 2},
        run_policy={"cleanPodPolicy": "Running"},
    )
    manifest["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    # Workers run sshd in real MPI images; here they stay up until the launcher is done.
    worker = manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["command"] = ["sh", "-c", "sleep 3600"]
    created = await cluster.create_job(manifest)
    assert created["spec"]["mpiImplementation"] == "OpenMPI" and created["spec"]["slotsPerWorker"] == 1
    await cluster.wait_pods(name, 3, running=False, within=120)
    config = await cluster.client.get(CONFIG_MAPS, cluster.namespace, f"{name}-config")
    ns = cluster.namespace
    assert config["data"]["hostfile"] == "".join(
        f"{name}-worker-{i}.{name}.{ns}.svc slots=1\n" for i in range(2)
    )
    secret = await cluster.client.get(SECRETS, ns, f"{name}-ssh")
    assert secret["type"] == "kubernetes.io/ssh-auth" and set(secret["data"]) == {
        "ssh-privatekey",
        "ssh-publickey",
    }
    if cluster.simulator is not None:
        await cluster.simulator.finish(ns, f"{name}-launcher-0")
    job = await cluster.wait_job("MPIJob", name, "Succeeded", succeeded)
    assert job["status"]["completionTime"]


@pytest.mark.parametrize("kind", ["XGBoostJob", "JAXJob"])
async def test_pods_get_kubeflows_env_and_the_job_succeeds(cluster: Any, kind: str) -> None:
    """Every container of every pod carries the variables Kubeflow v1.9's Go code sets
    (tests/unit/kubeflow_go_env.py), with the addresses under the job's headless Service."""
    kubeflow_env = _kubeflow_env()
    name = f"env-{kind.lower()}"
    replicas = {"XGBoostJob": {"Master": 1, "Worker": 3}, "JAXJob": {"Worker": 3}}[kind]
    created = await cluster.create_job(support.job_manifest(kind, name, cluster.namespace, replicas))
    total = sum(replicas.values())
    pods = await cluster.wait_pods(name, total, running=False)
    for pod in pods:
        labels = pod["metadata"]["labels"]
        rtype = labels["kubetrain.io/replica-type"].capitalize()
        expected = kubeflow_env[kind](created, rtype, int(labels["kubetrain.io/replica-index"]))
        for c in pod["spec"]["containers"]:
            assert [(e["name"], e["value"]) for e in c["env"]] == expected[c["name"]], pod["metadata"]["name"]
    await cluster.finish_pods(name, total)
    await cluster.wait_job(kind, name, "Succeeded", succeeded)


def _kubeflow_env() -> Any:
    unit = str(Path(__file__).resolve().parents[1] / "unit")
    if unit not in sys.path:
        sys.path.insert(0, unit)
    from kubeflow_go_env import KUBEFLOW_ENV

    return KUBEFLOW_ENV


async def test_invalid_job_is_refused_at_apply_time(cluster: Any) -> None:
    job = support.invalid_job(cluster.namespace, "no-image")
    with pytest.raises(support.ApiError) as excinfo:
        await cluster.create_job(job)
    message = excinfo.value.message
    assert 'admission webhook "validate.jobs.kubetrain.io" denied the request' in message
    assert "image" in message  # names what is wrong
    assert await cluster.get_job("PyTorchJob", "no-image") is None


async def test_retryable_exit_code_recreates_the_pod_then_succeeds(cluster: Any) -> None:
    needs_pod_simulator(cluster)
    name = "exitcode-retry"
    job = support.job_manifest(
        "PyTorchJob", name, cluster.namespace, {"Master": 1, "Worker": 1}, restart_policy="ExitCode"
    )
    await cluster.create_job(job)
    pods = await cluster.wait_pods(name, 2, running=True)
    worker = next(p for p in pods if p["metadata"]["name"] == f"{name}-worker-0")
    old_uid = worker["metadata"]["uid"]
    await cluster.simulator.finish(cluster.namespace, f"{name}-worker-0", exit_code=137)  # SIGKILL: retryable

    async def recreated() -> bool:
        for pod in await cluster.pods(name):
            if pod["metadata"]["name"] == f"{name}-worker-0" and pod["metadata"]["uid"] != old_uid:
                return True
        return False

    await support.eventually(recreated, within=90, what="worker-0 recreated under the same name")
    job_now = await cluster.wait_job(
        "PyTorchJob",
        name,
        "a counted restart",
        lambda j: j.get("status", {}).get("replicaStatuses", {}).get("Worker", {}).get("restarts", 0) >= 1,
    )
    assert not support.has_condition(job_now, "Failed")
    await cluster.finish_pods(name, 2)
    await cluster.wait_job("PyTorchJob", name, "Succeeded", succeeded)


async def test_permanent_exit_code_fails_the_job(cluster: Any) -> None:
    needs_pod_simulator(cluster)
    name = "exitcode-permanent"
    job = support.job_manifest(
        "PyTorchJob", name, cluster.namespace, {"Master": 1, "Worker": 1}, restart_policy="ExitCode"
    )
    await cluster.create_job(job)
    await cluster.wait_pods(name, 2, running=True)
    await cluster.simulator.finish(cluster.namespace, f"{name}-worker-0", exit_code=1)
    failed = await cluster.wait_job(
        "PyTorchJob", name, "Failed", lambda j: support.has_condition(j, "Failed")
    )
    assert support.condition(failed, "Failed")["reason"] == "PermanentExitCode"


async def test_ttl_deletes_the_finished_job(cluster: Any) -> None:
    name = "ttl-zero"
    job = support.job_manifest(
        "TFJob", name, cluster.namespace, {"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 0}
    )
    await cluster.create_job(job)
    await cluster.finish_pods(name, 1)

    async def gone() -> bool:
        return bool(await cluster.get_job("TFJob", name) is None)

    await support.eventually(gone, within=90, what="the TFJob to be deleted by its TTL")


async def test_suspend_deletes_pods_and_resume_recreates_them(cluster: Any) -> None:
    name = "suspend-resume"
    job = support.job_manifest(
        "PyTorchJob", name, cluster.namespace, {"Master": 1, "Worker": 1}, run_policy={"suspend": True}
    )
    await cluster.create_job(job)
    suspended = await cluster.wait_job(
        "PyTorchJob", name, "Suspended", lambda j: support.has_condition(j, "Suspended")
    )
    assert await cluster.pods(name) == []
    assert suspended["status"].get("startTime") is None

    await cluster.client.patch(
        support.job_resource("PyTorchJob"),
        cluster.namespace,
        name,
        {"spec": {"runPolicy": {"suspend": False}}},
    )
    resumed = await cluster.wait_job(
        "PyTorchJob", name, "resumed", lambda j: support.has_condition(j, "Suspended", "False")
    )
    assert support.condition(resumed, "Suspended")["reason"] == "JobResumed"
    await cluster.wait_pods(name, 2, running=False)

    # Suspending a running job deletes its pods again.
    await cluster.client.patch(
        support.job_resource("PyTorchJob"),
        cluster.namespace,
        name,
        {"spec": {"runPolicy": {"suspend": True}}},
    )
    await cluster.wait_job(
        "PyTorchJob", name, "suspended again", lambda j: support.has_condition(j, "Suspended")
    )

    async def no_pods() -> bool:
        return bool(await cluster.pods(name) == [])

    await support.eventually(no_pods, within=90, what="the pods of the suspended job to be deleted")

    await cluster.client.patch(
        support.job_resource("PyTorchJob"),
        cluster.namespace,
        name,
        {"spec": {"runPolicy": {"suspend": False}}},
    )
    await cluster.finish_pods(name, 2)
    await cluster.wait_job("PyTorchJob", name, "Succeeded", succeeded)


async def test_paddlejob_collective_pods_get_kubeflows_env_and_succeed(cluster: Any) -> None:
    """The API server stores the env as kubetrain writes it: Worker 0 reads its own IP
    (`POD_IP_DUMMY` from `status.podIP`, referenced by PADDLE_MASTER), the others dial Worker 0."""
    name = "paddle-collective"
    job = support.job_manifest("PaddleJob", name, cluster.namespace, {"Worker": 3})
    await cluster.create_job(job)
    pods = {p["metadata"]["name"]: p for p in await cluster.wait_pods(name, 3, running=False)}
    ns = cluster.namespace

    def env(pod: str) -> dict[str, Any]:
        container = pods[pod]["spec"]["containers"][0]
        return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}

    worker0 = env(f"{name}-worker-0")
    assert worker0["POD_IP_DUMMY"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert worker0["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
    for i in (1, 2):
        assert env(f"{name}-worker-{i}") == {
            "PYTHONUNBUFFERED": "1",
            "PADDLE_JOB_ID": name,
            "PADDLE_NNODES": "3",
            "PADDLE_MASTER": f"{name}-worker-0.{name}.{ns}.svc:36543",
        }
    await cluster.finish_pods(name, 3)
    done = await cluster.wait_job("PaddleJob", name, "Succeeded", succeeded)
    assert done["status"]["replicaStatuses"]["Worker"]["succeeded"] == 3


async def test_restart_job_rule_restarts_every_pod_once_then_succeeds(cluster: Any) -> None:
    needs_pod_simulator(cluster)
    name = "restart-job"
    rules = [exit_code_rule("RestartJob", 42)]
    job = support.job_manifest(
        "PyTorchJob",
        name,
        cluster.namespace,
        {"Master": 1, "Worker": 2},
        restart_policy="ExitCode",
        run_policy={"backoffLimit": 3, "podFailurePolicy": {"rules": rules}},
    )
    await cluster.create_job(job)
    first = {p["metadata"]["uid"] for p in await cluster.wait_pods(name, 3, running=True)}
    await cluster.simulator.finish(cluster.namespace, f"{name}-worker-1", exit_code=42)

    async def all_recreated() -> bool:
        pods = await cluster.pods(name)
        return len(pods) == 3 and all(
            p["metadata"]["uid"] not in first and p["metadata"]["labels"].get("kubetrain.io/attempt") == "1"
            for p in pods
        )

    await support.eventually(all_recreated, within=90, what="every pod recreated as attempt 1")
    await cluster.wait_pods(name, 3, running=True)
    await cluster.finish_pods(name, 3)
    done = await cluster.wait_job("PyTorchJob", name, "Succeeded", succeeded)
    assert done["status"]["jobRestarts"] == 1
    assert sum(s.get("restarts", 0) for s in done["status"]["replicaStatuses"].values()) == 1


async def test_fail_job_rule_fails_at_once(cluster: Any) -> None:
    needs_pod_simulator(cluster)
    name = "fail-job-rule"
    rules = [exit_code_rule("FailJob", 137)]
    job = support.job_manifest(
        "TFJob",
        name,
        cluster.namespace,
        {"Worker": 2},
        restart_policy="ExitCode",
        run_policy={"backoffLimit": 5, "podFailurePolicy": {"rules": rules}},
    )
    await cluster.create_job(job)
    await cluster.wait_pods(name, 2, running=True)
    await cluster.simulator.finish(cluster.namespace, f"{name}-worker-0", exit_code=137)
    failed = await cluster.wait_job("TFJob", name, "Failed", lambda j: support.has_condition(j, "Failed"))
    cond = support.condition(failed, "Failed")
    assert cond["reason"] == "PodFailurePolicy" and "FailJob rule at index 0" in cond["message"]
