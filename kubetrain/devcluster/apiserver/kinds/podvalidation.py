"""The parts of kube-apiserver's pod spec validation that apply to what an operator or its users
write in pod templates (k8s.io/kubernetes pkg/apis/core/validation, validation.go), with upstream's
causes: reason, field path and message wording.

- `ValidateVolumes` / `validateVolumeSource`: a volume's name is required and a DNS-1123 label,
  unique in the pod; a volume has exactly one source ("must specify a volume type", or Forbidden
  "may not specify more than 1 volume type" at the second source in upstream's order); the
  configMap, secret and persistentVolumeClaim sources need their name. A volume with any of
  these errors does not count as a volume of the pod, so mounts naming it are `Not found`.
- `validateContainers` / `validateInitContainers` / `validateContainerCommon`: containers are
  required; a container's name is required and a DNS-1123 label, unique across containers and
  init containers; image required.
- container ports, hostPort conflicts and hostNetwork ports: `portvalidation.py`.
- `ValidateEnv`, `ValidateEnvFrom`: `envvalidation.py`.
- `ValidateVolumeMounts` (names, paths, subPath/subPathExpr): `mountvalidation.py`.
- probes, lifecycle hooks and a container's restartPolicy: `probevalidation.py`.
- pod and container securityContext: `securitycontextvalidation.py`.
- nodeSelector, node affinity and the pod (anti-)affinity terms: `affinityvalidation.py`.
- `ValidateTolerations`: `tolerationvalidation.py`.
- `ValidateContainerResourceRequirements`: resource names standard (cpu, memory,
  ephemeral-storage, hugepages-*) or extended (with a '/'); quantities not negative; a request
  at most its limit; extended resources (not overcommitable) need a limit equal to the request.

Not validated: volume sources' other fields (hostPath types, projected sources, items and
modes, …), volumeDevices, imagePullPolicy and terminationMessagePolicy values, resizePolicy,
resourceClaims, dnsConfig, hostAliases, readinessGates, topologySpreadConstraints (but their
matchLabelKeys), os-specific fields, activeDeadlineSeconds, ephemeral containers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubetrain.api.quantity import QuantityError, format_quantity, is_binary, parse_quantity
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import (
    affinityvalidation,
    envvalidation,
    mountvalidation,
    portvalidation,
    probevalidation,
    securitycontextvalidation,
    tolerationvalidation,
)
from kubetrain.devcluster.apiserver.kinds.fielderrors import (
    dicts,
    duplicate,
    invalid,
    required,
)
from kubetrain.devcluster.apiserver.kinds.objectmeta import dns1123_label_errors, qualified_name_problems

NO_LIMIT = "Limit must be set for non overcommitable resources"
MORE_THAN_ONE = "Forbidden: may not specify more than 1 volume type"
# validateVolumeSource's order, and the child each Forbidden names (upstream's spellings kept)
VOLUME_SOURCES = (
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
)
# the one name each of these sources requires (validateSecretVolumeSource & co.)
_SOURCE_NAME = {"secret": "secretName", "configMap": "name", "persistentVolumeClaim": "claimName"}
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# core helper `standardResources` (quota names included: `validateResourceName` checks these first)
_STANDARD_RESOURCES = frozenset(
    (
        *_STANDARD_CONTAINER_RESOURCES,
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    )
)


def pod_spec_causes(spec: dict[str, Any], *, creating: bool) -> list[Cause]:
    """`ValidatePodSpec`'s order: volumes, containers, init containers, hostNetwork ports,
    nodeSelector, security context, affinity, tolerations."""
    volumes, causes = volume_causes(spec.get("volumes"))
    images = mountvalidation.image_volumes(spec.get("volumes"))
    grace = spec.get("terminationGracePeriodSeconds")
    grace = grace if isinstance(grace, int) and not isinstance(grace, bool) else None
    users = securitycontextvalidation.host_users(spec)
    containers = spec.get("containers")
    if not containers:
        causes.append(required("spec.containers"))
    names: set[str] = set()
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        path = f"spec.containers[{i}]"
        if not isinstance(c, dict):
            causes.append(Cause("FieldValueTypeInvalid", "Invalid value: must be an object", path))
            continue
        causes += container_causes(c, path, (volumes, images), creating=creating, users=users)
        name = c.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
        causes += probevalidation.container_causes(c, path, grace)
    causes += portvalidation.host_port_conflicts(dicts(containers), "spec.containers")
    for i, c in dicts(spec.get("initContainers")):
        path = f"spec.initContainers[{i}]"
        causes += container_causes(c, path, (volumes, images), creating=creating, users=users)
        causes += probevalidation.init_restart_policy_causes(c, path)
        name = c.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        elif name:
            names.add(name)
        causes += portvalidation.host_port_conflicts([(i, c)], "spec.initContainers")
        causes += probevalidation.init_container_causes(c, path, grace)
    if spec.get("hostNetwork") is True:
        causes += portvalidation.host_network_port_causes(spec)
    causes += affinityvalidation.label_causes(spec.get("nodeSelector"), "spec.nodeSelector")
    causes += securitycontextvalidation.pod_causes(spec)
    causes += affinityvalidation.affinity_causes(spec)
    return causes + tolerationvalidation.toleration_causes(spec.get("tolerations"))


def volume_causes(volumes: Any) -> tuple[set[str], list[Cause]]:
    """`ValidateVolumes`: the names of the pod's valid volumes, and what is wrong with the rest."""
    valid: set[str] = set()
    causes: list[Cause] = []
    for i, vol in dicts(volumes):
        path, name = f"spec.volumes[{i}]", vol.get("name") or ""
        errors = _volume_source_causes(vol, path)
        if not name:
            errors.append(required(f"{path}.name"))
        else:
            errors += [invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name)]
        if name in valid:
            errors.append(duplicate(f"{path}.name", name))
        if errors:
            causes += errors
        else:
            valid.add(name)
    return valid, causes


