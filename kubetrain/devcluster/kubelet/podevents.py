"""The Events a kubelet records about a pod's containers, read off the status change it writes.
Pure: `container_events(old, new)` compares the pod before and after a status write of the
simulated kubelet and says what a kubelet would have recorded on the way.

Reasons, types and messages are the kubelet's (pkg/kubelet/events/event.go; the call sites in
kuberuntime_container.go `startContainer`/`killContainer`, images/image_manager.go
`EnsureImageExists`, kuberuntime_manager.go `doBackOff`), as of the 1.36 kubelet; each is about
the container (`involvedObject.fieldPath` `spec.containers{name}` or `spec.initContainers{name}`,
`kubecontainer.GenerateContainerRef`):

- a container that starts (running, or an init container that ran to its end, where it was not
  before — a restart counts again): `Pulled` "Container image "IMG" already present on machine and
  can be accessed by the pod" (`imagePullPolicy` IfNotPresent or Never), or — `Always` — `Pulling`
  "Pulling image "IMG"" then `Pulled` "Successfully pulled image "IMG" in 0s (0s including
  waiting). Image size: 0 bytes." (the simulated nodes pull in no time, and have no image
  sizes); then `Created` "Container created" and `Started` "Container started";
- `ErrImagePull`: `Pulling`, Warning `Failed` "Failed to pull image "IMG": <error>", Warning
  `Failed` "Error: ErrImagePull"; `ImagePullBackOff`: `BackOff` "Back-off pulling image "IMG""
  (Normal, as the image manager records it), Warning `Failed` "Error: ImagePullBackOff";
  `ErrImageNeverPull`: Warning `ErrImageNeverPull` with the kubelet's message, Warning `Failed`
  "Error: ErrImageNeverPull"; `InvalidImageName`: Warning `InspectFailed` with its message,
  Warning `Failed` "Error: InvalidImageName";
- `CreateContainerConfigError` (an env reference it cannot resolve): the image is present
  (`Pulled`), then Warning `Failed` "Error: <message>", as `generateContainerConfig` fails;
- `CrashLoopBackOff`: Warning `BackOff` "Back-off restarting failed container NAME in pod
  POD_NAMESPACE(UID)" (`format.Pod`);
- a running container the kubelet stops because the pod is being deleted: `Killing` "Stopping
  container NAME".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

NORMAL, WARNING = "Normal", "Warning"
_SPEC_KEYS = (("initContainers", "initContainerStatuses"), ("containers", "containerStatuses"))


@dataclass(frozen=True)
class PodEvent:
    """One Event about a pod: `field_path` names the container it is about ("" for the pod)."""

    type: str
    reason: str
    message: str
    field_path: str = ""


def pull_policy(container: Obj) -> str:
    """The container's imagePullPolicy, defaulted as the API server does (`SetDefaults_Container`:
    Always for a `:latest` or untagged image, else IfNotPresent)."""
    policy = container.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(container.get("image") or "").split("@", 1)[0]
    tag = image.rpartition("/")[2].partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def image_events(container: Obj, field_path: str) -> list[PodEvent]:
    """What the image manager records for an image the node has (`EnsureImageExists`)."""
    image = str(container.get("image") or "")
    if pull_policy(container) == "Always":
        return [
            PodEvent(NORMAL, "Pulling", f'Pulling image "{image}"', field_path),
            PodEvent(
                NORMAL,
                "Pulled",
                f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: 0 bytes.',
                field_path,
            ),
        ]
    message = f'Container image "{image}" already present on machine and can be accessed by the pod'
    return [PodEvent(NORMAL, "Pulled", message, field_path)]


def started_events(container: Obj, field_path: str) -> list[PodEvent]:
    """A container started: its image, then `Created` and `Started` (`startContainer`)."""
    return [
        *image_events(container, field_path),
        PodEvent(NORMAL, "Created", "Container created", field_path),
        PodEvent(NORMAL, "Started", "Container started", field_path),
    ]


def waiting_events(pod: Obj, container: Obj, field_path: str, reason: str, message: str) -> list[PodEvent]:
    """What the kubelet recorded before leaving the container waiting with `reason`."""
    image, name = str(container.get("image") or ""), str(container.get("name") or "")
    if reason == "ErrImagePull":
        return [
            PodEvent(NORMAL, "Pulling", f'Pulling image "{image}"', field_path),
            PodEvent(WARNING, "Failed", f'Failed to pull image "{image}": {message}', field_path),
            PodEvent(WARNING, "Failed", "Error: ErrImagePull", field_path),
        ]
    if reason == "ImagePullBackOff":
        return [
            PodEvent(NORMAL, "BackOff", f'Back-off pulling image "{image}"', field_path),
            PodEvent(WARNING, "Failed", "Error: ImagePullBackOff", field_path),
        ]
    if reason == "ErrImageNeverPull":
        return [
            PodEvent(WARNING, "ErrImageNeverPull", message, field_path),
            PodEvent(WARNING, "Failed", "Error: ErrImageNeverPull", field_path),
        ]
    if reason == "InvalidImageName":
        return [
            PodEvent(WARNING, "InspectFailed", message, field_path),
            PodEvent(WARNING, "Failed", "Error: InvalidImageName", field_path),
        ]
    if reason == "CreateContainerConfigError":
        failed = PodEvent(WARNING, "Failed", f"Error: {message}", field_path)
        return [*image_events(container, field_path), failed]
    if reason == "CrashLoopBackOff":
        meta = pod.get("metadata") or {}
        where = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
        text = f"Back-off restarting failed container {name} in pod {where}"
        return [PodEvent(WARNING, "BackOff", text, field_path)]
    return []


def container_events(old: Obj, new: Obj) -> list[PodEvent]:
    """The Events of the kubelet's status change from `old` to `new` (the same pod), in order."""
    events: list[PodEvent] = []
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
    for container, field_path, before, after in _pairs(old, new):
        events.extend(_changed(new, container, field_path, before, after, deleting))
    return events


