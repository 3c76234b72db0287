"""Images the simulated kubelet cannot start a container from, and the Pending status it writes
then — as a kubelet does: the pod stays Pending, the container waits with the reason, and the
kubelet never gives up (only the pod's deletion, or its owner, ends it). Pure.

The simulated nodes have every image except:
- an image reference with an uppercase letter in its repository path, whitespace, or an empty
  tag or digest: `InvalidImageName`, as the kubelet's reference parsing says (the simulator
  does not parse references fully: other malformed ones, such as Kubeflow's examples'
  `gcr.io/<your_project>/…` placeholders, run);
- an image of a registry under the reserved top-level domain `.invalid` (RFC 2606: no such host
  exists anywhere, so a real kubelet fails the same way), e.g. `registry.invalid/train:1`:
  `ErrImagePull` at first, then `ImagePullBackOff` once the pull back-off begins (the simulator
  writes the back-off `PULL_BACK_OFF_SECONDS` later and leaves it there; a real kubelet keeps
  alternating between the two at every retry); with `imagePullPolicy: Never`,
  `ErrImageNeverPull` (the image is not on the node).
Init containers start in order: the first one that cannot start holds the pod's other
containers at `PodInitializing`; an app container that cannot start holds the others at
`ContainerCreating` (a real kubelet starts the others; the simulator starts none).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from kubetrain.devcluster.kubelet.podstatus import (
    _base_status,
    _condition,
    _containers,
    _init_terminated,
    _keep_transition,
    _not_started,
)

UNREACHABLE_TLD = ".invalid"
PULL_BACK_OFF_SECONDS = 10.0

_WHITESPACE = re.compile(r"\s")


Failure = tuple[str, str]  # (reason, message) of a container that cannot start
REASONS = frozenset({"InvalidImageName", "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull"})


def waiting_reasons(pod: dict[str, Any]) -> set[str]:
    """The reasons the pod's containers (init containers too) wait with, as its status says."""
    status = pod.get("status") or {}
    return {
        str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "")
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in status.get(key) or []
    }


def waiting_with(pod: dict[str, Any], container: str) -> tuple[str, str] | None:
    """(reason, message) `container` (or init container) of `pod` waits with, as its status says."""
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            waiting = (cs.get("state") or {}).get("waiting")
            if cs.get("name") == container and isinstance(waiting, dict):
                return str(waiting.get("reason") or ""), str(waiting.get("message") or "")
    return None


def invalid_reference(image: str) -> bool:
    """The mistakes the kubelet's reference parsing refuses that the simulator looks for: an
    uppercase letter in the repository path (a registry host may have one), whitespace, an
    empty reference, tag or digest. Not a full parse: other malformed references run."""
    if not image or _WHITESPACE.search(image) or image.endswith((":", "@")):
        return True
    path = image.partition("/")[2] if registry_host(image) is not None else image
    path = path.split("@", 1)[0]  # the digest
    head, _, last = path.rpartition("/")
    repository = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    return repository != repository.lower()


def registry_host(image: str) -> str | None:
    """The registry an image reference names (None: the default registry)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.split(":", 1)[0]
    return None


def failure(container: dict[str, Any]) -> Failure | None:
    """Why the kubelet cannot start `container` from its image; None when it can."""
    image = str(container.get("image") or "")
    if invalid_reference(image):
        return (
            "InvalidImageName",
            f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": '
            "invalid reference format",
        )
    host = registry_host(image)
    if host is None or not host.lower().endswith(UNREACHABLE_TLD):
        return None
    if container.get("imagePullPolicy") == "Never":
        return "ErrImageNeverPull", f'Container image "{image}" is not present with pull policy of Never'
    return (
        "ErrImagePull",
        f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": '
        f"failed to do request: dial tcp: lookup {host}: no such host",
    )


def first_failure(pod: dict[str, Any]) -> tuple[bool, str, Failure] | None:
    """The first container the kubelet cannot start: (init?, name, failure) — an init container
    stops the pod before its app containers; None when every image can be used."""
    for c in _containers(pod, "initContainers"):
        found = failure(c)
        if found is not None:
            return True, c["name"], found
    for c in _containers(pod):
        found = failure(c)
        if found is not None:
            return False, c["name"], found
    return None


def blocked_status(
    pod: dict[str, Any],
    *,
    host_ip: str,
    pod_ip: str,
    now: datetime,
    back_off: bool,
    found: tuple[bool, str, Failure] | None = None,
) -> dict[str, Any] | None:
    """The Pending status of a pod with a container that cannot start: `found` (init?, name,
    (reason, message)), else the first whose image it cannot use (None: none can't).
    `back_off`: the pull is backing off (`ImagePullBackOff`)."""
    found = found or first_failure(pod)
    if found is None:
        return None
    init, name, (reason, message) = found
    image = ""
    for c in _containers(pod, "initContainers" if init else "containers"):
        if c["name"] == name:
            image = str(c.get("image") or "")
    if back_off and reason == "ErrImagePull":
        reason, message = "ImagePullBackOff", f'Back-off pulling image "{image}"'
    held = "PodInitializing" if init else "ContainerCreating"
    reached = False
    inits = []
    for c in _containers(pod, "initContainers"):
        if init and c["name"] == name:
            reached = True
            inits.append(_waiting(c, reason, message))
        elif reached:
            inits.append(_waiting(c, "PodInitializing"))
        else:
            entry = _waiting(c, "")
            entry.update(ready=True, state={"terminated": _init_terminated(pod, c["name"], 0, "", now)})
            inits.append(entry)
    apps = [
        _waiting(c, reason, message) if not init and c["name"] == name else _waiting(c, held)
        for c in _containers(pod)
    ]
    conditions = [
        _condition("PodReadyToStartContainers", True, now),
        _condition("Initialized", not init, now, "ContainersNotInitialized" if init else None),
        _condition("Ready", False, now, "ContainersNotReady"),
        _condition("ContainersReady", False, now, "ContainersNotReady"),
        _condition("PodScheduled", True, now),
    ]
    status = _base_status(pod, host_ip, pod_ip, now)
    status.update(
        phase="Pending",
        conditions=_keep_transition(conditions, (pod.get("status") or {}).get("conditions") or []),
        containerStatuses=apps,
    )
    if inits:
        status["initContainerStatuses"] = inits
    return status


def _waiting(container: dict[str, Any], reason: str, message: str = "") -> dict[str, Any]:
    waiting: dict[str, Any] = {"reason": reason}
    if message:
        waiting["message"] = message
    return _not_started(container, state={"waiting": waiting})