def _volume_source_causes(vol: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    count = 0
    for key, child in VOLUME_SOURCES:
        source = vol.get(key)
        if source is None:
            continue
        if count and key != "emptyDir":
            causes.append(Cause("FieldValueForbidden", MORE_THAN_ONE, f"{path}.{child}"))
            continue
        count += 1
        needed = _SOURCE_NAME.get(key)
        if needed and not (isinstance(source, dict) and source.get(needed)):
            causes.append(required(f"{path}.{key}.{needed}"))
    if count == 0:
        causes.append(required(path, "must specify a volume type"))
    return causes


def container_causes(
    c: dict[str, Any],
    path: str,
    volumes: tuple[set[str], set[str]],
    *,
    creating: bool,
    users: bool = True,
) -> list[Cause]:
    """`validateContainerCommon`: name, image, ports, env, envFrom, volume mounts, resources,
    security context. `volumes`: the names of the pod's valid volumes, and of its image ones."""
    causes: list[Cause] = []
    name = c.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    elif isinstance(name, str):
        causes += [invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name)]
    if not c.get("image") and creating:
        causes.append(required(f"{path}.image"))
    causes += portvalidation.port_causes(c.get("ports"), f"{path}.ports")
    causes += envvalidation.env_causes(c.get("env"), f"{path}.env")
    causes += envvalidation.env_from_causes(c.get("envFrom"), f"{path}.envFrom")
    causes += mountvalidation.mount_causes(c.get("volumeMounts"), f"{path}.volumeMounts", *volumes)
    causes += resource_causes(c.get("resources"), f"{path}.resources")
    return causes + securitycontextvalidation.container_causes(
        c.get("securityContext"), f"{path}.securityContext", users=users
    )


def _quantity(value: Any) -> Fraction | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None  # refused when the body is decoded (builtinschema), not here


def _overcommitable(name: str) -> bool:
    """core helper `IsOvercommitAllowed`: native (no domain, or kubernetes.io) and no hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _resource_name_causes(name: str, path: str) -> list[Cause]:
    """`validateContainerResourceName` after `validateResourceName`."""
    causes = [invalid(path, name, p) for p in qualified_name_problems(name)]
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith(("hugepages-", "requests.hugepages-")):
            causes.append(invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            causes.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _overcommitable(name) and name.startswith("requests."):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def _quantity_value_causes(name: str, raw: Any, path: str) -> list[Cause]:
    """`ValidateResourceQuantityValue`: not negative; whole numbers for extended resources."""
    value = _quantity(raw)
    if value is None:
        return []
    text = format_quantity(value, binary=is_binary(raw))
    if value < 0:
        return [invalid(path, text, "must be greater than or equal to 0")]
    if not _overcommitable(name) and not name.startswith("hugepages-") and value.denominator != 1:
        # upstream prints this value as a Go struct (`%#v` of a resource.Quantity); devcluster
        # shows the quantity: the reason, path and message are upstream's
        return [invalid(path, text, "must be an integer")]
    return []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def resource_causes(resources: Any, path: str) -> list[Cause]:
    if not isinstance(resources, dict):
        return []
    limits = _mapping(resources.get("limits"))
    requests = _mapping(resources.get("requests"))
    causes: list[Cause] = []
    for name, raw in limits.items():
        causes += _resource_name_causes(name, f"{path}.limits[{name}]")
        causes += _quantity_value_causes(name, raw, f"{path}.limits[{name}]")
    for name, raw in requests.items():
        at = f"{path}.requests[{name}]"
        causes += _resource_name_causes(name, at) + _quantity_value_causes(name, raw, at)
        request = _quantity(raw)
        if name not in limits:
            if not _overcommitable(name):
                causes.append(required(f"{path}.limits", NO_LIMIT))
            continue
        limit = _quantity(limits[name])
        if request is None or limit is None:
            continue
        text = format_quantity(request, binary=is_binary(raw))
        limit_shown = format_quantity(limit, binary=is_binary(limits[name]))
        if request != limit and not _overcommitable(name):
            message = f"must be equal to {name} limit of {limit_shown}"
            causes.append(invalid(f"{path}.requests", text, message))
        elif request > limit:
            message = f"must be less than or equal to {name} limit of {limit_shown}"
            causes.append(invalid(f"{path}.requests", text, message))
    return causes


def default_requests_from_limits(container: dict[str, Any]) -> None:
    """v1 `SetDefaults_Pod`: a resource with a limit and no request gets the limit as request."""
    resources = container.get("resources")
    limits = resources.get("limits") if isinstance(resources, dict) else None
    if not isinstance(limits, dict) or not limits:
        return
    requests = resources.setdefault("requests", {})  # type: ignore[union-attr]
    if isinstance(requests, dict):
        for name, value in limits.items():
            requests.setdefault(name, value)
