"""A container's env references the simulated kubelet cannot resolve, as the kubelet resolves
them when it creates the container: a `configMapKeyRef`/`secretKeyRef` or an `envFrom`
`configMapRef`/`secretRef` to an object (or a key) that does not exist and is not `optional`
makes the container wait with `CreateContainerConfigError` and the kubelet's message
(`configmap "cfg" not found`, `couldn't find key K in ConfigMap ns/cfg`); the pod stays Pending
and the kubelet tries again (`RETRY_SECONDS`), so creating the object lets it start.
Init containers are looked at first, in order (`images.first_failure`'s order).
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.client import RawApi

REASON = "CreateContainerConfigError"
RETRY_SECONDS = 10.0
KINDS = {
    "configMapKeyRef": "ConfigMap",
    "secretKeyRef": "Secret",
    "configMapRef": "ConfigMap",
    "secretRef": "Secret",
}
Found = tuple[bool, str, tuple[str, str]]  # (init?, container, (reason, message))


async def _data(api: RawApi, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    resource = "configmaps" if kind == "ConfigMap" else "secrets"
    status, obj = await api.request("GET", f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    if status == 404:
        return None
    if status != 200:
        raise RuntimeError(f"GET {resource}/{name}: {status}")
    return {**(obj.get("data") or {}), **(obj.get("binaryData") or {})}


async def _problem(api: RawApi, namespace: str, container: dict[str, Any]) -> str | None:
    for env in container.get("env") or []:
        source = (env.get("valueFrom") or {}) if isinstance(env, dict) else {}
        for field in ("configMapKeyRef", "secretKeyRef"):
            ref = source.get(field)
            if not isinstance(ref, dict) or ref.get("optional"):
                continue
            kind, name, key = KINDS[field], str(ref.get("name") or ""), str(ref.get("key") or "")
            data = await _data(api, namespace, kind, name)
            if data is None:
                return f'{kind.lower()} "{name}" not found'
            if key not in data:
                return f"couldn't find key {key} in {kind} {namespace}/{name}"
    for env_from in container.get("envFrom") or []:
        for field in ("configMapRef", "secretRef"):
            ref = env_from.get(field) if isinstance(env_from, dict) else None
            if not isinstance(ref, dict) or ref.get("optional"):
                continue
            kind, name = KINDS[field], str(ref.get("name") or "")
            if await _data(api, namespace, kind, name) is None:
                return f'{kind.lower()} "{name}" not found'
    return None


async def config_error(api: RawApi, pod: dict[str, Any]) -> Found | None:
    """The first container (init containers first) whose env cannot be resolved, or None."""
    namespace = str(pod["metadata"].get("namespace", ""))
    spec = pod.get("spec") or {}
    for key, init in (("initContainers", True), ("containers", False)):
        for container in spec.get(key) or []:
            message = await _problem(api, namespace, container)
            if message is not None:
                return init, str(container["name"]), (REASON, message)
    return None
