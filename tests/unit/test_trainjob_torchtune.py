"""Trainer 2.3's torchtune branch of the torch ML policy (`kubetrain/jobs/trainjob/torchtune.py`),
with the cases of Trainer's own tables (pkg/runtime/framework/plugins/torch/torchtune_test.go and
the torchtune cases of torch_test.go): the model from the runtimeRef name, the LoRA/QLoRA/DoRA
args, the recipe and config, the runtime's overrides, the rendezvous endpoint, the node
container's command and env after `resolve`, and every admission error with Trainer's paths and
messages — on create (through `resolve`), on update, offline, and for a TrainJob stored past the
webhook (Failed, TrainingRuntimeNotSupported)."""

from __future__ import annotations

import copy
import io
from datetime import UTC, datetime
from typing import Any

import pytest
from trainjobs import LLAMA_OVERRIDES, torchtune_runtime, tune_command

from kubetrain.api.errors import ErrorKind, FieldError
from kubetrain.commands._trainervalidate import check_trainer_document
from kubetrain.jobs.trainjob import torchtune as tt
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
LLAMA_1B: Obj = torchtune_runtime()
QWEN: Obj = torchtune_runtime("qwen2_5/qwen2_5_1.5B.yaml")
LORA = ["model.lora_attn_modules=['q_proj']"]
QLORA = ["model.quantize_base=True"]
TRAINER_ARGS = [
    "dtype=fp16",
    "batch_size=32",
    "epochs=10",
    "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
]


def runtime_named(name: str, source: Obj = LLAMA_1B) -> Obj:
    """`source` (a copied torchtune runtime) under another name: the model comes from the
    TrainJob's runtimeRef name, not from the runtime."""
    out = copy.deepcopy(source)
    out["metadata"]["name"] = name
    return out


def trainjob(
    runtime: str = "torchtune-llama3.2-1b",
    *,
    name: str = "torchtune-job",
    args: list[str] | None = None,
    resources: Obj | None = None,
    command: list[str] | None = None,
    gpus: str | None = None,
    **trainer: Any,
) -> Obj:
    """A TrainJob as Trainer's MakeTrainJobTrainerWrapper().Container(image, command, args, res)
    builds it: the resources are the requests of resourcesPerNode; `gpus`: its nvidia.com/gpu
    limit (over the runtime's, which asks for 2)."""
    spec_trainer: Obj = {
        "image": "ghcr.io/kubeflow/trainer/torchtune-trainer",
        "command": ["tune", "run"] if command is None else command,
        **trainer,
    }
    if args is not None:
        spec_trainer["args"] = args
    if resources is not None:
        spec_trainer["resourcesPerNode"] = {"requests": resources}
    if gpus is not None:
        spec_trainer.setdefault("resourcesPerNode", {})["limits"] = {"nvidia.com/gpu": gpus}
    return default_trainjob(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default", "uid": "tt-uid"},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": spec_trainer},
        }
    )


def node_of(job: Obj, runtime: Obj) -> tuple[Obj, list[Obj]]:
    """The trainer step's `node` container after `resolve`, and the env the ML policy adds to it."""
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    step = next(s for s in resolved.steps if s.name == "node")
    node = next(x for x in step.pod_template["spec"]["containers"] if x["name"] == "node")
    env = [
        dict(v) for a in resolved.env.additions if a.step == "node" and a.container == "node" for v in a.env
    ]
    return node, env


def names(env: list[Obj]) -> list[str]:
    return [v["name"] for v in env]


# -- Trainer's TestGetModelFromRuntimeRef, TestIsLoraConfigEnabled, TestIsUseQLoraFinetune ----------


@pytest.mark.parametrize(
    "ref,want",
    [
        ("torchtune-llama3.2-1b", "llama3_2/1B"),
        ("torchtune-qwen2.5-1.5b", "qwen2_5/1.5B"),
        ("torchtune-llama3.3-70b", "llama3_3/70B"),
        ("torchtune-llama3.2", ""),
        ("torchtune-llama3.2-1b-extra", ""),
        ("", ""),
    ],
)
def test_the_model_comes_from_the_runtime_ref_name(ref: str, want: str) -> None:
    assert tt.model_of(ref) == want


