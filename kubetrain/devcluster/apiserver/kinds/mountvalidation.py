"""A container's volume mounts as kube-apiserver validates them (k8s.io/kubernetes
pkg/apis/core/validation `ValidateVolumeMounts`, `validateLocalDescendingPath`), with upstream's
causes.

- Each mount's name is required and names a (valid) volume of the pod (else `Not found`); its
  mountPath is required and unique in the container.
- An image volume takes no subPath or subPathExpr ("not allowed in image volume sources").
- subPath and subPathExpr are relative paths without a '..' element ("must be a relative path",
  "must not contain '..'"), reported — as upstream does — at `<container>.volumeMounts.subPath`
  / `.subPathExpr`, without the mount's index; subPathExpr beside subPath is Invalid
  ("subPathExpr and subPath are mutually exclusive") at the mount's own `.subPathExpr`.

Not validated: mountPropagation, recursiveReadOnly, volumeDevices.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.fielderrors import dicts, invalid, not_found, required

IMAGE_SOURCE = "not allowed in image volume sources"


def image_volumes(volumes: Any) -> set[str]:
    """The names of the pod's `image` volumes."""
    return {
        v["name"] for _, v in dicts(volumes) if v.get("image") is not None and isinstance(v.get("name"), str)
    }


def local_descending_path_causes(target: str, path: str) -> list[Cause]:
    """`validateLocalDescendingPath`: relative, and no '..' element (one cause however many)."""
    causes = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    if ".." in target.split("/"):  # filepath.ToSlash: a no-op on Linux
        causes.append(invalid(path, target, "must not contain '..'"))
    return causes


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def mount_causes(
    mounts: Any, path: str, volumes: AbstractSet[str], images: AbstractSet[str] = frozenset()
) -> list[Cause]:
    """`ValidateVolumeMounts`: each mount names a (valid) volume of the pod, at a unique path."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, mount in dicts(mounts):
        at, name = f"{path}[{i}]", _text(mount.get("name"))
        if not name:
            causes.append(required(f"{at}.name"))
        if name not in volumes:
            causes.append(not_found(f"{at}.name", name))
        mount_path = _text(mount.get("mountPath"))
        if not mount_path:
            causes.append(required(f"{at}.mountPath"))
        if mount_path in seen:
            causes.append(invalid(f"{at}.mountPath", mount_path, "must be unique"))
        seen.add(mount_path)
        sub_path, expr = _text(mount.get("subPath")), _text(mount.get("subPathExpr"))
        if name in images and name in volumes:
            if sub_path:
                causes.append(invalid(f"{at}.subPath", sub_path, IMAGE_SOURCE))
            if expr:
                causes.append(invalid(f"{at}.subPathExpr", expr, IMAGE_SOURCE))
        if sub_path:
            causes += local_descending_path_causes(sub_path, f"{path}.subPath")
        if expr:
            if sub_path:
                message = "subPathExpr and subPath are mutually exclusive"
                causes.append(invalid(f"{at}.subPathExpr", expr, message))
            causes += local_descending_path_causes(expr, f"{path}.subPathExpr")
    return causes
