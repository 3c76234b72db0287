"""TrainJobs on devcluster held to Kubeflow Trainer 2.3's controller integration tests
(test/integration/controller/trainjob_controller_test.go). Trainer's tests write the JobSet's
status by hand and read the TrainJob's; here the pods run and finish (or fail) and the
TrainJob's conditions and `jobsStatus` are what kubetrain writes from them (docs/behaviour.md,
"Running, finishing, restarting"). Each test names the Trainer cases it answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from trainjobs import trainer_test_runtime

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
SUSPENDED = {"type": "Suspended", "status": "True", "reason": "Suspended", "message": "TrainJob is suspended"}
RESUMED = {"type": "Suspended", "status": "False", "reason": "Resumed", "message": "TrainJob is resumed"}
COMPLETE = {
    "type": "Complete",
    "status": "True",
    "reason": "AllJobsCompleted",
    "message": "jobset completed successfully",
}
FAILED_MESSAGE = "jobset failed due to one or more job failures"
MPI = {
    "numProcPerNode": 8,
    "mpiImplementation": "OpenMPI",
    "sshAuthMountPath": "/root/.ssh",
    "runLauncherAsNode": False,
}


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


def runtime_for(policy: str) -> Obj:
    """Trainer's test runtime with the ML policy `policy` ("" for none), every pod failing its
    job at once (restartPolicy Never, backoffLimit 0); with `mpi` its unlabelled `launcher`
    waiting for the nodes, the success policy on the launcher (as Trainer's MPI runtimes)."""
    ml_policy: Obj = {"numNodes": 1}
    if policy:
        ml_policy[policy] = copy.deepcopy(MPI) if policy == "mpi" else {}
    runtime = trainer_test_runtime("alpha", ml_policy=ml_policy)
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    if policy == "mpi":
        launcher = copy.deepcopy(rjobs[-1])
        launcher["name"] = "launcher"
        launcher["template"]["metadata"] = {}
        launcher["dependsOn"] = [{"name": "node", "status": "Ready"}]
        rjobs.insert(2, launcher)
        runtime["spec"]["template"]["spec"]["successPolicy"] = {
            "operator": "All",
            "targetReplicatedJobs": ["launcher"],
        }
    for rjob in rjobs:
        rjob["template"]["spec"]["backoffLimit"] = 0
        rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return runtime


def trainjob(name: str = "alpha", **spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "alpha", "kind": "TrainingRuntime"},
            "trainer": {"numNodes": 2, "image": "test:trainjob", "command": ["trainjob"]},
            **spec,
        },
    }


async def status_of(h: Harness, ns: str, name: str) -> Obj:
    tj = await h.get(TRAINJOBS, ns, name)
    assert tj is not None
    status: Obj = tj.get("status") or {}
    return status


def bare(conditions: list[Obj]) -> list[Obj]:
    """Conditions without their times (Trainer's util.IgnoreConditions)."""
    return [{k: c[k] for k in ("type", "status", "reason", "message")} for c in conditions]


async def wait_conditions(h: Harness, ns: str, name: str, want: list[Obj], *, prefix: bool = False) -> Obj:
    """Wait until the TrainJob's conditions are `want` (with `prefix`: the last one's message
    starts with `want`'s)."""

    async def check() -> Obj | None:
        status = await status_of(h, ns, name)
        got = bare(status.get("conditions") or [])
        if prefix and len(got) == len(want) and got[-1]["message"].startswith(want[-1]["message"]):
            got[-1]["message"] = want[-1]["message"]
        return status if got == want else None

    result: Obj = await eventually(check, what=f"TrainJob {name} conditions {want}")
    return result


def job_status(name: str, **counts: int) -> Obj:
    return {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0, **counts}


async def wait_jobs_status(h: Harness, ns: str, name: str, want: list[Obj]) -> None:
    seen: list[Any] = [None]

    async def check() -> bool:
        seen[0] = (await status_of(h, ns, name)).get("jobsStatus")
        return bool(seen[0] == want)

    await eventually(check, what=lambda: f"TrainJob {name} jobsStatus {want} (now {seen[0]})")


async def start_suspended(h: Harness, ns: str, policy: str) -> list[str]:
    """Trainer's opening: runtime and suspended TrainJob, Suspended=True; then resumed,
    Suspended=False (Resumed), and its pods made. Returns the steps, in the runtime's order."""
    runtime = runtime_for(policy)
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob(suspend=True), namespace=ns)
    await wait_conditions(h, ns, "alpha", [SUSPENDED])
    assert await h.pods(ns, "alpha") == []
    await h.kube.patch(TRAINJOBS, ns, "alpha", {"spec": {"suspend": False}})
    await wait_conditions(h, ns, "alpha", [RESUMED])
    inits = ["alpha-dataset-initializer-0-0", "alpha-model-initializer-0-0"]
    await h.wait_pod_names(ns, "alpha", [*inits, "alpha-node-0-0", "alpha-node-0-1"])
    for pod in inits:
        await h.sim.finish(ns, pod)
    if policy == "mpi":  # the launcher once the nodes are Ready
        await h.wait_pod_names(
            ns, "alpha", [*inits, "alpha-launcher-0-0", "alpha-node-0-0", "alpha-node-0-1"]
        )
    return [str(r["name"]) for r in runtime["spec"]["template"]["spec"]["replicatedJobs"]]