@pytest.mark.parametrize(
    "args,want",
    [
        (["batch_size=32", "model.lora_attn_modules=['q_proj','v_proj']"], True),
        (["batch_size=32", "epochs=10"], False),
        ([], False),
    ],
)
def test_lora_is_on_when_an_arg_names_the_lora_attention_modules(args: list[str], want: bool) -> None:
    assert tt.lora_enabled(args) is want


@pytest.mark.parametrize(
    "args,want",
    [
        (["model.quantize_base=True"], True),
        (["model.quantize_base=true"], True),
        (["model.quantize_base=False"], False),
        (["model.quantize_base=True", "model.use_dora=True"], False),  # DoRA short-circuits
        (["model.quantize_base=True", "model.use_dora=False"], True),
        (["model.quantize_base"], False),  # no value
        (["batch_size=32"], False),
        ([], False),
    ],
)
def test_qlora_is_quantize_base_true_without_dora(args: list[str], want: bool) -> None:
    assert tt.qlora(args) is want


# -- Trainer's TestGetRecipeAndConfig ---------------------------------------------------------------


@pytest.mark.parametrize(
    "nodes,nproc,gpus,args,recipe,suffix",
    [
        (1, None, 1, [], "full_finetune_single_device", "_full_single_device"),
        (1, None, 1, LORA, "lora_finetune_single_device", "_lora_single_device"),
        (1, None, 1, QLORA, "lora_finetune_single_device", "_qlora_single_device"),
        (1, None, 4, [], "full_finetune_distributed", "_full"),
        (1, None, 4, LORA, "lora_finetune_distributed", "_lora"),
        (1, None, 4, QLORA, "lora_finetune_distributed", "_qlora"),
        (2, None, 8, [], "full_finetune_distributed", "_full_multinode"),
        (2, None, 8, LORA, "full_finetune_distributed", "_full_multinode"),  # LoRA dropped (refused)
        (1, 1, 4, [], "full_finetune_single_device", "_full_single_device"),  # numProcPerNode=1 wins
        (1, 4, 4, [], "full_finetune_distributed", "_full"),
        (1, None, 0, [], "full_finetune_distributed", "_full"),  # auto, no GPU: distributed
        (
            1,
            1,
            0,
            ["model.quantize_base=True", "model.use_dora=True", *LORA],
            "lora_finetune_single_device",
            "_lora_single_device",
        ),  # DoRA: LoRA, not QLoRA
    ],
)
def test_recipe_and_config(
    nodes: int, nproc: int | None, gpus: int, args: list[str], recipe: str, suffix: str
) -> None:
    assert tt.recipe_and_config(nodes, nproc, gpus, args, "torchtune-llama3.2-1b") == (
        recipe,
        f"llama3_2/1B{suffix}",
    )


def test_an_unknown_runtime_name_gives_a_config_without_model() -> None:
    assert tt.recipe_and_config(1, None, 2, [], "my-runtime") == ("full_finetune_distributed", "_full")


# -- Trainer's TestExtractOverridesFromRuntime ------------------------------------------------------


def jobset_spec(ancestor: str, container: str, command: list[str]) -> Obj:
    return {
        "replicatedJobs": [
            {
                "name": "node",
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}},
                    "spec": {"template": {"spec": {"containers": [{"name": container, "command": command}]}}},
                },
            }
        ]
    }


IMMUTABLE = ["output_dir=/out", "tokenizer.path=/tok", "batch_size=32"]


@pytest.mark.parametrize(
    "spec,want",
    [
        ({}, []),
        (jobset_spec("trainer", "node", IMMUTABLE), ["output_dir=/out", "tokenizer.path=/tok"]),
        (jobset_spec("other", "node", IMMUTABLE), []),
        (jobset_spec("trainer", "sidecar", IMMUTABLE), []),
        (LLAMA_1B["spec"]["template"]["spec"], LLAMA_OVERRIDES),
        (
            QWEN["spec"]["template"]["spec"],
            [
                "output_dir=/workspace/output",
                "tokenizer.path=/workspace/model/vocab.json",
                "tokenizer.merges_file=/workspace/model/merges.txt",
                "checkpointer.checkpoint_dir=/workspace/model",
            ],
        ),
    ],
)
def test_the_overrides_are_the_runtime_nodes_immutable_configs(spec: Obj, want: list[str]) -> None:
    assert tt.runtime_overrides(spec) == want


