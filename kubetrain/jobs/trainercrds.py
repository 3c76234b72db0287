"""The CustomResourceDefinitions of Kubeflow Trainer v2's kinds (`trainer.kubeflow.org/v1alpha1`):
TrainJob and TrainingRuntime (namespaced), ClusterTrainingRuntime (cluster-scoped), generated
from the models in `kubetrain.api.trainer` the same way as the job kinds' (`crdgen.model_schema`).

Like every CRD kubetrain generates they carry `app.kubernetes.io/part-of: kubetrain`, so the
operator can tell them from the CRDs Trainer's own chart installs (it refuses to serve the group
beside Trainer's controller)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from kubetrain.api.groups import KUBEDL_APPS_GROUP, TRAINER_GROUP
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.runtime import ClusterTrainingRuntime, TrainingRuntime
from kubetrain.api.trainer.trainjob import TrainJob
from kubetrain.jobs import listkeys, podlistkeys
from kubetrain.jobs.crdgen import all_crds, model_schema
from kubetrain.jobs.croncrds import cron_crds
from kubetrain.jobs.trainerrequired import RUNTIME_REQUIRED, TRAINJOB_REQUIRED, add_required
from kubetrain.jobs.trainerrules import KUBETRAIN_RUNTIME_RULES, RUNTIME_RULES, TRAINJOB_RULES, add_rules

_LABELS = {"app.kubernetes.io/name": "kubetrain", "app.kubernetes.io/part-of": "kubetrain"}
CATEGORY = "kubeflow"  # `kubectl get kubeflow` lists TrainJobs and runtimes, as with Trainer's CRDs


def group_crds(group: str) -> list[dict[str, Any]]:
    """Every CRD of one servable API group (kubetrain.api.groups.SERVABLE_GROUPS)."""
    if group == TRAINER_GROUP:
        return trainer_crds()
    if group == KUBEDL_APPS_GROUP:
        return cron_crds(group)
    return [*all_crds(group), *cron_crds(group)]


def trainer_crds() -> list[dict[str, Any]]:
    """TrainJob, TrainingRuntime, ClusterTrainingRuntime."""
    return [
        _crd(
            TrainJob,
            c.TRAINJOB,
            "Namespaced",
            "TrainJob: one training run of a TrainingRuntime or ClusterTrainingRuntime "
            "(Kubeflow Trainer v2).",
            _trainjob_columns(),
        ),
        _crd(
            TrainingRuntime,
            c.TRAINING_RUNTIME,
            "Namespaced",
            "TrainingRuntime: a namespaced blueprint for TrainJobs (Kubeflow Trainer v2).",
            _runtime_columns(),
        ),
        _crd(
            ClusterTrainingRuntime,
            c.CLUSTER_TRAINING_RUNTIME,
            "Cluster",
            "ClusterTrainingRuntime: a cluster-wide blueprint for TrainJobs (Kubeflow Trainer v2).",
            _runtime_columns(),
        ),
    ]


# Trainer 2.3's CRD defaults of a runtime's ML policy sources (the API server sets them when a
# runtime is stored, so `kubectl get` shows them).
RUNTIME_POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "mpi": {
        "numProcPerNode": 1,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": "/root/.ssh",
        "runLauncherAsNode": False,
    },
    "flux": {"numProcPerNode": 1},
}

# Trainer's enum of `mlPolicy.mpi.mpiImplementation` (trainingruntime_types.go: OpenMPI, or empty
# for the default): the API server refuses Intel and MPICH, which Trainer's MPI plug-in does not
# run, before any webhook, and admits "" as Trainer does.
MPI_IMPLEMENTATION_ENUM = ("OpenMPI", "")
# JobSet's `+kubebuilder:default=Recreate` on `failurePolicy.restartStrategy` (jobset_types.go),
# which Trainer's runtime CRDs carry: a runtime with a failurePolicy is stored with it.
RESTART_STRATEGY_DEFAULT = "Recreate"

# JobSet's and Trainer's schema markers (required properties, list and string bounds) that the
# webhook does not check itself, as Trainer's generated CRDs carry them (manifests/base/crds at
# Trainer 8c0f505: jobset_types.go `+kubebuilder:validation:Required`/`MaxItems`,
# trainjob_types.go, trainingruntime_types.go `MaxLength`); the API server applies them to every
# request, before any webhook, with its own messages (`Required value`, `Too many: 6: must have
# at most 5 items`). The bounds the webhook checks with field paths (command, args, image,
# storageUri, envInjection, volumeClaimPolicies) stay the webhook's.
TRAINJOB_SCHEMA_MARKERS: dict[str, dict[str, Any]] = {
    "spec.trainer.env": {"maxItems": 128},
    "spec.initializer.dataset.env": {"maxItems": 128},
    "spec.initializer.model.env": {"maxItems": 128},
    "spec.runtimePatches": {"maxItems": 16},
}
RUNTIME_SCHEMA_MARKERS: dict[str, dict[str, Any]] = {
    "spec.mlPolicy.mpi.sshAuthMountPath": {"maxLength": 4096},
    "spec.template.spec.replicatedJobs[]": {"required": ["name", "template"]},
    "spec.template.spec.replicatedJobs[].dependsOn": {"maxItems": 5},
    "spec.template.spec.failurePolicy.rules[]": {"required": ["action", "name"]},
    "spec.template.spec.successPolicy": {"required": ["operator"]},
    "spec.template.spec.startupPolicy": {"required": ["startupPolicyOrder"]},
    "spec.template.spec.coordinator": {"required": ["replicatedJob"]},
}

# Trainer's validation markers on its integer fields (trainjob_types.go, trainingruntime_types.go
# since Trainer #3809): numNodes `Minimum=0`, each numProcPerNode an XValidation `self >= 1`
# with Trainer's message. kubetrain's webhook refuses the same values with the same messages
# (`kubetrain.jobs.trainjob.validate`); the rules here make any API server that compiles CEL
# refuse them as Trainer's CRDs do.
TRAINJOB_MARKERS: dict[str, dict[str, Any]] = {
    "numNodes": {"minimum": 0},
    "numProcPerNode": {
        "x-kubernetes-validations": [
            {"rule": "self >= 1", "message": "numProcPerNode must be greater than or equal to 1"}
        ]
    },
}
# Trainer's rules on a TrainJob's name (trainjob_types.go, Trainer #2767), at the schema's root
# where CEL sees `self.metadata.name`: a DNS-1123 subdomain (which every object's name must be)
# with a dot would name no Service nor pod hostname. kubetrain's webhook refuses such names too
# (`kubetrain.jobs.trainjob.validate`); with the rules the API server refuses them first, with
# Trainer's messages.
TRAINJOB_ROOT_RULES: list[dict[str, str]] = [
    {
        "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        "message": "metadata.name must match RFC 1035 DNS label format",
    },
    {"rule": "size(self.metadata.name) <= 63", "message": "metadata.name must be no more than 63 characters"},
]
RUNTIME_POLICY_MARKERS: dict[str, dict[str, Any]] = {
    source: {
        "x-kubernetes-validations": [
            {"rule": "self >= 1", "message": f"NumProcPerNode in {source}Policy must be >= 1"}
        ]
    }
    for source in ("mpi", "flux")
}


def _crd(
    model: type[BaseModel], kind: str, scope: str, description: str, columns: list[dict[str, Any]]
) -> dict[str, Any]:
    schema = model_schema(model)
    schema["description"] = description
    spec = schema["properties"]["spec"]["properties"]
    if kind == c.TRAINJOB:
        for name, markers in TRAINJOB_MARKERS.items():
            spec["trainer"]["properties"][name].update(markers)
        schema["x-kubernetes-validations"] = [dict(rule) for rule in TRAINJOB_ROOT_RULES]
        add_rules(schema, TRAINJOB_RULES)
        _add_markers(schema, TRAINJOB_SCHEMA_MARKERS)
        listkeys.apply(schema, listkeys.TRAINJOB, listkeys.TRAINJOB_KEY_DEFAULTS)
        podlistkeys.describe_trainjob(schema)
        add_required(schema, TRAINJOB_REQUIRED)
    else:
        policy = spec["mlPolicy"]["properties"]
        for source, defaults in RUNTIME_POLICY_DEFAULTS.items():
            for name, value in defaults.items():
                policy[source]["properties"][name]["default"] = value
        for source, markers in RUNTIME_POLICY_MARKERS.items():
            policy[source]["properties"]["numProcPerNode"].update(markers)
        policy["mpi"]["properties"]["mpiImplementation"]["enum"] = list(MPI_IMPLEMENTATION_ENUM)
        failure = spec["template"]["properties"]["spec"]["properties"]["failurePolicy"]["properties"]
        failure["restartStrategy"]["default"] = RESTART_STRATEGY_DEFAULT
        add_rules(schema, RUNTIME_RULES)
        add_rules(schema, KUBETRAIN_RUNTIME_RULES)
        _add_markers(schema, RUNTIME_SCHEMA_MARKERS)
        listkeys.apply(schema, listkeys.RUNTIME)
        podlistkeys.describe_job_spec(
            listkeys.node(schema, "spec.template.spec.replicatedJobs[].template.spec")
        )
        add_required(schema, RUNTIME_REQUIRED)
    plural = c.PLURALS[kind]
    version: dict[str, Any] = {
        "name": c.VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "additionalPrinterColumns": columns,
    }
    if kind == c.TRAINJOB:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{c.GROUP}", "labels": dict(_LABELS)},
        "spec": {
            "group": c.GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "categories": [CATEGORY],
            },
            "versions": [version],
        },
    }


def _add_markers(schema: dict[str, Any], table: dict[str, dict[str, Any]]) -> None:
    for path, markers in table.items():
        listkeys.node(schema, path).update(copy.deepcopy(markers))


def _trainjob_columns() -> list[dict[str, Any]]:
    return [
        {
            "name": "State",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.status=="True")].type',
            "description": "The condition that holds: Suspended, Complete or Failed (empty while running)",
        },
        {
            "name": "Nodes",
            "type": "integer",
            "jsonPath": ".spec.trainer.numNodes",
            "description": "Training nodes asked for (empty: the runtime's mlPolicy.numNodes)",
        },
        {"name": "Runtime", "type": "string", "jsonPath": ".spec.runtimeRef.name"},
        {
            "name": "Progress",
            "type": "integer",
            "jsonPath": ".status.trainerStatus.progressPercentage",
            "description": "Training progress in percent, when the trainer reports it",
        },
        {
            "name": "ETA",
            "type": "integer",
            "jsonPath": ".status.trainerStatus.estimatedRemainingSeconds",
            "description": "Seconds left, as the training code last estimated them",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def _runtime_columns() -> list[dict[str, Any]]:
    return [
        {
            "name": "Framework",
            "type": "string",
            "jsonPath": ".metadata.labels.trainer\\.kubeflow\\.org/framework",
        },
        {"name": "Nodes", "type": "integer", "jsonPath": ".spec.mlPolicy.numNodes"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