@pytest.mark.parametrize("policy", ["torch", "mpi", "jax", "xgboost", "flux"])
async def test_a_trainjob_completes_with_trainers_conditions_and_jobs_status(
    env: tuple[DevStack, Harness], policy: str
) -> None:
    """Trainer: "Should succeeded to reconcile TrainJob conditions with Complete condition" (Torch,
    OpenMPI runtimes) and "Should succeed to reconcile TrainJob conditions with Complete condition"
    (Jax, XGBoost, Flux runtimes): Suspended=True (Suspended), then Suspended=False (Resumed)
    and Complete=True (AllJobsCompleted), one jobsStatus entry per replicated job."""
    _, h = env
    ns = await h.namespace(f"done-{policy}")
    steps = await start_suspended(h, ns, policy)
    last = "alpha-launcher-0-0" if policy == "mpi" else None
    for pod in ("alpha-node-0-0", "alpha-node-0-1") if last is None else (last,):
        await h.sim.finish(ns, pod)
    await wait_conditions(h, ns, "alpha", [RESUMED, COMPLETE])
    done = {"dataset-initializer", "model-initializer", "launcher" if policy == "mpi" else "node"}
    await wait_jobs_status(h, ns, "alpha", [job_status(s, succeeded=int(s in done)) for s in steps])


@pytest.mark.parametrize("policy", ["torch", "mpi", "jax", "xgboost", "flux"])
async def test_a_trainjob_fails_with_trainers_conditions_and_jobs_status(
    env: tuple[DevStack, Harness], policy: str
) -> None:
    """Trainer: "Should succeeded to reconcile TrainJob conditions with Failed condition" (Torch,
    OpenMPI runtimes) and "Should succeed to reconcile TrainJob conditions with Failed condition"
    (Jax, XGBoost, Flux runtimes): Suspended=False (Resumed) and Failed=True (FailedJobs,
    JobSet's message), the failed replicated job counted in jobsStatus."""
    _, h = env
    ns = await h.namespace(f"fail-{policy}")
    steps = await start_suspended(h, ns, policy)
    failing = "launcher" if policy == "mpi" else "node"
    await h.sim.finish(ns, f"alpha-{failing}-0-0", exit_code=1)
    failed = {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": FAILED_MESSAGE}
    status = await wait_conditions(h, ns, "alpha", [RESUMED, failed], prefix=True)
    assert f"(first failed job: alpha-{failing}-0)" in status["conditions"][-1]["message"]
    inits = {"dataset-initializer", "model-initializer"}
    await wait_jobs_status(
        h, ns, "alpha", [job_status(s, succeeded=int(s in inits), failed=int(s == failing)) for s in steps]
    )


async def test_a_suspended_trainjob_takes_patch_and_trainer_changes_but_keeps_its_snapshot(
    env: tuple[DevStack, Harness],
) -> None:
    """Trainer: "Should succeeded to update JobSet when TrainJob is suspended" (a runtime patch's
    nodeSelector changed while suspended reaches the pods; its last step, an image change refused
    while suspended, is kubetrain's documented **Decision** the other way: the resumed pods run
    the new image) and "Should use the runtime snapshot during reconciliation rather than the
    current runtime contents" (a runtime edited while the TrainJob is suspended changes nothing)."""
    _, h = env
    ns = await h.namespace("patch")
    runtime = runtime_for("")
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]
    node["metadata"] = {"labels": {"snapshot-test-marker": "snapshot-v1"}}
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)

    def patch(selector: dict[str, str]) -> Obj:
        pod = {"spec": {"template": {"spec": {"nodeSelector": selector}}}}
        rjobs = [{"name": "node", "template": pod}]
        return {
            "manager": "test.io/manager",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": rjobs}}},
        }

    job = trainjob(suspend=True, runtimePatches=[patch({"before": "selector"})])
    job["spec"]["trainer"]["numNodes"] = 1
    await h.kube.create(TRAINJOBS, job, namespace=ns)

    async def snapshot_text() -> str | None:
        cm = await h.get(CONFIG_MAPS, ns, "alpha-runtime-snapshot")
        return str(cm["data"]["runtime"]) if cm is not None else None

    assert "snapshot-v1" in await eventually(snapshot_text, what="the runtime snapshot")
    stored = await h.kube.get(TRAINING_RUNTIMES, ns, "alpha")
    stored["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["metadata"][
        "labels"
    ] = {"snapshot-test-marker": "snapshot-v2"}
    await h.kube.replace(TRAINING_RUNTIMES, stored)
    await h.kube.patch(
        TRAINJOBS,
        ns,
        "alpha",
        {"spec": {"runtimePatches": [patch({"updated": "selector"})], "trainer": {"image": "new-image"}}},
    )
    await h.kube.patch(TRAINJOBS, ns, "alpha", {"spec": {"suspend": False}})
    pods = await h.wait_pod_names(
        ns, "alpha", ["alpha-dataset-initializer-0-0", "alpha-model-initializer-0-0", "alpha-node-0-0"]
    )
    node_pod = next(p for p in pods if p["metadata"]["name"] == "alpha-node-0-0")
    assert node_pod["spec"]["nodeSelector"] == {"updated": "selector"}
    assert node_pod["metadata"]["labels"]["snapshot-test-marker"] == "snapshot-v1"
    assert node_pod["spec"]["containers"][0]["image"] == "new-image"
    text = await snapshot_text()
    assert text is not None and "snapshot-v1" in text and "snapshot-v2" not in text