# -- EnforceMLPolicy: the node container's command and env after resolve ----------------------------

PET = ["PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"]


def test_multi_devices_full_fine_tuning_gets_the_rendezvous_endpoint() -> None:
    job = trainjob(
        args=TRAINER_ARGS, numNodes=1, resources={"cpu": "8", "memory": "16Gi", "example.com/gpu": "4"}
    )
    node, env = node_of(job, LLAMA_1B)
    assert node["command"] == tune_command(
        "full_finetune_distributed",
        "llama3_2/1B_full",
        rendezvous="torchtune-job-node-0-0.torchtune-job:29500",
    )
    assert node["args"] == TRAINER_ARGS  # the TrainJob's args stay the container's args
    assert names(env) == PET  # no PET_MASTER_ADDR/PORT
    assert env[0]["value"] == "1" and env[1]["value"] == "auto"


def test_the_rendezvous_endpoint_is_under_the_runtimes_subdomain() -> None:
    """Node 0 resolves under the pods' subdomain (the runtime's `network.subdomain`, which names
    the headless Service), not under the TrainJob's name, as Trainer writes it."""
    runtime = copy.deepcopy(LLAMA_1B)
    runtime["spec"]["template"]["spec"]["network"] = {"subdomain": "tune"}
    job = trainjob(args=TRAINER_ARGS, numNodes=1, resources={"cpu": "8", "example.com/gpu": "4"})
    node, _ = node_of(job, runtime)
    assert "--rdzv_endpoint=torchtune-job-node-0-0.tune:29500" in node["command"]


def test_single_device_full_fine_tuning_has_no_rendezvous_endpoint() -> None:
    job = trainjob(
        args=TRAINER_ARGS,
        numNodes=1,
        numProcPerNode=1,
        resources={"cpu": "8", "memory": "16Gi", "example.com/gpu": "1"},
    )
    node, env = node_of(job, LLAMA_1B)
    assert node["command"] == tune_command("full_finetune_single_device", "llama3_2/1B_full_single_device")
    assert names(env) == PET and env[1]["value"] == "1"


def test_multi_nodes_full_fine_tuning_of_llama_3_3_70b() -> None:
    job = trainjob(
        "torchtune-llama3.3-70b",
        args=TRAINER_ARGS,
        numNodes=2,
        numProcPerNode=8,
        resources={"cpu": "8", "memory": "16Gi", "example.com/gpu": "8"},
    )
    node, env = node_of(job, runtime_named("torchtune-llama3.3-70b"))
    assert node["command"] == tune_command(
        "full_finetune_distributed",
        "llama3_3/70B_full_multinode",
        "torchtune-job-node-0-0.torchtune-job:29500",
    )
    assert names(env) == PET and [v.get("value") for v in env[:2]] == ["2", "8"]


@pytest.mark.parametrize(
    "trainer,resources,rdzv,recipe,config",
    [
        # the runtime's own nvidia.com/gpu: 2 limit: auto with 2 GPUs
        ({}, None, True, "full_finetune_distributed", "llama3_2/1B_full"),
        # no GPU: auto is the CPU count, 4 processes → distributed
        ({}, {"cpu": "4"}, True, "full_finetune_distributed", "llama3_2/1B_full"),
        # resourcesPerNode naming no GPU: the runtime's 2 still count (Trainer pull request 3974)
        ({}, {}, True, "full_finetune_distributed", "llama3_2/1B_full"),
        # no GPU, no CPU: auto is 1 → single device
        ({"gpus": "0"}, {}, False, "full_finetune_single_device", "llama3_2/1B_full_single_device"),
        ({}, {"nvidia.com/gpu": "1"}, False, "lora_finetune_single_device", "llama3_2/1B_lora_single_device"),
        ({"numProcPerNode": 2}, {}, True, "lora_finetune_distributed", "llama3_2/1B_lora"),
    ],
)
def test_the_rendezvous_rule_and_the_cpu_count_for_auto(
    trainer: Obj, resources: Obj | None, rdzv: bool, recipe: str, config: str
) -> None:
    args = LORA if "lora" in recipe else []
    node, _ = node_of(trainjob(args=args, resources=resources, **trainer), LLAMA_1B)
    endpoint = ["--rdzv_endpoint=torchtune-job-node-0-0.torchtune-job:29500"] if rdzv else []
    assert node["command"] == ["tune", "run", *endpoint, recipe, "--config", config, *LLAMA_OVERRIDES]


