"""TrainJobs run natively (no JobSet) through the controller against devcluster: Trainer's own
torch-distributed ClusterTrainingRuntime, a 2-node TrainJob → pods named, labelled and addressed
as JobSet + Job make them, Trainer's torch env, the headless Service, the runtime snapshot,
dependsOn ordering of initializers, Complete/Failed with JobSet's reasons, whole-gang restarts
(maxRestarts), suspend/resume and managedBy."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, TRAINING_RUNTIMES, TRAINJOBS
from kubetrain.serving.metrics import REGISTRY

from .controller_support import Harness, eventually, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"


def load(path: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((DATA / path).read_text()) if d]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    # DevStack installs Trainer's default ClusterTrainingRuntimes (torch-distributed among them).
    async for stack, h in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        yield stack, h


def training_runtime(name: str, source: Obj | None = None) -> Obj:
    """A namespaced TrainingRuntime `name` with the labels of `source` (by default Trainer's
    torch_distributed runtime), which it copies."""
    runtime = copy.deepcopy(source if source is not None else load("runtimes/torch_distributed.yaml")[0])
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": name, "labels": runtime["metadata"]["labels"]}
    return runtime


def strict_runtime(name: str = "strict", max_restarts: int = 1) -> Obj:
    """A TrainingRuntime whose node pods are never retried in place (backoffLimit 0, restart
    policy Never): a failed pod fails its Job, and the JobSet restarts up to `max_restarts`."""
    runtime = training_runtime(name)
    rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    rjob["template"]["spec"]["backoffLimit"] = 0
    rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    return runtime


def trainjob(
    name: str,
    *,
    num_nodes: int = 2,
    runtime: str = "torch-distributed",
    runtime_kind: str | None = None,
    **spec: Any,
) -> Obj:
    """A TrainJob of `runtime` (a ClusterTrainingRuntime unless `runtime_kind` says otherwise)."""
    ref = {"name": runtime, **({"kind": runtime_kind} if runtime_kind else {})}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": ref,
            "trainer": {
                "numNodes": num_nodes,
                "command": ["torchrun", "train.py"],
                "env": [{"name": "CUSTOM", "value": "x"}],
                "resourcesPerNode": {"requests": {"cpu": "2"}},
            },
            **spec,
        },
    }


async def get_tj(h: Harness, ns: str, name: str) -> Obj:
    obj = await h.get(TRAINJOBS, ns, name)
    assert obj is not None
    return obj


async def wait_condition(h: Harness, ns: str, name: str, ctype: str) -> Obj:
    async def check() -> Obj | None:
        tj = await get_tj(h, ns, name)
        for cond in (tj.get("status") or {}).get("conditions") or []:
            if cond["type"] == ctype and cond["status"] == "True":
                return tj
        return None

    result: Obj = await eventually(check, what=f"TrainJob {name} {ctype}")
    return result


def env_of(pod: Obj, container: str = "node") -> dict[str, Any]:
    for c in pod["spec"]["containers"]:
        if c["name"] == container:
            return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}
    raise AssertionError(container)


async def test_a_torch_trainjob_runs_as_jobset_would_and_completes(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tj")
    await h.kube.create(TRAINJOBS, trainjob("mnist"), namespace=ns)
    pods = await h.wait_pod_names(ns, "mnist", ["mnist-node-0-0", "mnist-node-0-1"])
    for index, pod in enumerate(pods):
        labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        assert labels["jobset.sigs.k8s.io/jobset-name"] == "mnist"
        assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
        assert labels["jobset.sigs.k8s.io/job-index"] == "0"
        assert labels["batch.kubernetes.io/job-completion-index"] == str(index)
        assert annotations["batch.kubernetes.io/job-completion-index"] == str(index)
        assert labels["batch.kubernetes.io/job-name"] == "mnist-node-0"
        assert pod["spec"]["hostname"] == f"mnist-node-0-{index}" and pod["spec"]["subdomain"] == "mnist"
        assert pod["spec"]["restartPolicy"] == "OnFailure"
        env = env_of(pod)
        assert env["PET_NNODES"] == "2"
        assert env["PET_NPROC_PER_NODE"] == "2"  # no GPU: the CPU request
        assert env["PET_NODE_RANK"] == {  # the API server defaults a fieldRef's apiVersion
            "fieldRef": {
                "apiVersion": "v1",
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
            }
        }
        assert env["PET_MASTER_ADDR"] == "mnist-node-0-0.mnist"
        assert env["PET_MASTER_PORT"] == "29500"
        assert env["CUSTOM"] == "x"
        node = pod["spec"]["containers"][0]
        assert node["command"] == ["torchrun", "train.py"]
        assert {"containerPort": 29500, "protocol": "TCP"} in node["ports"] or {
            "containerPort": 29500
        } in node["ports"]
        assert node["resources"]["requests"]["cpu"] == "2"
    service = await h.service(ns, "mnist")
    assert service is not None
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "mnist"}
    assert service["spec"]["publishNotReadyAddresses"] is True
    snapshot = await h.get(CONFIG_MAPS, ns, "mnist-runtime-snapshot")
    assert snapshot is not None and "torch-distributed" in snapshot["data"]["runtime"]
    tj = await get_tj(h, ns, "mnist")
    assert not (tj.get("status") or {}).get("conditions")  # the SDK computes Running itself
    from kubetrain.serving.metrics import REGISTRY

    labels = {"kind": "TrainJob", "namespace": ns}
    await h.finish_all(ns, "mnist")
    tj = await wait_condition(h, ns, "mnist", "Complete")
    assert REGISTRY.get_sample_value("kubetrain_jobs_succeeded_total", labels) == 1.0
    complete = tj["status"]["conditions"][-1]
    assert complete["reason"] == "AllJobsCompleted" and complete["lastTransitionTime"]
    assert {c["type"] for c in tj["status"]["conditions"]} == {"Complete"}
    assert tj["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]


async def test_a_runtime_without_dns_hostnames_runs_without_a_headless_service(
    env: tuple[DevStack, Harness],
) -> None:
    """JobSet's `network.enableDNSHostnames: false`: the pods run and the TrainJob completes,
    with no headless Service and no pod subdomain."""
    _, h = env
    ns = await h.namespace("tjnodns")
    runtime = training_runtime("nodns")
    runtime["spec"]["template"]["spec"]["network"] = {"enableDNSHostnames": False}
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(
        TRAINJOBS, trainjob("quiet", runtime="nodns", runtime_kind="TrainingRuntime"), namespace=ns
    )
    pods = await h.wait_pod_names(ns, "quiet", ["quiet-node-0-0", "quiet-node-0-1"])
    for pod in pods:
        assert pod["spec"]["hostname"] == pod["metadata"]["name"] and "subdomain" not in pod["spec"]
    await h.finish_all(ns, "quiet")
    await wait_condition(h, ns, "quiet", "Complete")
    assert await h.service(ns, "quiet") is None


async def test_the_headless_service_of_a_runtime_subdomain_is_created_once(
    env: tuple[DevStack, Harness],
) -> None:
    """Under a runtime's `network.subdomain` the headless Service is named after it, not after
    the TrainJob: the operator finds it by that name, so it creates it once, not again (answered
    409) at every reconcile."""
    _, h = env
    ns = await h.namespace("tjsubdomain")
    runtime = training_runtime("fleet")
    runtime["spec"]["template"]["spec"]["network"] = {"subdomain": "fleet"}
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(
        TRAINJOBS, trainjob("ships", runtime="fleet", runtime_kind="TrainingRuntime"), namespace=ns
    )
    await h.wait_pod_names(ns, "ships", ["ships-node-0-0", "ships-node-0-1"])
    await h.finish_all(ns, "ships")
    await wait_condition(h, ns, "ships", "Complete")
    service = await h.service(ns, "fleet")
    assert service is not None and service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "ships"}
    assert h.requests.count(verb="create", resource="services", user_agent="kubetrain/", namespace=ns) == 1


async def test_a_runtime_edit_after_start_changes_no_running_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("snap")
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("mine"), namespace=ns)
    job = trainjob("snap", num_nodes=1, runtime="mine", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    [pod] = await h.wait_pod_names(ns, "snap", ["snap-node-0-0"])
    image = pod["spec"]["containers"][0]["image"]
    stored = await h.kube.get(TRAINING_RUNTIMES, ns, "mine")
    container = stored["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]["containers"][0]
    container["image"] = "changed:latest"
    await h.kube.replace(TRAINING_RUNTIMES, stored)
    await h.kube.delete(__import__("kubetrain.kube.resources", fromlist=["PODS"]).PODS, ns, "snap-node-0-0")
    recreated = await eventually(
        lambda: _new_pod(h, ns, "snap-node-0-0", pod["metadata"]["uid"]), what="snap-node-0-0 recreated"
    )
    assert recreated["spec"]["containers"][0]["image"] == image


async def _new_pod(h: Harness, ns: str, name: str, old_uid: str) -> Obj | None:
    pod = await h.pod(ns, name)
    return pod if pod is not None and pod["metadata"]["uid"] != old_uid else None


async def test_initializers_finish_before_the_nodes_start(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("init")
    runtime, job = load("examples/05-multi-step.yaml")
    await h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns)
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    name = job["metadata"]["name"]
    [init] = await h.wait_pod_names(ns, name, [f"{name}-dataset-initializer-0-0"])
    env_init = env_of(init, "dataset-initializer")
    assert env_init["STORAGE_URI"] == "hf://tatsu-lab/alpaca"
    assert [p["metadata"]["name"] for p in await h.pods(ns, name)] == [f"{name}-dataset-initializer-0-0"]
    await h.sim.finish(ns, f"{name}-dataset-initializer-0-0")
    await h.wait_pod_names(
        ns, name, [f"{name}-dataset-initializer-0-0", f"{name}-node-0-0", f"{name}-node-0-1"]
    )


async def test_a_failed_step_restarts_the_gang_then_fails_the_job(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("fail")
    await h.kube.create(TRAINING_RUNTIMES, strict_runtime(), namespace=ns)
    job = trainjob("boom", num_nodes=2, runtime="strict", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    first = await h.wait_pod_names(ns, "boom", ["boom-node-0-0", "boom-node-0-1"])
    await h.sim.finish(ns, "boom-node-0-1", exit_code=1)

    async def second_attempt() -> list[Obj] | None:
        pods = await h.pods(ns, "boom")
        fresh = [
            p
            for p in pods
            if p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == "1"
            and not p["metadata"].get("deletionTimestamp")
        ]
        return fresh if len(fresh) == 2 else None

    await eventually(second_attempt, what="both pods recreated as restart attempt 1")
    assert first[0]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"
    # the whole-gang restart is counted like any other kind's restarts, exactly once
    assert restarted(ns) == 1.0
    await h.sim.finish(ns, "boom-node-0-0", exit_code=1)
    tj = await wait_condition(h, ns, "boom", "Failed")
    assert restarted(ns) == 1.0  # reaching maxRestarts fails it: no further restart
    failed = next(c for c in tj["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ReachedMaxRestarts"
    assert "RestartJobSetFailurePolicyAction" in await h.event_reasons(ns, "boom")


def restarted(ns: str) -> float:
    labels = {"kind": "TrainJob", "namespace": ns}
    return REGISTRY.get_sample_value("kubetrain_jobs_restarted_total", labels) or 0.0


async def set_suspend(h: Harness, ns: str, name: str, value: bool) -> None:
    await h.change(TRAINJOBS, ns, name, lambda tj: tj["spec"].update(suspend=value))


async def test_suspend_deletes_the_pods_and_resume_recreates_them(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("susp")
    await h.kube.create(TRAINJOBS, trainjob("pause", num_nodes=1), namespace=ns)
    await h.wait_pod_names(ns, "pause", ["pause-node-0-0"])
    await set_suspend(h, ns, "pause", True)
    tj = await wait_condition(h, ns, "pause", "Suspended")
    assert tj["status"]["conditions"][0]["reason"] == "Suspended"
    await eventually(lambda: h._none_left(ns, "pause"), what="pods of a suspended TrainJob deleted")
    await set_suspend(h, ns, "pause", False)
    await h.wait_pod_names(ns, "pause", ["pause-node-0-0"])

    async def resumed() -> bool:
        # The pods are created before the status is written (the applier's order): wait for it.
        suspended = (await get_tj(h, ns, "pause"))["status"]["conditions"][0]
        return bool(suspended["status"] == "False" and suspended["reason"] == "Resumed")

    await eventually(resumed, what="TrainJob pause Suspended=False, reason Resumed")


async def test_a_trainjob_managed_by_multikueue_is_left_alone(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("mk")
    await h.kube.create(TRAINJOBS, trainjob("remote", managedBy="kueue.x-k8s.io/multikueue"), namespace=ns)
    await h.kube.create(TRAINJOBS, trainjob("local", num_nodes=1), namespace=ns)
    await h.wait_pod_names(ns, "local", ["local-node-0-0"])
    assert await h.pods(ns, "remote") == []
    assert await h.service(ns, "remote") is None


async def refusal(h: Harness, coro: Any) -> str:
    from kubetrain.kube.client import ApiError

    try:
        await coro
    except ApiError as err:
        return str(err)
    raise AssertionError("the API server accepted it")


async def test_invalid_trainjobs_are_refused_naming_every_field(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("bad")
    job = trainjob("bad", num_nodes=0)
    job["spec"]["trainer"]["numProcPerNode"] = 0
    job["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "9"})
    job["spec"]["managedBy"] = "someone/else"
    job["spec"]["runtimePatches"] = [
        {
            "manager": "me",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher"}]}}},
        }
    ]
    # The CRD's CEL rules on numProcPerNode and managedBy refuse first, in the API server's own
    # validation, so the validating webhook is not called (as on kube-apiserver).
    message = await refusal(h, h.kube.create(TRAINJOBS, job, namespace=ns))
    assert message.endswith(
        '"bad" is invalid: [spec.managedBy: Invalid value: "someone/else": ManagedBy must be '
        "trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set, "
        "spec.trainer.numProcPerNode: Invalid value: 0: "
        "numProcPerNode must be greater than or equal to 1]"
    ), message
    job["spec"]["trainer"]["numProcPerNode"] = 1
    del job["spec"]["managedBy"]
    message = await refusal(h, h.kube.create(TRAINJOBS, job, namespace=ns))
    for path in (
        "spec.trainer.numNodes",
        "spec.trainer.env[1].name",
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name",
    ):
        assert path in message, (path, message)
    missing = trainjob("nort", runtime="no-such-runtime")
    message = await refusal(h, h.kube.create(TRAINJOBS, missing, namespace=ns))
    assert "spec.runtimeRef.name" in message and "no-such-runtime" in message


async def test_defaults_and_immutable_fields(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("imm")
    created = await h.kube.create(TRAINJOBS, trainjob("imm", num_nodes=1), namespace=ns)
    assert created["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert created["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    changed = copy.deepcopy(created)
    changed["spec"]["trainer"]["numNodes"] = 3
    changed["spec"]["runtimeRef"]["name"] = "other"
    # the CRD's `self == oldSelf` on runtimeRef refuses before the webhook is called
    message = await refusal(h, h.kube.replace(TRAINJOBS, changed))
    assert message.endswith('"imm" is invalid: spec.runtimeRef: Invalid value: field is immutable'), message
    changed["spec"]["runtimeRef"] = created["spec"]["runtimeRef"]
    message = await refusal(h, h.kube.replace(TRAINJOBS, changed))
    assert message.endswith("spec.trainer: Invalid: field is immutable while the TrainJob is not suspended")


async def test_runtimes_are_validated_and_protected_while_in_use(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("rt")
    runtime = training_runtime("unlabelled")
    del runtime["metadata"]["labels"]
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "worker"
    message = await refusal(h, h.kube.create(TRAINING_RUNTIMES, runtime, namespace=ns))
    assert "spec.template.spec.replicatedJobs" in message and '"node"' in message
    # the framework label only warns (the Kubeflow SDK needs it; Trainer does not)
    assert "trainer.kubeflow.org/framework" not in message
    unlabelled = training_runtime("unlabelled")
    del unlabelled["metadata"]["labels"]
    await h.kube.create(TRAINING_RUNTIMES, unlabelled, namespace=ns)
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("used"), namespace=ns)
    job = trainjob("user", num_nodes=1, runtime="used", runtime_kind="TrainingRuntime")
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    message = await refusal(h, h.kube.delete(TRAINING_RUNTIMES, ns, "used"))
    assert f"{ns}/user" in message
    await h.kube.delete(TRAINJOBS, ns, "user")
    await eventually(lambda: h.absent(TRAINJOBS, ns, "user"), what="TrainJob deleted")
    await h.kube.delete(TRAINING_RUNTIMES, ns, "used")


async def test_an_mpi_trainjob_runs_launcher_and_nodes_with_ssh_keys_and_hostfile(
    env: tuple[DevStack, Harness],
) -> None:
    from kubetrain.api.trainer.defaults import default_runtimes
    from kubetrain.kube.resources import SECRETS

    _, h = env
    ns = await h.namespace("mpi")
    [deepspeed] = [r for r in default_runtimes() if r["metadata"]["name"] == "deepspeed-distributed"]
    await h.kube.create(TRAINING_RUNTIMES, training_runtime("ds", deepspeed), namespace=ns)
    job = trainjob("ds", num_nodes=3, runtime="ds", runtime_kind="TrainingRuntime")
    job["spec"]["trainer"]["env"] = [{"name": "CUSTOM", "value": "x"}]
    job["spec"]["trainer"]["command"] = ["mpirun", "python", "train.py"]
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    # runLauncherAsNode: numNodes 3 = the launcher + 2 node pods; the launcher waits for them Ready
    nodes = await h.wait_pod_names(ns, "ds", ["ds-node-0-0", "ds-node-0-1"])
    hostfile = await h.get(CONFIG_MAPS, ns, "ds-mpi-hostfile")
    assert hostfile is not None
    assert hostfile["data"]["hostfile"] == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n"
    )
    secret = await h.get(SECRETS, ns, "ds-mpi-ssh-auth")
    assert secret is not None and secret["type"] == "kubernetes.io/ssh-auth"
    assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
    node = nodes[0]["spec"]
    assert {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in node["containers"][0][
        "volumeMounts"
    ]
    assert env_of(nodes[0])["CUSTOM"] == "x"  # the trainer's env on the nodes too (runLauncherAsNode)
    pods = await h.wait_pod_names(ns, "ds", ["ds-launcher-0-0", "ds-node-0-0", "ds-node-0-1"])
    launcher = pods[0]
    lenv = env_of(launcher)
    assert lenv["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert lenv["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert lenv["OMPI_MCA_orte_set_default_slots"] == "1"
    assert launcher["spec"]["containers"][0]["command"] == ["mpirun", "python", "train.py"]
    mounts = {m["name"]: m["mountPath"] for m in launcher["spec"]["containers"][0]["volumeMounts"]}
    assert mounts == {"mpi-ssh-auth": "/home/mpiuser/.ssh", "mpi-hostfile": "/etc/mpi"}
    await h.sim.finish(ns, "ds-launcher-0-0")
    tj = await wait_condition(h, ns, "ds", "Complete")  # the success policy targets the launcher
    assert [s["name"] for s in tj["status"]["jobsStatus"]] == ["node", "launcher"]


async def test_training_policies_limit_the_pods_a_trainjob_runs(env: tuple[DevStack, Harness]) -> None:
    from kubetrain.kube.client import ApiError
    from kubetrain.kube.resources import TRAINING_POLICIES

    _, h = env
    ns = await h.namespace("pol")
    await h.kube.create(
        TRAINING_POLICIES,
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TrainingPolicy",
            "metadata": {"name": f"trainjob-quota-{ns}"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "kinds": ["TrainJob"],
                "limits": {"maxReplicasPerJob": 3, "allowedImages": ["docker.io/pytorch/*"]},
            },
        },
    )
    job = trainjob("big", num_nodes=4)
    job["spec"]["trainer"]["image"] = "busybox:1.36"

    attempts = iter(range(1000))

    async def refused() -> str | None:
        # a new name per attempt: one created before the policy watcher saw the policy stays
        attempt = copy.deepcopy(job)
        attempt["metadata"]["name"] = f"big-{next(attempts)}"
        try:
            await h.kube.create(TRAINJOBS, attempt, namespace=ns)
        except ApiError as err:
            return str(err) if "trainjob-quota" in str(err) else None
        return None

    message = await eventually(refused, what="the TrainingPolicy applied to TrainJobs")
    assert "spec.trainer.numNodes: total pods 4 exceeds 3" in message
    assert 'spec.trainer.image: "docker.io/library/busybox:1.36" is not allowed' in message
    ok = trainjob("small", num_nodes=3)
    await h.kube.create(TRAINJOBS, ok, namespace=ns)  # the runtime's image is docker.io/pytorch/pytorch
