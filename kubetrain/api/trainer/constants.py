"""Names Trainer v2 and JobSet give the objects they create, and the condition types and reasons
Trainer writes (from kubeflow/trainer v2.3 `pkg/constants` and JobSet v0.12 `api/jobset/v1alpha2`).
Pure."""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
KINDS = (TRAINJOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
PLURALS = {
    TRAINJOB: "trainjobs",
    TRAINING_RUNTIME: "trainingruntimes",
    CLUSTER_TRAINING_RUNTIME: "clustertrainingruntimes",
}

# spec.managedBy values: Trainer's own controller (the default) and Kueue's MultiKueue.
TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGERS = (TRAINJOB_CONTROLLER, MULTIKUEUE)

# Runtime and step labels.
LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"
LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
LABEL_SUPPORT = "trainer.kubeflow.org/support"
ANCESTOR_TRAINER = "trainer"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
NODE = "node"
LAUNCHER = "launcher"
DATASET_MOUNT_PATH = "/workspace/dataset"
MODEL_MOUNT_PATH = "/workspace/model"
INITIALIZER_ENV_STORAGE_URI = "STORAGE_URI"
RESOURCE_IN_USE_FINALIZER = f"{GROUP}/resource-in-use"
RUNTIME_SNAPSHOT_SUFFIX = "-runtime-snapshot"

# Condition types (metav1.Condition) and their reasons.
SUSPENDED = "Suspended"
COMPLETE = "Complete"
FAILED = "Failed"
CONDITION_TYPES = (SUSPENDED, COMPLETE, FAILED)
REASON_SUSPENDED = "Suspended"
REASON_RESUMED = "Resumed"
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
# JobSet's reasons, which Trainer copies from the JobSet's conditions.
REASON_ALL_JOBS_COMPLETED = "AllJobsCompleted"
REASON_FAILED_JOBS = "FailedJobs"
REASON_REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
MESSAGE_DEADLINE_EXCEEDED = "TrainJob exceeded its active deadline"

# JobSet's and Job's labels and annotations on the pods.
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
GROUP_NAME = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
# A Job's own restart attempt (its `RestartJob` restarts), label and annotation (JobSet v0.12).
JOB_RESTART_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"
COORDINATOR = "jobset.sigs.k8s.io/coordinator"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_NAME = "batch.kubernetes.io/job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME_LEGACY = "job-name"
CONTROLLER_UID_LEGACY = "controller-uid"
COMPLETION_INDEX_FIELD_PATH = f"metadata.annotations['{COMPLETION_INDEX}']"

# Torch (torchrun), MPI, XGBoost and JAX environment.
TORCH_PORT = 29500
PET_NNODES = "PET_NNODES"
PET_NPROC_PER_NODE = "PET_NPROC_PER_NODE"
PET_NODE_RANK = "PET_NODE_RANK"
PET_MASTER_ADDR = "PET_MASTER_ADDR"
PET_MASTER_PORT = "PET_MASTER_PORT"
TORCH_RESERVED_ENV = frozenset(
    {PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT}
)
# torchtune (Trainer's BuiltinTrainer): a TrainJob of a torch runtime whose trainer command is
# exactly `tune run` gets its recipe, config and the runtime's immutable overrides appended.
TORCHTUNE_ENTRYPOINT = ("tune", "run")
TORCHTUNE_ARG_RDZV_ENDPOINT = "--rdzv_endpoint"
TORCHTUNE_ARG_CONFIG = "--config"
TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE = "full_finetune_single_device"
TORCHTUNE_FULL_FINETUNE_DISTRIBUTED = "full_finetune_distributed"
TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE = "lora_finetune_single_device"
TORCHTUNE_LORA_FINETUNE_DISTRIBUTED = "lora_finetune_distributed"
TORCHTUNE_FULL_SINGLE_DEVICE_SUFFIX = "_full_single_device"
TORCHTUNE_FULL_MULTI_DEVICES_SUFFIX = "_full"
TORCHTUNE_FULL_MULTI_NODES_SUFFIX = "_full_multinode"
TORCHTUNE_LORA_SINGLE_DEVICE_SUFFIX = "_lora_single_device"
TORCHTUNE_QLORA_SINGLE_DEVICE_SUFFIX = "_qlora_single_device"
TORCHTUNE_LORA_DISTRIBUTED_SUFFIX = "_lora"
TORCHTUNE_QLORA_DISTRIBUTED_SUFFIX = "_qlora"
TORCHTUNE_LORA_ATTN_MODULES = "model.lora_attn_modules"
TORCHTUNE_QUANTIZE_BASE = "model.quantize_base"
TORCHTUNE_USE_DORA = "model.use_dora"
TORCHTUNE_MODEL_LLAMA3_2_1B = "llama3_2/1B"
TORCHTUNE_MODEL_LLAMA3_2_3B = "llama3_2/3B"
TORCHTUNE_MODEL_LLAMA3_3_70B = "llama3_3/70B"
TORCHTUNE_MODEL_QWEN2_5_1_5B = "qwen2_5/1.5B"
TORCHTUNE_SUPPORTED_MODELS = frozenset(
    {
        TORCHTUNE_MODEL_LLAMA3_2_1B,
        TORCHTUNE_MODEL_LLAMA3_2_3B,
        TORCHTUNE_MODEL_LLAMA3_3_70B,
        TORCHTUNE_MODEL_QWEN2_5_1_5B,
    }
)
# Set by the runtime's `node` command, never by the TrainJob's args.
TORCHTUNE_IMMUTABLE_CONFIGS = frozenset(
    {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}
)
OMPI_HOSTFILE = "OMPI_MCA_orte_default_hostfile"
OMPI_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
OMPI_KEEP_FQDN = "OMPI_MCA_orte_keep_fqdn_hostnames"
OMPI_DEFAULT_SLOTS = "OMPI_MCA_orte_set_default_slots"
MPI_RESERVED_ENV = frozenset({OMPI_HOSTFILE, OMPI_RSH_ARGS, OMPI_KEEP_FQDN, OMPI_DEFAULT_SLOTS})
DMLC_TRACKER_URI = "DMLC_TRACKER_URI"
DMLC_TRACKER_PORT = "DMLC_TRACKER_PORT"
DMLC_TASK_ID = "DMLC_TASK_ID"
DMLC_NUM_WORKER = "DMLC_NUM_WORKER"
XGBOOST_RESERVED_ENV = frozenset({DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER})
MPI_SSH_SECRET_SUFFIX = "-mpi-ssh-auth"
MPI_HOSTFILE_SUFFIX = "-mpi-hostfile"
MPI_HOSTFILE_DIR = "/etc/mpi"

# The ConfigMap the Kubeflow SDK reads the Trainer version from.
PUBLIC_CONFIGMAP = "kubeflow-trainer-public"
PUBLIC_CONFIGMAP_VERSION_KEY = "kubeflow_trainer_version"
SYSTEM_NAMESPACE = "kubeflow-system"
TRAINER_VERSION = "v2.3.0"
