"""The unmodified Kubeflow SDK (`kubeflow` 0.5, `from kubeflow.trainer import TrainerClient`, a dev
dependency) against kubetrain serving trainer.kubeflow.org on devcluster, with the default
runtimes `kubetrain dev` installs: list_runtimes, get_runtime, train (CustomTrainerContainer and
CustomTrainer), list_jobs, get_job (steps node-0, node-1), get_job_logs (the simulated kubelet
serves logs; also followed), wait_for_job_status, get_job_events, delete_job,
get_runtime_packages (a torch and an MPI runtime), train's options (labels, annotations,
trainer command and args, active deadline, a runtime patch) and a DataCacheInitializer on
Trainer's data-cache runtime, as a notebook calls them.

The SDK is synchronous: each call runs in a worker thread while the stack serves on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_sdk import trainer_client

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, TRAINJOBS, ResourceRef

from .controller_support import TRAINER_API_GROUPS, Harness, eventually

trainer = pytest.importorskip("kubeflow.trainer", reason="kubeflow (a dev dependency) is not installed")

pytestmark = pytest.mark.asyncio(loop_scope="module")

DATA = Path(__file__).resolve().parents[1] / "data" / "trainer"
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)
CACHE_ACCOUNT = "kubeflow-trainer-cache-initializer"  # the data-cache runtime's initializer's


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


async def client(env: tuple[DevStack, Harness], namespace: str) -> Any:
    return await trainer_client(str(env[0].cluster.kubeconfig_path), namespace)


def train_fn() -> None:  # shipped to the pods as source by the SDK
    print("hello from the trainer")


async def test_the_sdk_sees_the_default_runtimes_and_the_trainer_version(
    env: tuple[DevStack, Harness], caplog: pytest.LogCaptureFixture
) -> None:
    _, h = env
    ns = await h.namespace("sdkrt")
    with caplog.at_level(logging.WARNING):
        c = await client(env, ns)
    assert "control-plane version info is not available" not in caplog.text
    runtimes = {r.name: r for r in await asyncio.to_thread(c.list_runtimes)}
    assert {
        "torch-distributed",
        "deepspeed-distributed",
        "mlx-distributed",
        "jax-distributed",
        "xgboost-distributed",
        "torchtune-llama3.2-1b",
        "torchtune-llama3.2-3b",
        "torchtune-qwen2.5-1.5b",
    } <= set(runtimes)
    torch = await asyncio.to_thread(c.get_runtime, "torch-distributed")
    assert torch.trainer.framework == "torch" and torch.trainer.num_nodes == 1
    # The SDK's BuiltinTrainer runs a torchtune runtime with Trainer's torchtune entrypoint.
    tune = await asyncio.to_thread(c.get_runtime, "torchtune-llama3.2-1b")
    assert tune.trainer.framework == "torchtune" and tuple(tune.trainer.command) == ("tune", "run")


async def test_train_get_logs_wait_events_delete(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("sdk")
    c = await client(env, ns)
    name = await asyncio.to_thread(
        c.train,
        runtime="torch-distributed",
        trainer=trainer.CustomTrainerContainer(
            image="docker.io/library/busybox:1.36",
            num_nodes=2,
            resources_per_node={"cpu": 2},
        ),
    )
    func = await asyncio.to_thread(
        c.train, runtime="torch-distributed", trainer=trainer.CustomTrainer(func=train_fn)
    )
    await h.wait_pod_names(ns, name, [f"{name}-node-0-0", f"{name}-node-0-1"])
    await h.wait_pod_names(ns, func, [f"{func}-node-0-0"])

    async def running() -> Any:
        job = await asyncio.to_thread(c.get_job, name)
        return job if job.status == "Running" else None

    job = await eventually(running, what="the SDK computes Running from the node pods")
    assert job.num_nodes == 2
    assert sorted(s.name for s in job.steps) == ["node-0", "node-1"]
    assert {s.pod_name for s in job.steps} == {f"{name}-node-0-0", f"{name}-node-0-1"}
    listed = sorted(j.name for j in await asyncio.to_thread(c.list_jobs))
    assert listed == sorted([name, func])

    await h.finish_all(ns, name)
    await h.finish_all(ns, func)
    done = await asyncio.to_thread(c.wait_for_job_status, name, {"Complete"}, 60, 1)
    assert done.status == "Complete"
    await asyncio.to_thread(c.wait_for_job_status, func, {"Complete"}, 60, 1)

    logs = "\n".join(await asyncio.to_thread(lambda: list(c.get_job_logs(func))))
    # the simulated kubelet prints the command the SDK built and the env kubetrain set
    assert "hello from the trainer" in logs
    assert f"PET_MASTER_ADDR={func}-node-0-0.{func}" in logs
    assert "PET_NNODES=1" in logs
    assert "exited with code 0" in logs

    events = await asyncio.to_thread(c.get_job_events, name)
    assert "AllJobsCompleted" in {e.reason for e in events}

    await asyncio.to_thread(c.delete_job, name)

    async def gone() -> bool | None:
        left = [j.name for j in await asyncio.to_thread(c.list_jobs)]
        return True if left == [func] else None

    await eventually(gone, what=f"{name} deleted through the SDK")


async def test_the_sdk_trains_an_mpi_job_to_complete(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("sdkmpi")
    c = await client(env, ns)
    name = await asyncio.to_thread(
        c.train,
        runtime="deepspeed-distributed",
        trainer=trainer.CustomTrainerContainer(image="docker.io/library/busybox:1.36", num_nodes=2),
    )
    # runLauncherAsNode: the launcher is one of the 2 nodes; it starts once the node pod is Ready
    await h.wait_pod_names(ns, name, [f"{name}-launcher-0-0", f"{name}-node-0-0"])
    job = await asyncio.to_thread(c.get_job, name)
    assert {s.name for s in job.steps} >= {"node-0"}
    await h.sim.finish(ns, f"{name}-launcher-0-0")
    done = await asyncio.to_thread(c.wait_for_job_status, name, {"Complete"}, 60, 1)
    assert done.status == "Complete"
    logs = "\n".join(await asyncio.to_thread(lambda: list(c.get_job_logs(name, step="node-0"))))
    assert "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile" in logs


async def test_the_sdks_train_options_reach_the_trainjob_and_its_pods(env: tuple[DevStack, Harness]) -> None:
    """`train(..., options=[...])` as a notebook passes them (`kubeflow.trainer.options`):
    Labels/Annotations on the TrainJob, TrainerCommand/TrainerArgs on the node container,
    ActiveDeadlineSeconds, and a RuntimePatch (manager `trainer.kubeflow.org/kubeflow-sdk`) whose
    pod labels, nodeSelector, tolerations, volumes and container volumeMounts reach every pod."""
    from kubeflow.trainer.options import kubernetes as o

    _, h = env
    ns = await h.namespace("sdkopts")
    c = await client(env, ns)
    pod_patch = o.PodTemplatePatch(
        metadata={"labels": {"team": "vision"}},
        spec=o.PodSpecPatch(
            node_selector={"accelerator": "a100"},
            tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            volumes=[{"name": "scratch", "emptyDir": {}}],
            containers=[
                o.ContainerPatch(name="node", volume_mounts=[{"name": "scratch", "mountPath": "/scratch"}])
            ],
        ),
    )
    patch = o.RuntimePatch(
        training_runtime_spec=o.TrainingRuntimeSpecPatch(
            template=o.JobSetTemplatePatch(
                spec=o.JobSetSpecPatch(
                    replicated_jobs=[
                        o.ReplicatedJobPatch(
                            name="node", template=o.JobTemplatePatch(spec=o.JobSpecPatch(template=pod_patch))
                        )
                    ]
                )
            )
        )
    )
    name = await asyncio.to_thread(
        c.train,
        runtime="torch-distributed",
        trainer=trainer.CustomTrainerContainer(image="docker.io/library/busybox:1.36", num_nodes=2),
        options=[
            patch,
            o.Labels({"project": "p1"}),
            o.Annotations({"owner": "alice"}),
            o.TrainerCommand(["python", "-c"]),
            o.TrainerArgs(["print(1)"]),
            o.ActiveDeadlineSeconds(600),
        ],
    )
    tj = await h.get(TRAINJOBS, ns, name)
    assert tj is not None
    assert tj["metadata"]["labels"]["project"] == "p1" and tj["metadata"]["annotations"]["owner"] == "alice"
    assert tj["spec"]["activeDeadlineSeconds"] == 600
    assert [p["manager"] for p in tj["spec"]["runtimePatches"]] == ["trainer.kubeflow.org/kubeflow-sdk"]
    pods = await h.wait_pod_names(ns, name, [f"{name}-node-0-0", f"{name}-node-0-1"])
    for pod in pods:
        spec = pod["spec"]
        node = next(x for x in spec["containers"] if x["name"] == "node")
        assert node["command"] == ["python", "-c"] and node["args"] == ["print(1)"]
        assert {"name": "scratch", "mountPath": "/scratch"} in node["volumeMounts"]
        assert {"name": "scratch", "emptyDir": {}} in spec["volumes"]
        assert spec["nodeSelector"] == {"accelerator": "a100"}
        assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
        assert pod["metadata"]["labels"]["team"] == "vision"


@pytest.mark.parametrize(
    ("runtime", "steps"), [("torch-distributed", ["node"]), ("deepspeed-distributed", ["node", "launcher"])]
)
async def test_get_runtime_packages_runs_a_one_node_trainjob_prints_its_logs_and_deletes_it(
    env: tuple[DevStack, Harness], runtime: str, steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`get_runtime_packages(runtime)` trains the SDK's package-listing function on one node of
    the runtime (an MPI runtime's `mpirun` with `-np 1`), waits for `Complete`, prints the
    TrainJob's logs and deletes it: here the simulated kubelet finishes the pods the TrainJob
    gets, as a real one would once the listing printed."""
    _, h = env
    ns = await h.namespace(f"sdkpkg-{runtime.split('-')[0]}")
    c = await client(env, ns)
    rt = await asyncio.to_thread(c.get_runtime, runtime)
    call = asyncio.ensure_future(asyncio.to_thread(c.get_runtime_packages, rt))

    async def one_job() -> list[Any] | None:
        jobs = (await h.kube.list(TRAINJOBS, ns))["items"]
        return jobs if len(jobs) == 1 else None

    (tj,) = await eventually(one_job, what="the TrainJob get_runtime_packages creates")
    name = tj["metadata"]["name"]
    assert tj["spec"]["trainer"]["numNodes"] == 1
    # one pod per step (MPI's launcher waits for the node to be Ready; the simulated kubelet
    # readies it), the launcher running as a node of the hostfile
    pods = await h.wait_pod_names(ns, name, [f"{name}-{step}-0-0" for step in steps])
    await h.finish_all(ns, name)
    await asyncio.wait_for(call, 60)
    out = capsys.readouterr().out
    assert "exited with code 0" in out
    assert "Python:" in out and "print_packages" in out  # the SDK's function reached the pod
    if "launcher" in steps:  # the launcher's logs: mpirun on one process of the hostfile
        assert "$ mpirun -np 1 " in out and "OMPI_MCA_orte_set_default_slots=1" in out
    for pod in pods:
        assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == name

    async def gone() -> bool | None:
        return True if not (await h.kube.list(TRAINJOBS, ns))["items"] else None

    await eventually(gone, what=f"{name} deleted by get_runtime_packages")