async def test_a_deleted_snapshot_is_made_again(env: tuple[DevStack, Harness]) -> None:
    """Trainer: "Should create snapshots for existing TrainJobs that were created before the
    snapshot feature was added": the snapshot deleted, the TrainJob's next reconcile (an
    annotation change) makes it again from the runtime."""
    _, h = env
    ns = await h.namespace("resnap")
    await h.kube.create(TRAINING_RUNTIMES, runtime_for("torch"), namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob(suspend=True), namespace=ns)

    async def snapshot() -> Obj | None:
        return await h.get(CONFIG_MAPS, ns, "alpha-runtime-snapshot")

    await eventually(snapshot, what="the runtime snapshot")
    await h.kube.delete(CONFIG_MAPS, ns, "alpha-runtime-snapshot")
    await eventually(lambda: h.absent(CONFIG_MAPS, ns, "alpha-runtime-snapshot"), what="the snapshot gone")
    await h.kube.patch(TRAINJOBS, ns, "alpha", {"metadata": {"annotations": {"migration-test": "trigger"}}})
    made = await eventually(snapshot, what="the runtime snapshot made again")
    assert yaml.safe_load(made["data"]["runtime"])["metadata"]["name"] == "alpha"


async def test_a_trainjob_managed_by_multikueue_gets_no_status_and_no_children(
    env: tuple[DevStack, Harness],
) -> None:
    """Trainer: "Should not reconcile TrainJob managed by an external controller": no JobSet (here
    no pods, Service or snapshot) and no status, while a TrainJob of kubetrain's next to it runs."""
    _, h = env
    ns = await h.namespace("mkq")
    await h.kube.create(TRAINING_RUNTIMES, runtime_for("torch"), namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob("remote", managedBy="kueue.x-k8s.io/multikueue"), namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob("local", suspend=True), namespace=ns)
    await wait_conditions(h, ns, "local", [SUSPENDED])  # the controller has reconciled this namespace
    assert await status_of(h, ns, "remote") == {}
    assert await h.pods(ns, "remote") == []
    assert await h.service(ns, "remote") is None
    assert await h.get(CONFIG_MAPS, ns, "remote-runtime-snapshot") is None


async def test_trainers_count_bounds_are_refused_with_trainers_messages(
    env: tuple[DevStack, Harness],
) -> None:
    """Trainer #3809 (after 2.3; test/integration/webhooks): "… with negative numNodes" refused by
    the CRD's `minimum: 0` (the API server's message), "… with zero numProcPerNode" by its CEL
    rule (the API server evaluates it before the webhooks), "… trainingRuntime with
    mpi.numProcPerNode < 1" likewise — each field named once; nothing is stored."""
    _, h = env
    ns = await h.namespace("bounds")
    await h.kube.create(TRAINING_RUNTIMES, runtime_for("torch"), namespace=ns)
    cases = [
        ({"numNodes": -1}, "spec.trainer.numNodes in body should be greater than or equal to 0"),
        ({"numProcPerNode": 0}, "numProcPerNode must be greater than or equal to 1"),
    ]
    for change, message in cases:
        job = trainjob()
        job["spec"]["trainer"].update(change)
        with pytest.raises(ApiError) as refused:
            await h.kube.create(TRAINJOBS, job, namespace=ns)
        assert refused.value.status == 422
        assert message in str(refused.value)
        assert str(refused.value).count(f"spec.trainer.{next(iter(change))}:") == 1
    assert await h.get(TRAINJOBS, ns, "alpha") is None
    mpi = runtime_for("mpi")
    mpi["metadata"]["name"] = "beta"
    mpi["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] = 0
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINING_RUNTIMES, mpi, namespace=ns)
    assert refused.value.status == 422
    assert (
        "spec.mlPolicy.mpi.numProcPerNode: Invalid value: 0: NumProcPerNode in mpiPolicy must be >= 1"
        in str(refused.value)
    )
    assert await h.get(TRAINING_RUNTIMES, ns, "beta") is None
