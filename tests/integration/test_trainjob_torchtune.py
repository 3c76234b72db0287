"""A torchtune fine-tune as the unmodified Kubeflow SDK (`kubeflow` 0.5) asks for it —
`TrainerClient.train(runtime=..., initializer=..., trainer=BuiltinTrainer(TorchTuneConfig(...)))`
— against Trainer 2.3's own `torchtune-llama3.2-1b` ClusterTrainingRuntime (tests/data, unchanged),
on devcluster: after the initializers finish, the node pod's container runs exactly the command
Trainer's controller builds, with PET_NNODES/NPROC_PER_NODE/NODE_RANK and no PET_MASTER_*; and a
torchtune TrainJob Trainer refuses is refused at admission, naming every field."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from trainer_sdk import trainer_client
from trainjobs import tune_command

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import TRAINJOBS

from .controller_support import Harness, open_stack

trainer = pytest.importorskip("kubeflow.trainer", reason="kubeflow (a dev dependency) is not installed")

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for stack, h in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        # The stack installs Trainer's default runtimes, torchtune-llama3.2-1b among them.
        yield stack, h


async def client(env: tuple[DevStack, Harness], namespace: str) -> Any:
    return await trainer_client(str(env[0].cluster.kubeconfig_path), namespace)


async def node_pod_after_initializers(h: Harness, ns: str, name: str) -> Obj:
    inits = [f"{name}-dataset-initializer-0-0", f"{name}-model-initializer-0-0"]
    await h.wait_pod_names(ns, name, inits)
    for pod in inits:
        await h.sim.finish(ns, pod)
    pods = await h.wait_pod_names(ns, name, [*inits, f"{name}-node-0-0"])
    return next(p for p in pods if p["metadata"]["name"] == f"{name}-node-0-0")


def node_container(pod: Obj) -> Obj:
    return next(c for c in pod["spec"]["containers"] if c["name"] == "node")


async def test_an_sdk_torchtune_fine_tune_runs_trainers_command(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tune")
    c = await client(env, ns)
    runtime = await asyncio.to_thread(c.get_runtime, "torchtune-llama3.2-1b")
    assert runtime.trainer.trainer_type == trainer.TrainerType.BUILTIN_TRAINER
    name = await asyncio.to_thread(
        c.train,
        runtime=runtime,
        initializer=trainer.Initializer(
            dataset=trainer.HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data"),
            model=trainer.HuggingFaceModelInitializer(storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct"),
        ),
        trainer=trainer.BuiltinTrainer(
            config=trainer.TorchTuneConfig(
                dtype=trainer.DataType.BF16,
                epochs=1,
                peft_config=trainer.LoraConfig(lora_rank=8, lora_attn_modules=["q_proj", "v_proj"]),
                dataset_preprocess_config=trainer.TorchTuneInstructDataset(source=trainer.DataFormat.PARQUET),
                resources_per_node={"gpu": 2},
            )
        ),
    )
    stored = await h.get(TRAINJOBS, ns, name)
    assert stored is not None and stored["spec"]["trainer"]["command"] == ["tune", "run"]  # what the SDK sent
    node = node_container(await node_pod_after_initializers(h, ns, name))
    # 1 node, numProcPerNode auto, 2 GPUs, LoRA: Trainer's distributed LoRA recipe with the endpoint
    assert node["command"] == tune_command(
        "lora_finetune_distributed", "llama3_2/1B_lora", f"{name}-node-0-0.{name}:29500"
    )
    assert node["args"] == stored["spec"]["trainer"]["args"]
    assert "model.lora_attn_modules=[q_proj,v_proj]" in node["args"]
    env_names = [v["name"] for v in node["env"]]
    assert {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"} <= set(env_names)
    assert not {"PET_MASTER_ADDR", "PET_MASTER_PORT"} & set(env_names)
    assert {v["name"]: v.get("value") for v in node["env"]}["PET_NPROC_PER_NODE"] == "auto"


async def test_a_single_gpu_fine_tune_runs_the_single_device_recipe(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("tune1")
    c = await client(env, ns)
    name = await asyncio.to_thread(
        c.train,
        runtime="torchtune-llama3.2-1b",
        trainer=trainer.BuiltinTrainer(config=trainer.TorchTuneConfig(resources_per_node={"gpu": 1})),
    )
    node = node_container(await node_pod_after_initializers(h, ns, name))
    assert node["command"] == tune_command("full_finetune_single_device", "llama3_2/1B_full_single_device")


async def test_an_invalid_torchtune_trainjob_is_refused_naming_every_field(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("tunebad")
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bad"},
        "spec": {
            "runtimeRef": {"name": "torchtune-llama3.2-1b"},
            "trainer": {
                "numNodes": 2,
                "command": ["tune", "run"],
                "args": ["model.lora_attn_modules=[q_proj]", "output_dir=/mine"],
            },
        },
    }
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINJOBS, job, namespace=ns)
    message = str(refused.value)
    for part in (
        "spec.trainer.numNodes",
        "must be 1 for llama3_2/1B model",
        "LoRA fine-tuning is not supported for multi-node training in TorchTune",
        "spec.trainer.args[1]",
        'must not set immutable config \\"output_dir\\"',
    ):
        assert part in message or part.replace("\\", "") in message, (part, message)
    assert await h.get(TRAINJOBS, ns, "bad") is None