async def test_get_job_logs_follows_the_node_until_its_container_ends(env: tuple[DevStack, Harness]) -> None:
    """`get_job_logs(name, follow=True)` streams node 0's log while it runs and ends when its
    container does (a notebook's `for line in client.get_job_logs(job, follow=True)`)."""
    _, h = env
    ns = await h.namespace("sdkfollow")
    c = await client(env, ns)
    name = await asyncio.to_thread(
        c.train, runtime="torch-distributed", trainer=trainer.CustomTrainer(func=train_fn)
    )
    await h.wait_pod_names(ns, name, [f"{name}-node-0-0"])

    async def running() -> Any:
        job = await asyncio.to_thread(c.get_job, name)
        return job if job.status == "Running" else None

    await eventually(running, what=f"{name} running")
    lines: list[str] = []
    follow = asyncio.ensure_future(asyncio.to_thread(lambda: lines.extend(c.get_job_logs(name, follow=True))))

    async def streaming() -> bool | None:
        return True if any("hello from the trainer" in line for line in lines) else None

    await eventually(streaming, what="the log so far, streamed")
    assert not follow.done()  # still streaming: the container runs
    await h.finish_all(ns, name)
    await asyncio.wait_for(follow, 30)
    text = "\n".join(lines)
    assert "hello from the trainer" in text and "exited with code 0" in text


