"""What the simulated kubelet mounts: projected volumes, as the kubelet's projected volume plugin
fills them before it starts a pod's containers.

- `serviceAccountToken` sources: a TokenRequest (`POST serviceaccounts/<pod's account>/token`)
  with the source's `audience` (the API server's when empty), `expirationSeconds` (default 3600)
  and `boundObjectRef` the pod (name and uid) — the token is bound to this pod, so it stops
  authenticating when the pod is gone; the kubelet refreshes it once 80 % of its lifetime has
  passed (`refresh_due`);
- `configMap` / `secret` sources: the listed `items` (or every key) of the object; a missing
  object that is not `optional` fails the mount (the pod stays Pending and the mount is retried,
  as a kubelet reports FailedMount);
- `downwardAPI` sources are not simulated.

`mount(api, pod)` returns the files of every projected volume (`{volume: {path: content}}`);
`container_files(pod, volumes, container)` maps them to absolute paths through the container's
volumeMounts — what a process in that container would read.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi

DEFAULT_TOKEN_SECONDS = 3600
REFRESH_FRACTION = 0.8


class MountError(Exception):
    """A projected volume could not be filled (a FailedMount)."""


@dataclass
class Mounted:
    files: dict[str, dict[str, str]]  # volume name -> path in the volume -> content
    refresh_at: float | None  # monotonic time when a token is due for refresh, None without tokens


def _projected(pod: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        projected = volume.get("projected")
        if isinstance(projected, dict):
            out.append((str(volume.get("name", "")), list(projected.get("sources") or [])))
    return out


def has_projected_volumes(pod: dict[str, Any]) -> bool:
    return bool(_projected(pod))


async def _token(api: RawApi, pod: dict[str, Any], source: dict[str, Any]) -> tuple[str, int]:
    md, spec = pod["metadata"], pod.get("spec") or {}
    account = spec.get("serviceAccountName") or "default"
    seconds = int(source.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
    body: dict[str, Any] = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]},
        },
    }
    if source.get("audience"):
        body["spec"]["audiences"] = [source["audience"]]
    path = f"/api/v1/namespaces/{md['namespace']}/serviceaccounts/{account}/token"
    status, answer = await api.request("POST", path, body=body)
    if status != 201:
        message = answer.get("message", "") if isinstance(answer, dict) else ""
        raise MountError(f"failed to fetch token: {status} {message}")
    return str(answer["status"]["token"]), int(answer["spec"].get("expirationSeconds", seconds))


async def _keys(api: RawApi, pod: dict[str, Any], kind: str, source: dict[str, Any]) -> dict[str, str]:
    namespace, name = pod["metadata"]["namespace"], str(source.get("name", ""))
    resource = "configmaps" if kind == "configMap" else "secrets"
    status, obj = await api.request("GET", f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    if status == 404 and source.get("optional"):
        return {}
    if status != 200:
        raise MountError(f'{kind} "{name}" not found' if status == 404 else f"{kind} {name}: {status}")
    data: dict[str, str] = dict(obj.get("data") or {})
    if kind == "secret":
        data = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in data.items()}
    items = source.get("items")
    if not items:
        return data
    out = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if source.get("optional"):
                continue
            raise MountError(f'{kind} "{name}": key "{key}" not found')
        out[str(item.get("path") or key)] = data[key]
    return out


async def mount(api: RawApi, pod: dict[str, Any], now: float) -> Mounted:
    files: dict[str, dict[str, str]] = {}
    refresh_at: float | None = None
    try:
        for volume, sources in _projected(pod):
            content: dict[str, str] = {}
            for source in sources:
                token_source = source.get("serviceAccountToken")
                if isinstance(token_source, dict):
                    token, seconds = await _token(api, pod, token_source)
                    content[str(token_source.get("path", "token"))] = token
                    due = now + seconds * REFRESH_FRACTION
                    refresh_at = due if refresh_at is None else min(refresh_at, due)
                for kind in ("configMap", "secret"):
                    if isinstance(source.get(kind), dict):
                        content.update(await _keys(api, pod, kind, source[kind]))
            files[volume] = content
    except ApiError as exc:
        raise MountError(str(exc)) from exc
    return Mounted(files, refresh_at)


def container_files(pod: dict[str, Any], mounted: Mounted, container: str | None = None) -> dict[str, str]:
    """The projected files a process in `container` (default: the first) sees, by absolute path."""
    containers = (pod.get("spec") or {}).get("containers") or []
    chosen = next((c for c in containers if container is None or c.get("name") == container), None)
    if chosen is None:
        raise KeyError(f"pod has no container {container!r}")
    out: dict[str, str] = {}
    for vm in chosen.get("volumeMounts") or []:
        volume = mounted.files.get(str(vm.get("name", "")))
        if volume is None:
            continue
        base = str(vm.get("mountPath", "")).rstrip("/")
        sub = str(vm.get("subPath") or "")
        for path, content in volume.items():
            if sub and path != sub:
                continue
            out[base if sub else f"{base}/{path}"] = content
    return out
