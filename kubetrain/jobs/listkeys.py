"""The list and map types (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
`x-kubernetes-map-type`) that the upstream CRDs put on the fields kubetrain's CRDs describe, keyed
by schema path (`[]`: an array's items, `{}`: a map's values).

With them a real API server refuses a list with two items of one key (a `set` with one value
twice) before any webhook is called (apiextensions-apiserver's `listtype.ValidateListSetsAndMaps`,
run by the custom-resource strategy's `Validate` / `ValidateUpdate`), and server-side apply
(`kubectl apply --server-side`, Argo CD, Flux) merges such a list item by item by its keys
instead of replacing it (`atomic` lists and maps are replaced whole). Inside the
preserve-unknown-fields pod templates only the skeleton of PodSpec's markers is described
(kubetrain.jobs.podlistkeys, which builds it and puts the markers on with `apply`).

The API server's rules for a map list (apiextensions-apiserver `validateMapListKeysMapSet`):
each key is a scalar property of the items that is required or has a default. Where the items
are kept open (env variables, volume mounts, scheduling gates) the key is added as the string
property upstream's item type has; a key without a default is made required, as upstream's is.
"""

from __future__ import annotations

import copy
from typing import Any

Markers = dict[str, Any]
# The description of a key property added to open items (what `kubectl explain` prints for it).
KEY_DESCRIPTION = "The item's name, unique in the list: it identifies the item when lists are merged."

ATOMIC_LIST: Markers = {"x-kubernetes-list-type": "atomic"}
ATOMIC_MAP: Markers = {"x-kubernetes-map-type": "atomic"}
SET: Markers = {"x-kubernetes-list-type": "set"}


def keyed(*keys: str) -> Markers:
    """A map list whose items are identified by `keys`."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


BY_NAME = keyed("name")

# Trainer's TrainJob CRD (manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml at 8c0f505).
PATCH_POD = (
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec"
)
TRAINJOB: dict[str, Markers] = {
    "spec.trainer.command": ATOMIC_LIST,
    "spec.trainer.args": ATOMIC_LIST,
    "spec.trainer.env": BY_NAME,
    "spec.initializer.dataset.env": BY_NAME,
    "spec.initializer.dataset.secretRef": ATOMIC_MAP,
    "spec.initializer.model.env": BY_NAME,
    "spec.initializer.model.secretRef": ATOMIC_MAP,
    "spec.runtimePatches": keyed("manager"),
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs": BY_NAME,
    f"{PATCH_POD}.containers": BY_NAME,
    f"{PATCH_POD}.containers[].env": BY_NAME,
    f"{PATCH_POD}.containers[].volumeMounts": BY_NAME,
    f"{PATCH_POD}.initContainers": BY_NAME,
    f"{PATCH_POD}.initContainers[].env": BY_NAME,
    f"{PATCH_POD}.initContainers[].volumeMounts": BY_NAME,
    f"{PATCH_POD}.imagePullSecrets": BY_NAME,
    f"{PATCH_POD}.imagePullSecrets[]": ATOMIC_MAP,
    f"{PATCH_POD}.schedulingGates": BY_NAME,
    f"{PATCH_POD}.tolerations": ATOMIC_LIST,
    f"{PATCH_POD}.volumes": BY_NAME,
    "status.conditions": keyed("type"),
    "status.jobsStatus": BY_NAME,
    "status.trainerStatus.metrics": ATOMIC_LIST,
}
# A LocalObjectReference's `name` defaults to "" (so it is a defaulted key, not a required one).
TRAINJOB_KEY_DEFAULTS: dict[str, Any] = {f"{PATCH_POD}.imagePullSecrets[].name": ""}

# Trainer's TrainingRuntime and ClusterTrainingRuntime CRDs (the same schema); the JobSet
# template's markers are JobSet's (jobset_types.go).
RUNTIME: dict[str, Markers] = {
    "spec.mlPolicy.torch.envInjection.targets": keyed("jobName"),
    "spec.mlPolicy.torch.envInjection.targets[].containerNames": SET,
    "spec.template.spec.replicatedJobs": BY_NAME,
    "spec.template.spec.replicatedJobs[].dependsOn": BY_NAME,
    "spec.template.spec.successPolicy.targetReplicatedJobs": ATOMIC_LIST,
    "spec.template.spec.failurePolicy.rules[].targetReplicatedJobs": ATOMIC_LIST,
    "spec.template.spec.volumeClaimPolicies": ATOMIC_LIST,
}

# training-operator release-1.9's kubeflow.org CRDs (manifests/base/crds): the replica
# statuses' label selector (metav1.LabelSelector), on every job kind.
KUBEFLOW_JOB: dict[str, Markers] = {
    "status.replicaStatuses{}.labelSelector": ATOMIC_MAP,
    "status.replicaStatuses{}.labelSelector.matchExpressions": ATOMIC_LIST,
}
# KubeDL's training.kubedl.io CRDs (config/crd/bases) put list types only inside the pod
# templates (podlistkeys.KUBEDL_POD_SPEC; and MPIJob's legacy `spec.template`, which kubetrain
# does not serve): none here.


def node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema node at `path`: dotted property names, `[]` an array's items, `{}` a map's
    values; KeyError if the schema has no such node."""
    out = schema
    for part in path.split("."):
        name = part.rstrip("[]{}")
        out = out["properties"][name]
        rest = part[len(name) :]
        for step in (rest[i : i + 2] for i in range(0, len(rest), 2)):
            out = out["items"] if step == "[]" else out["additionalProperties"]
    return out


def apply(
    schema: dict[str, Any], table: dict[str, Markers], key_defaults: dict[str, Any] | None = None
) -> None:
    """Put each entry of `table` on its node of `schema`, making a map list's keys what the API
    server requires of them (a scalar item property, required unless it has a default)."""
    for path, value in (key_defaults or {}).items():
        node(schema, path)["default"] = value
    for path, markers in table.items():
        target = node(schema, path)
        target.update(copy.deepcopy(markers))  # no list shared between nodes (no YAML anchors)
        keys = markers.get("x-kubernetes-list-map-keys")
        if keys:
            _key_properties(target["items"], keys, path)


def _key_properties(items: dict[str, Any], keys: list[str], path: str) -> None:
    props = items.setdefault("properties", {})
    for key in keys:
        if key not in props:
            if not items.get("x-kubernetes-preserve-unknown-fields"):
                raise KeyError(f"{path}: the items have no property {key!r} to key the list by")
            props[key] = {"type": "string", "description": KEY_DESCRIPTION}
        if props[key].get("type") not in ("string", "integer", "number", "boolean"):
            raise TypeError(f"{path}: list-map key {key!r} must be a scalar property")
        if "default" not in props[key] and key not in items.get("required", []):
            items.setdefault("required", []).append(key)