def test_env_injection_targets_still_get_the_master_variables() -> None:
    runtime = copy.deepcopy(LLAMA_1B)
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["preflight-check"]}]}
    }
    rjob = next(r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == "node")
    rjob["template"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "preflight-check", "image": "x"}
    ]
    # Trainer's case runs 2 nodes of llama3.2-1b, which its admission refuses: the 70B name allows it
    job = trainjob(
        "torchtune-llama3.3-70b",
        name="test-job",
        args=["dtype=fp16"],
        numNodes=2,
        resources={"cpu": "8", "example.com/gpu": "4"},
    )
    resolved, errors = resolve(job, runtime)
    assert resolved is not None, errors
    by_container = {a.container: [dict(v) for v in a.env] for a in resolved.env.additions}
    assert names(by_container["node"]) == PET
    assert names(by_container["preflight-check"]) == [*PET, "PET_MASTER_ADDR", "PET_MASTER_PORT"]
    assert by_container["preflight-check"][3]["value"] == "test-job-node-0-0.test-job"
    assert by_container["preflight-check"][4]["value"] == "29500"
    # as each pod is built: the init container of the name gets them, the node container not the master
    step = next(s for s in resolved.steps if s.name == "node")
    pod_spec = copy.deepcopy(step.pod_template["spec"])
    resolved.env.customize_pod(None, "node", 0, pod_spec)  # type: ignore[arg-type]  # the layout is unused
    assert names(pod_spec["initContainers"][0]["env"]) == [*PET, "PET_MASTER_ADDR", "PET_MASTER_PORT"]
    assert names(pod_spec["containers"][0]["env"]) == PET
    assert pod_spec["containers"][0]["ports"] == [{"containerPort": 29500}]
    assert "ports" not in pod_spec["initContainers"][0]


def test_only_exactly_tune_run_is_torchtune() -> None:
    for command in (["tune", "run", "x"], ["tune"], ["torchrun", "train.py"]):
        node, env = node_of(trainjob(command=command), LLAMA_1B)
        assert node["command"] == command
        assert "PET_MASTER_ADDR" in names(env)
    no_command = copy.deepcopy(trainjob())
    del no_command["spec"]["trainer"]["command"]
    node, env = node_of(no_command, LLAMA_1B)
    assert node["command"][:4] == [
        "tune",
        "run",
        "--rdzv_endpoint=localhost:29500",
        "full_finetune_distributed",
    ]
    assert "PET_MASTER_ADDR" in names(env)


def test_a_runtime_without_the_torch_policy_is_not_rewritten() -> None:
    runtime = copy.deepcopy(LLAMA_1B)
    del runtime["spec"]["mlPolicy"]["torch"]
    resolved, errors = resolve(trainjob(args=["output_dir=/x"]), runtime)
    assert resolved is not None and not errors
    node = resolved.steps[-1].pod_template["spec"]["containers"][0]
    assert node["command"] == ["tune", "run"]


# -- Trainer's TestTorchValidate torchtune cases --------------------------------------------------------


def invalid(path: str, message: str) -> FieldError:
    return FieldError(path, ErrorKind.INVALID, message)