async def test_a_data_cache_initializer_reaches_the_cache_runtimes_dataset_initializer(
    env: tuple[DevStack, Harness],
) -> None:
    """`train(initializer=Initializer(dataset=DataCacheInitializer(...)))` on Trainer's
    `torch-distributed-with-cache` runtime (manifests/base/runtimes/data-cache, not a default: a
    platform installs it): the dataset-initializer pod gets the cache URI as STORAGE_URI and the
    SDK's CLUSTER_SIZE (data nodes + 1) and METADATA_LOC beside the runtime's CACHE_IMAGE; the
    node starts once it completed."""
    _, h = env
    ns = await h.namespace("sdkcache")
    runtime = yaml.safe_load((DATA / "runtimes" / "torch_distributed_with_cache.yaml").read_text())
    with contextlib.suppress(ApiError):  # cluster-scoped: once per stack
        await h.kube.create(CLUSTER_TRAINING_RUNTIMES, runtime)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": CACHE_ACCOUNT}}
    await h.kube.create(SERVICE_ACCOUNTS, account, namespace=ns)
    c = await client(env, ns)
    name = await asyncio.to_thread(
        c.train,
        runtime="torch-distributed-with-cache",
        initializer=trainer.Initializer(
            dataset=trainer.DataCacheInitializer(
                storage_uri="cache://schema/table", metadata_loc="s3://bucket/metadata.json", num_data_nodes=2
            )
        ),
        trainer=trainer.CustomTrainer(func=train_fn),
    )
    [init] = await h.wait_pod_names(ns, name, [f"{name}-dataset-initializer-0-0"])
    container = init["spec"]["containers"][0]
    env_vars = {e["name"]: e.get("value") for e in container["env"]}
    assert env_vars["STORAGE_URI"] == "cache://schema/table"
    assert env_vars["CLUSTER_SIZE"] == "3" and env_vars["METADATA_LOC"] == "s3://bucket/metadata.json"
    assert env_vars["CACHE_IMAGE"] == "ghcr.io/kubeflow/trainer/data-cache:latest"
    assert init["spec"]["serviceAccountName"] == CACHE_ACCOUNT
    await h.finish_all(ns, name)
    await h.wait_pod_names(ns, name, [f"{name}-dataset-initializer-0-0", f"{name}-node-0-0"])
    await h.sim.finish(ns, f"{name}-node-0-0")
    done = await asyncio.to_thread(c.wait_for_job_status, name, {"Complete"}, 60, 1)
    assert done.status == "Complete"
