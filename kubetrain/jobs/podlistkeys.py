"""The list and map types of core/v1's PodSpec inside kubetrain's open pod templates.

kubetrain's CRDs keep pod templates open (`x-kubernetes-preserve-unknown-fields`, see crdgen):
expanded, each CRD would be too big for a client-side `kubectl apply`. Kubeflow's CRDs expand
them, and with them carry the list markers of Kubernetes' core/v1 types (k8s.io/api/core/v1
types.go `+listType`/`+listMapKey`, Kubernetes 1.36, as controller-gen writes them into
training-operator's, mpi-operator's and Trainer's CRDs). Inside the open templates kubetrain
describes only the skeleton those markers need: each keyed list (or set) an array carrying its
markers, its items open but for the key properties (scalar; required, or defaulted as upstream's:
a port's `protocol` defaults to `TCP`, an image pull secret's `name` to `""`); each object
upstream marks atomic (and not already inside an atomic list) an open object with the marker;
every object on the way there open. Everything else stays as the user wrote it, for the webhook's
pod-template check. KubeDL's CRDs, generated from older core/v1 types, carry fewer markers
(`KUBEDL_POD_SPEC`); kubetrain's training.kubedl.io CRDs carry KubeDL's.

With them the API server refuses two containers (env variables, volumes, ports, ...) of one key
before the webhook (`Duplicate value: {"name":"worker"}`), and server-side apply merges these
lists item by item. Lists upstream marks atomic are not marked: a list in an open object is
already atomic to server-side apply, and an atomic list has no duplicate check.
"""

from __future__ import annotations

from typing import Any

from kubetrain.jobs import listkeys
from kubetrain.jobs.listkeys import ATOMIC_MAP, BY_NAME, SET, Markers, keyed

_PORTS = keyed("containerPort", "protocol")
# An env variable, below the variable.
_ENV_VAR: dict[str, Markers] = {
    f"valueFrom.{ref}": ATOMIC_MAP
    for ref in ("configMapKeyRef", "fieldRef", "fileKeyRef", "resourceFieldRef", "secretKeyRef")
}
_CONTAINER: dict[str, Markers] = {
    "env": BY_NAME,
    **{f"env[].{path}": markers for path, markers in _ENV_VAR.items()},
    "ports": _PORTS,
    "resources.claims": BY_NAME,
    "restartPolicyRules[].exitCodes.values": SET,
    "volumeDevices": keyed("devicePath"),
    "volumeMounts": keyed("mountPath"),
}
_VOLUME_SECRET_REFS = ("cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos")

# PodSpec, by path below the PodSpec.
POD_SPEC: dict[str, Markers] = {
    **{
        f"{kind}{rest}": markers
        for kind in ("containers", "initContainers", "ephemeralContainers")
        for rest, markers in [("", BY_NAME), *((f"[].{p}", m) for p, m in _CONTAINER.items())]
    },
    "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": ATOMIC_MAP,
    "hostAliases": keyed("ip"),
    "imagePullSecrets": BY_NAME,
    "imagePullSecrets[]": ATOMIC_MAP,
    "nodeSelector": ATOMIC_MAP,
    "resourceClaims": BY_NAME,
    "resources.claims": BY_NAME,
    "schedulingGates": BY_NAME,
    "topologySpreadConstraints": keyed("topologyKey", "whenUnsatisfiable"),
    "topologySpreadConstraints[].labelSelector": ATOMIC_MAP,
    "volumes": BY_NAME,
    **{f"volumes[].{source}.secretRef": ATOMIC_MAP for source in _VOLUME_SECRET_REFS},
    # controller-gen makes a struct embedding the atomic LocalObjectReference atomic itself.
    "volumes[].configMap": ATOMIC_MAP,
    "volumes[].csi.nodePublishSecretRef": ATOMIC_MAP,
    "volumes[].ephemeral.volumeClaimTemplate.spec.dataSource": ATOMIC_MAP,
    "volumes[].ephemeral.volumeClaimTemplate.spec.selector": ATOMIC_MAP,
}
# KubeDL's training.kubedl.io CRDs (kubedl-io/kubedl b93a2b4 config/crd/bases, controller-gen
# v0.6.1 with older core/v1 types) carry only these: with KubeDL's CRD a second container or env
# variable of one name is admitted by the API server, and so it is with kubetrain's.
KUBEDL_POD_SPEC: dict[str, Markers] = {
    "containers[].ports": _PORTS,
    "initContainers[].ports": _PORTS,
    "nodeSelector": ATOMIC_MAP,
    "topologySpreadConstraints": keyed("topologyKey", "whenUnsatisfiable"),
}
# Key properties that are not plain strings, and the items of sets (scalars), by name.
_KEY_SCHEMAS: dict[str, dict[str, Any]] = {"containerPort": {"type": "integer", "format": "int32"}}
_SET_ITEMS: dict[str, Any] = {"values": {"type": "integer", "format": "int32"}}  # exit codes
# Defaulted keys, by list and key (controller-gen's `+default` on ContainerPort.protocol and
# LocalObjectReference.name, as upstream's CRDs have them).
_KEY_DEFAULTS: dict[tuple[str, str], Any] = {("ports", "protocol"): "TCP", ("imagePullSecrets", "name"): ""}

