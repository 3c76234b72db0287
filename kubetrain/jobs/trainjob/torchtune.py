"""Kubeflow Trainer 2.3's torchtune branch of the torch ML policy
(pkg/runtime/framework/plugins/torch/torchtune.go): a TrainJob of a torch runtime whose
`spec.trainer.command` is exactly `["tune", "run"]` — what the Kubeflow SDK's BuiltinTrainer
with a TorchTuneConfig sends — is a torchtune fine-tune.

- Its `node` container's command becomes `tune run [--rdzv_endpoint=<tj>-node-0-0.<sub>:29500]
  <recipe> --config <model><suffix> <overrides>`: the rendezvous endpoint only with more than one
  node, numProcPerNode > 1, or numProcPerNode `auto` and more than one GPU per node; the recipe
  and config suffix from numNodes, numProcPerNode, the GPUs per node and the LoRA/QLoRA args
  (`recipe_and_config`); the model from the runtimeRef name (`torchtune-llama3.2-1b` →
  `llama3_2/1B`); the overrides are the runtime's own `output_dir=`, `tokenizer.path=`,
  `checkpointer.checkpoint_dir=`, `tokenizer.merges_file=` entries of its trainer `node`
  container's command. The TrainJob's args stay the container's args.
- The `node` container gets no PET_MASTER_ADDR/PORT (the endpoint is on the command line):
  `TrainerFacts.torchtune`.
- `validate`: Trainer's admission rules, every problem at once, with Trainer's paths and
  messages (the value shown as Kubernetes' `Invalid value` does).

Pure."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.errors import FieldError, invalid
from kubetrain.api.trainer import constants as c
from kubetrain.frameworks.mlpolicies import TrainerFacts, cpus_per_node, gpus_per_node
from kubetrain.jobs.trainjob.patches import (
    apply_runtime_patches,
    counted_resources,
    runtime_resources,
    trainer_node_containers,
)

Obj = dict[str, Any]


def is_torchtune(trainer: Mapping[str, Any] | None) -> bool:
    """Whether the TrainJob's trainer command is exactly Trainer's torchtune entrypoint."""
    command = (trainer or {}).get("command")
    return isinstance(command, list) and tuple(command) == c.TORCHTUNE_ENTRYPOINT


def model_of(runtime_ref_name: str) -> str:
    """Trainer's getModelFromRuntimeRef: `<x>-<family>-<size>` → `<family with _ for .>/<SIZE>`;
    "" unless the name has exactly three `-` parts."""
    fields = runtime_ref_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def lora_enabled(args: Sequence[str]) -> bool:
    """An arg mentions `model.lora_attn_modules` (Trainer's isLoraConfigEnabled)."""
    return any(c.TORCHTUNE_LORA_ATTN_MODULES in str(arg) for arg in args)


def bool_arg_enabled(args: Sequence[str], item: str) -> bool:
    """A `key=value` arg whose key contains `item` and whose value is `true` in any case."""
    for arg in args:
        name, sep, value = str(arg).partition("=")
        if sep and item in name and value.strip().lower() == "true":
            return True
    return False


def qlora(args: Sequence[str]) -> bool:
    """`model.quantize_base=True`, unless `model.use_dora=True` (DoRA is never QLoRA)."""
    if bool_arg_enabled(args, c.TORCHTUNE_USE_DORA):
        return False
    return bool_arg_enabled(args, c.TORCHTUNE_QUANTIZE_BASE)


def recipe_and_config(
    num_nodes: int, nproc: int | None, gpus: int, args: Sequence[str], runtime_ref_name: str
) -> tuple[str, str]:
    """Trainer's getRecipeAndConfig; `nproc` None is `auto`."""
    recipe, suffix = c.TORCHTUNE_FULL_FINETUNE_DISTRIBUTED, c.TORCHTUNE_FULL_MULTI_DEVICES_SUFFIX
    if num_nodes == 1 and (nproc == 1 or gpus == 1):
        if qlora(args):
            recipe, suffix = c.TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE, c.TORCHTUNE_QLORA_SINGLE_DEVICE_SUFFIX
        elif lora_enabled(args):
            recipe, suffix = c.TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE, c.TORCHTUNE_LORA_SINGLE_DEVICE_SUFFIX
        else:
            recipe, suffix = c.TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE, c.TORCHTUNE_FULL_SINGLE_DEVICE_SUFFIX
    elif num_nodes == 1 and qlora(args):
        recipe, suffix = c.TORCHTUNE_LORA_FINETUNE_DISTRIBUTED, c.TORCHTUNE_QLORA_DISTRIBUTED_SUFFIX
    elif num_nodes == 1 and lora_enabled(args):
        recipe, suffix = c.TORCHTUNE_LORA_FINETUNE_DISTRIBUTED, c.TORCHTUNE_LORA_DISTRIBUTED_SUFFIX
    elif num_nodes > 1:
        suffix = c.TORCHTUNE_FULL_MULTI_NODES_SUFFIX
    return recipe, f"{model_of(runtime_ref_name)}{suffix}"


def runtime_overrides(jobset_spec: Mapping[str, Any]) -> list[str]:
    """Trainer's extractOverridesFromRuntime: the immutable-config entries (`output_dir=…`, …)
    of the trainer `node` container's command in the runtime's JobSet template spec."""
    return [
        str(entry)
        for container in trainer_node_containers(jobset_spec)
        for entry in container.get("command") or []
        if str(entry).split("=")[0] in c.TORCHTUNE_IMMUTABLE_CONFIGS
    ]


def command(
    facts: TrainerFacts,
    nproc: int | None,
    gpus: int,
    args: Sequence[str],
    runtime_ref_name: str,
    overrides: Sequence[str],
) -> list[str]:
    """The `node` container's command: the entrypoint, the rendezvous endpoint when distributed,
    the recipe, `--config <config>` and the runtime's overrides (Trainer's EnforceMLPolicy)."""
    out = list(c.TORCHTUNE_ENTRYPOINT)
    if facts.num_nodes > 1 or (nproc is not None and nproc > 1) or (nproc is None and gpus > 1):
        out.append(f"{c.TORCHTUNE_ARG_RDZV_ENDPOINT}={facts.master_host}:{c.TORCH_PORT}")
    recipe, config = recipe_and_config(facts.num_nodes, nproc, gpus, args, runtime_ref_name)
    return [*out, recipe, c.TORCHTUNE_ARG_CONFIG, config, *overrides]


def rewrite(
    node: Obj, facts: TrainerFacts, args: Sequence[str], runtime_ref_name: str, jobset_spec: Mapping[str, Any]
) -> None:
    """Write the torchtune command into the trainer's `node` container; numProcPerNode as the
    torch plug-in resolves it (`auto` with no GPU: the CPU count)."""
    gpus = gpus_per_node(facts.resources)
    raw = facts.num_proc_per_node
    nproc: int | None = None  # auto
    if isinstance(raw, int) and not isinstance(raw, bool):
        nproc = raw
    elif gpus == 0:
        nproc = max(1, cpus_per_node(facts.resources))
    node["command"] = command(facts, nproc, gpus, args, runtime_ref_name, runtime_overrides(jobset_spec))


def _invalid(path: str, value: object, message: str) -> FieldError:
    return invalid(path, f"{json.dumps(value, sort_keys=True)}: {message}")


def validate(
    trainer: Mapping[str, Any], runtime_ref_name: str, resources: Mapping[str, Any]
) -> list[FieldError]:
    """Trainer's validateTorchTune for a torchtune TrainJob; `resources`: the trainer's
    resourcesPerNode merged over the runtime's `node` container's (`patches.counted_resources`)."""
    errors: list[FieldError] = []
    model = model_of(runtime_ref_name)
    if model not in c.TORCHTUNE_SUPPORTED_MODELS:
        errors.append(
            _invalid(
                "spec.runtimeRef.name",
                runtime_ref_name,
                f"must have a supported pretrained model, invalid model configured: {model}",
            )
        )
    raw_nodes = trainer.get("numNodes")
    num_nodes = raw_nodes if isinstance(raw_nodes, int) and not isinstance(raw_nodes, bool) else 1
    if num_nodes > 1 and model != c.TORCHTUNE_MODEL_LLAMA3_3_70B:
        errors.append(_invalid("spec.trainer.numNodes", num_nodes, f"must be 1 for {model} model"))
    raw_nproc = trainer.get("numProcPerNode")
    nproc = raw_nproc if isinstance(raw_nproc, int) and not isinstance(raw_nproc, bool) else None
    args = [str(a) for a in trainer.get("args") or []]
    _, config = recipe_and_config(num_nodes, nproc, gpus_per_node(resources), args, runtime_ref_name)
    if c.TORCHTUNE_QLORA_DISTRIBUTED_SUFFIX in config:
        if model == c.TORCHTUNE_MODEL_QWEN2_5_1_5B:
            errors.append(
                _invalid(
                    "spec.runtimeRef.name", runtime_ref_name, f"QLoRA is not supported for {model} model"
                )
            )
        if c.TORCHTUNE_QLORA_SINGLE_DEVICE_SUFFIX not in config and model in (
            c.TORCHTUNE_MODEL_LLAMA3_2_1B,
            c.TORCHTUNE_MODEL_LLAMA3_2_3B,
        ):
            errors += [
                _invalid(
                    "spec.trainer.numProcPerNode",
                    "auto" if nproc is None else nproc,
                    f"must be auto or 1 for {model} model when using QLoRA",
                ),
                _invalid(
                    "spec.trainer.resourcesPerNode",
                    trainer.get("resourcesPerNode"),
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                ),
            ]
    if num_nodes > 1 and (lora_enabled(args) or qlora(args)):
        errors.append(
            _invalid(
                "spec.trainer.numNodes",
                num_nodes,
                "LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        )
    for i, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in c.TORCHTUNE_IMMUTABLE_CONFIGS:
            errors.append(
                _invalid(
                    f"spec.trainer.args[{i}]",
                    arg,
                    f"must not set immutable config {json.dumps(key)} in trainer args; "
                    "it is managed by the runtime",
                )
            )
    return errors


def admission_errors(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """`validate` for a TrainJob and the runtime it names, outside `resolve` (an update): the
    GPUs per node in the trainer's resourcesPerNode merged over the runtime's trainer `node`
    container's resources after the TrainJob's runtimePatches. [] for any other TrainJob."""
    spec = trainjob.get("spec") or {}
    trainer = spec.get("trainer") or {}
    if ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("torch") is None or not is_torchtune(trainer):
        return []
    template = copy.deepcopy(dict((runtime.get("spec") or {}).get("template") or {}))
    apply_runtime_patches(template, spec.get("runtimePatches") or [], "spec.runtimePatches")
    resources = counted_resources(trainer, runtime_resources(template.get("spec") or {}))
    return validate(trainer, str((spec.get("runtimeRef") or {}).get("name") or ""), resources)