def _changed(
    pod: Obj, container: Obj, field_path: str, before: Obj, after: Obj, deleting: bool
) -> list[PodEvent]:
    state, was = after.get("state") or {}, before.get("state") or {}
    restarted = int(after.get("restartCount") or 0) != int(before.get("restartCount") or 0)
    if "running" in state and ("running" not in was or restarted):
        return started_events(container, field_path)
    if "terminated" in state:
        if "running" in was and not restarted:
            name = str(container.get("name") or "")
            return [PodEvent(NORMAL, "Killing", f"Stopping container {name}", field_path)] if deleting else []
        if field_path.startswith("spec.initContainers") and "terminated" not in was:
            return started_events(container, field_path)  # it ran from start to end between two writes
        return []
    waiting = state.get("waiting")
    if not isinstance(waiting, dict):
        return []
    reason, message = str(waiting.get("reason") or ""), str(waiting.get("message") or "")
    old_waiting = was.get("waiting")
    old_waiting = old_waiting if isinstance(old_waiting, dict) else {}
    if not restarted and (old_waiting.get("reason"), old_waiting.get("message") or "") == (reason, message):
        return []  # nothing new: said before
    return waiting_events(pod, container, field_path, reason, message)


def _pairs(old: Obj, new: Obj) -> Iterator[tuple[Obj, str, Obj, Obj]]:
    """(container spec, its fieldPath, its status before, after) for each container of `new`."""
    spec, status, old_status = new.get("spec") or {}, new.get("status") or {}, old.get("status") or {}
    for spec_key, status_key in _SPEC_KEYS:
        before = {str(s.get("name")): s for s in old_status.get(status_key) or [] if isinstance(s, dict)}
        after = {str(s.get("name")): s for s in status.get(status_key) or [] if isinstance(s, dict)}
        for container in spec.get(spec_key) or []:
            name = str(container.get("name") or "")
            if name in after:
                yield container, f"spec.{spec_key}{{{name}}}", before.get(name, {}), after[name]