# batch/v1 JobSpec (a JobSet replicated job's template, in the runtimes' CRDs), below the JobSpec.
JOB_SPEC: dict[str, Markers] = {
    "podFailurePolicy.rules[].onExitCodes.values": SET,
    "selector": ATOMIC_MAP,
    **{f"template.spec.{path}": markers for path, markers in POD_SPEC.items()},
}

# Trainer's TrainJob: the core/v1 values its schema keeps open (its env variables, resources, a
# runtime patch's pod spec, whose lists are described by the model and keyed by listkeys.TRAINJOB)
# and the markers Trainer's CRD has inside them, with the `kubectl explain` path describing each.
TRAINJOB_OPEN: dict[str, tuple[str, dict[str, Markers]]] = {
    "spec.trainer.resourcesPerNode": ("pod.spec.containers.resources", {"claims": BY_NAME}),
    **{
        f"spec.{env}[]": ("pod.spec.containers.env", _ENV_VAR)
        for env in ("trainer.env", "initializer.dataset.env", "initializer.model.env")
    },
    listkeys.PATCH_POD: (
        "pod.spec",
        {
            **{
                f"{kind}[].env[].{path}": markers
                for kind in ("containers", "initContainers")
                for path, markers in _ENV_VAR.items()
            },
            **{path: m for path, m in POD_SPEC.items() if path.startswith(("affinity.", "volumes[]."))},
        },
    ),
}

POD_SPEC_DESCRIPTION = (
    "The pods' spec (core/v1 PodSpec). The schema gives only its lists' keys; the webhook checks "
    "the rest against the PodSpec schema."
)


def describe_pod_template(template: dict[str, Any], pod_spec: dict[str, Markers] = POD_SPEC) -> None:
    """Give an open PodTemplateSpec node the skeleton of `pod_spec`'s markers, under `spec`."""
    describe(template, {f"spec.{path}": markers for path, markers in pod_spec.items()}, "pod")
    listkeys.node(template, "spec")["description"] = POD_SPEC_DESCRIPTION


def describe_job_spec(job_spec: dict[str, Any]) -> None:
    """Give an open batch/v1 JobSpec node its pod template's skeleton and JobSpec's markers."""
    describe(job_spec, JOB_SPEC, "job.spec")
    listkeys.node(job_spec, "template.spec")["description"] = POD_SPEC_DESCRIPTION


def describe_trainjob(schema: dict[str, Any]) -> None:
    """Put Trainer's markers inside the open core/v1 values of a TrainJob schema."""
    for path, (explain, table) in TRAINJOB_OPEN.items():
        describe(listkeys.node(schema, path), table, explain)


def describe(root: dict[str, Any], table: dict[str, Markers], explain: str) -> None:
    """Create, below the open node `root`, the nodes `table` names (open objects and arrays of
    open objects on the way), then put its markers on them (listkeys.apply). Each node created
    is described by the `kubectl explain` command (from `explain`, e.g. `pod`) that prints its
    full schema, and what its markers mean."""
    defaults: dict[str, Any] = {}
    for path, markers in table.items():
        target = _ensure(root, path, markers, explain)
        for key in markers.get("x-kubernetes-list-map-keys", ()):
            props = target["items"].setdefault("properties", {})
            props.setdefault(key, _key_schema(key))
            list_name = path.rsplit(".", 1)[-1]
            if (list_name, key) in _KEY_DEFAULTS:
                defaults[f"{path}[].{key}"] = _KEY_DEFAULTS[list_name, key]
    listkeys.apply(root, table, defaults)


def _open() -> dict[str, Any]:
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _key_schema(key: str) -> dict[str, Any]:
    return {**_KEY_SCHEMAS.get(key, {"type": "string"}), "description": _key_description(key)}


def _key_description(key: str) -> str:
    if key == "name":
        return listkeys.KEY_DESCRIPTION
    return f"The item's {key}, a key of the list: it identifies the item when lists are merged."


def _ensure(root: dict[str, Any], path: str, markers: Markers, explain: str) -> dict[str, Any]:
    """The node at `path` below `root`, created (with its parents) where missing."""
    parts = path.split(".")
    out = root
    for i, part in enumerate(parts):
        name = part.rstrip("[]")
        is_list = part.endswith("[]")
        props = out.setdefault("properties", {})
        if name not in props:
            leaf = i == len(parts) - 1
            where = ".".join(p.rstrip("[]") for p in parts[: i + 1])
            props[name] = _new(name, is_list, markers if leaf else {})
            props[name]["description"] = _description(f"{explain}.{where}", markers if leaf else {})
        out = props[name]["items"] if is_list else props[name]
    return out


def _new(name: str, is_list: bool, markers: Markers) -> dict[str, Any]:
    if is_list:
        return {"type": "array", "items": _open()}
    if "x-kubernetes-list-type" in markers:
        items = _SET_ITEMS[name] if markers == SET else _open()
        return {"type": "array", "items": dict(items)}
    return _open()


def _description(explain: str, markers: Markers) -> str:
    out = f"Described in full by `kubectl explain {explain}`."
    keys = markers.get("x-kubernetes-list-map-keys")
    if keys:
        return f"{out} Its items are identified by {' and '.join(keys)}: two items with the same are refused."
    if markers == SET:
        return f"{out} A set: a value given twice is refused."
    if markers.get("x-kubernetes-map-type") == "atomic":
        return f"{out} Atomic: server-side apply replaces it whole."
    return out