CASES: dict[str, tuple[Obj, list[FieldError]]] = {
    "unsupported pretrained model": (
        trainjob("torchtune-llama3.1-70b", numNodes=1, resources={}),
        [
            invalid(
                "spec.runtimeRef.name",
                '"torchtune-llama3.1-70b": must have a supported pretrained model, '
                "invalid model configured: llama3_1/70B",
            )
        ],
    ),
    "multi-node mode is only enabled for Llama-3.3-70b": (
        trainjob("torchtune-llama3.2-3b", numNodes=2, resources={}),
        [invalid("spec.trainer.numNodes", "2: must be 1 for llama3_2/3B model")],
    ),
    "qlora is not supported for qwen in torchtune": (
        trainjob(
            "torchtune-qwen2.5-1.5b",
            numNodes=1,
            args=["model.lora_attn_modules=[q_proj, v_proj, output_proj]", "model.quantize_base=True"],
            resources={},
        ),
        [
            invalid(
                "spec.runtimeRef.name",
                '"torchtune-qwen2.5-1.5b": QLoRA is not supported for qwen2_5/1.5B model',
            )
        ],
    ),
    "multi-devices qlora is not supported for llama3.2-1b in torchtune": (
        trainjob(
            numNodes=1,
            args=["model.lora_attn_modules=[q_proj, v_proj, output_proj]", "model.quantize_base=True"],
            resources={"example.com/gpu": "2"},
        ),
        [
            invalid(
                "spec.trainer.numProcPerNode",
                '"auto": must be auto or 1 for llama3_2/1B model when using QLoRA',
            ),
            invalid(
                "spec.trainer.resourcesPerNode",
                '{"requests": {"example.com/gpu": "2"}}: must have gpu resource with value 1 for llama3_2/1B '
                "model when using QLoRA",
            ),
        ],
    ),
    "lora is not supported for multi-node training in torchtune": (
        trainjob(
            "torchtune-llama3.3-70b",
            numNodes=2,
            args=["model.lora_attn_modules=[q_proj, v_proj, output_proj]"],
            resources={},
        ),
        [
            invalid(
                "spec.trainer.numNodes",
                "2: LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        ],
    ),
    "qlora is not supported for multi-node training either": (
        trainjob("torchtune-llama3.3-70b", numNodes=2, args=QLORA, resources={}),
        [
            invalid(
                "spec.trainer.numNodes",
                "2: LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        ],
    ),
    "lora is supported for single-node training in torchtune": (
        trainjob(
            "torchtune-llama3.3-70b",
            numNodes=1,
            args=["model.lora_attn_modules=[q_proj, v_proj, output_proj]"],
            resources={},
        ),
        [],
    ),
    "single-device qlora is allowed for llama3.2-1b": (
        trainjob(numNodes=1, args=QLORA, resources={"nvidia.com/gpu": "1"}),
        [],
    ),
    "qlora=False is not qlora": (
        trainjob(numNodes=1, args=["model.quantize_base=False"], resources={"example.com/gpu": "2"}),
        [],
    ),
    "dora is not qlora": (
        trainjob(
            numNodes=1,
            args=["model.quantize_base=True", "model.use_dora=True"],
            resources={"example.com/gpu": "2"},
        ),
        [],
    ),
    "immutable runtime config must not be set in trainer args": (
        trainjob(numNodes=1, args=["output_dir=/custom/output"], resources={}),
        [
            invalid(
                "spec.trainer.args[0]",
                '"output_dir=/custom/output": must not set immutable config "output_dir" in trainer args; '
                "it is managed by the runtime",
            )
        ],
    ),
    "multiple immutable runtime configs must not be set in trainer args": (
        trainjob(numNodes=1, args=["output_dir=custom-output", "tokenizer.path=/some/path"], resources={}),
        [
            invalid(
                "spec.trainer.args[0]",
                '"output_dir=custom-output": must not set immutable config "output_dir" in trainer args; '
                "it is managed by the runtime",
            ),
            invalid(
                "spec.trainer.args[1]",
                '"tokenizer.path=/some/path": must not set immutable config "tokenizer.path" in trainer '
                "args; it is managed by the runtime",
            ),
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_admission_refuses_what_trainer_refuses(case: str) -> None:
    job, want = CASES[case]
    runtime = runtime_named(job["spec"]["runtimeRef"]["name"])
    assert validate_trainjob(job, None, runtime) == want  # create: through resolve
    suspended = copy.deepcopy(job)
    suspended["spec"]["suspend"] = True
    assert validate_trainjob(suspended, suspended, runtime) == want  # update: the same rules


def test_every_problem_at_once_in_trainers_order() -> None:
    job = trainjob(
        "torchtune-qwen2.5-1.5b",
        numNodes=2,
        args=["model.quantize_base=True", "tokenizer.merges_file=/m"],
        resources={},
    )
    errors = validate_trainjob(job, None, runtime_named("torchtune-qwen2.5-1.5b", QWEN))
    assert [e.path for e in errors] == [
        "spec.trainer.numNodes",
        "spec.trainer.numNodes",
        "spec.trainer.args[1]",
    ]


def test_validation_sees_auto_where_the_rewrite_sees_the_cpu_count() -> None:
    """Trainer validates numProcPerNode as given (`auto`) but rewrites with the CPU count: QLoRA on
    qwen with no GPU and no CPU request is refused, though its command would be single-device."""
    job = trainjob("torchtune-qwen2.5-1.5b", args=QLORA, resources={}, gpus="0")
    errors = validate_trainjob(job, None, runtime_named("torchtune-qwen2.5-1.5b", QWEN))
    assert [e.path for e in errors] == ["spec.runtimeRef.name"]
    rt = runtime_named("torchtune-qwen2.5-1.5b", QWEN)
    node, _ = node_of(
        trainjob(
            "torchtune-qwen2.5-1.5b",
            args=["model.quantize_base=True", "model.use_dora=True"],
            resources={},
            gpus="0",
        ),
        rt,
    )
    assert node["command"][2:5] == [
        "full_finetune_single_device",
        "--config",
        "qwen2_5/1.5B_full_single_device",
    ]


def test_without_resources_per_node_the_gpus_are_the_runtimes() -> None:
    job = trainjob(numNodes=1, args=QLORA)  # the runtime's node asks for nvidia.com/gpu: 2
    job["spec"]["suspend"] = True
    errors = validate_trainjob(job, job, LLAMA_1B)  # update
    assert [e.path for e in errors] == ["spec.trainer.numProcPerNode", "spec.trainer.resourcesPerNode"]
    assert errors[1].message.startswith("null: ")  # the TrainJob's resourcesPerNode, as Trainer shows it
    assert validate_trainjob(job, None, LLAMA_1B) == errors  # create
    one_gpu = copy.deepcopy(LLAMA_1B)
    node_rjob = one_gpu["spec"]["template"]["spec"]["replicatedJobs"][2]
    node_rjob["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 1}
    }
    assert validate_trainjob(job, job, one_gpu) == []
    assert validate_trainjob(job, None, one_gpu) == []


def test_offline_validate_reports_the_same_errors() -> None:
    job, want = CASES["multi-devices qlora is not supported for llama3.2-1b in torchtune"]
    report = io.StringIO()
    runtimes = {("ClusterTrainingRuntime", "torchtune-llama3.2-1b"): LLAMA_1B}
    ok, _ = check_trainer_document(job, "tj.yaml", report, runtimes)
    assert not ok
    assert report.getvalue().splitlines() == [f"tj.yaml: {e}" for e in want]


def test_a_trainjob_stored_past_the_webhook_fails_with_trainers_reason() -> None:
    job = trainjob(numNodes=1, args=["output_dir=/custom"], resources={})
    observed = Observed(pods=[], service={"metadata": {"name": job["metadata"]["name"]}}, extra=[])
    plan = plan_trainjob(job, observed, LLAMA_1B, datetime(2026, 11, 26, tzinfo=UTC), PlannerConfig())
    assert not plan.create_pods
    assert plan.status is not None
    [failed] = plan.status["conditions"]
    assert (failed["type"], failed["status"], failed["reason"]) == (
        "Failed",
        "True",
        "TrainingRuntimeNotSupported",
    )
    assert "spec.trainer.args[0]" in failed["message"] and "output_dir" in failed["message"]
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", "TrainingRuntimeNotSupported")]


def test_a_malformed_num_proc_per_node_is_an_error_not_a_traceback() -> None:
    job = trainjob(numProcPerNode="four", resources={"nvidia.com/gpu": "1"})
    errors = validate_trainjob(job, None, LLAMA_1B)  # as `kubetrain validate` runs it on any YAML
    assert [e.path for e in errors] == ["spec.trainer.numProcPerNode"]
