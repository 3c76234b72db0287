"""The required properties of the Kubernetes types inside Trainer's CRDs (core/v1's EnvVarSource
references, VolumeMount, VolumeDevice, ContainerRestartRule, NodeSelector,
TopologySpreadConstraint and the volume sources), as Trainer's generated CRDs carry them
(manifests/base/crds at Trainer 8c0f505) wherever a TrainJob or a runtime embeds them: the env
of `spec.trainer` and `spec.initializer.*`, a runtime patch's pod spec, a runtime's pod
templates. kubetrain's schema keeps those types open but for their list keys, so without these
markers a TrainJob with `valueFrom.secretKeyRef` and no `key` was admitted — Trainer's CRD
refuses it — and its pods were refused when created, the TrainJob never starting. The API server
applies them before any webhook (`spec.trainer.env[0].valueFrom.secretKeyRef.key: Required
value`). Pure data."""

from __future__ import annotations

from typing import Any

from kubetrain.jobs.listkeys import node

_ENV_REFS = {
    "valueFrom.configMapKeyRef": ["key"],
    "valueFrom.fieldRef": ["fieldPath"],
    "valueFrom.fileKeyRef": ["key", "path", "volumeName"],
    "valueFrom.resourceFieldRef": ["resource"],
    "valueFrom.secretKeyRef": ["key"],
}
_VOLUME_SOURCES = {
    "cephfs": ["monitors"],
    "cinder": ["volumeID"],
    "csi": ["driver"],
    "ephemeral.volumeClaimTemplate": ["spec"],
    "ephemeral.volumeClaimTemplate.spec.dataSource": ["kind", "name"],
    "flexVolume": ["driver"],
    "iscsi": ["iqn", "lun", "targetPortal"],
    "rbd": ["image", "monitors"],
    "scaleIO": ["gateway", "secretRef", "system"],
}
_NODE_AFFINITY = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_PATCH_POD = (
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec"
)
_RUNTIME_POD = "spec.template.spec.replicatedJobs[].template.spec.template.spec"


def _env(at: str) -> dict[str, list[str]]:
    return {f"{at}.{ref}": list(keys) for ref, keys in _ENV_REFS.items()}


def _pod(at: str, containers: tuple[str, ...], *, runtime: bool) -> dict[str, list[str]]:
    """A pod spec's (a runtime patch's, `runtime` False, has no volumeDevices, restart rules or
    topology spread)."""
    out: dict[str, list[str]] = {f"{at}.{_NODE_AFFINITY}": ["nodeSelectorTerms"]}
    out |= {f"{at}.volumes[].{source}": list(keys) for source, keys in _VOLUME_SOURCES.items()}
    for kind in containers:
        out |= _env(f"{at}.{kind}[].env[]")
        out[f"{at}.{kind}[].volumeMounts[]"] = ["mountPath", "name"]
        if runtime:
            out[f"{at}.{kind}[].volumeDevices[]"] = ["devicePath", "name"]
            out[f"{at}.{kind}[].restartPolicyRules[]"] = ["action"]
            out[f"{at}.{kind}[].restartPolicyRules[].exitCodes"] = ["operator"]
    if runtime:
        out[f"{at}.topologySpreadConstraints[]"] = ["maxSkew", "topologyKey", "whenUnsatisfiable"]
    return out


TRAINJOB_REQUIRED: dict[str, list[str]] = {
    **_env("spec.trainer.env[]"),
    **_env("spec.initializer.dataset.env[]"),
    **_env("spec.initializer.model.env[]"),
    **_pod(_PATCH_POD, ("containers", "initContainers"), runtime=False),
}
RUNTIME_REQUIRED: dict[str, list[str]] = _pod(
    _RUNTIME_POD, ("containers", "initContainers", "ephemeralContainers"), runtime=True
)


def add_required(schema: dict[str, Any], table: dict[str, list[str]]) -> None:
    """Add each property of `table` to its node's `required` (kept in order, once)."""
    for path, names in table.items():
        at = node(schema, path)
        required: list[str] = list(at.get("required") or [])
        at["required"] = required + [n for n in names if n not in required]
