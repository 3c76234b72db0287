"""The simulated kubelet's images it cannot use (devcluster/kubelet/images.py): which references
it refuses and with what reason, and the Pending status it writes — init containers in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubetrain.devcluster.kubelet import images

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "image",
    [
        "busybox",
        "busybox:1.36",
        "docker.io/library/busybox:1.36",
        "localhost:5000/team/train:v1.2-rc_3",
        "ghcr.io/org/img@sha256:" + "a" * 64,
        "registry.example.com:443/a/b/c:latest",
        "Registry.Example.com/a/b:Tag1",
        "gcr.io/<your_project>/pytorch_dist_mnist:latest",  # not parsed fully: runs
    ],
)
def test_usable_images(image: str) -> None:
    assert images.failure({"name": "c", "image": image}) is None


@pytest.mark.parametrize(
    "image", ["Busybox", "busybox:", "bad image", "", "ghcr.io/UPPER/x:1", "Example.com/Bad_Image:1"]
)
def test_invalid_references(image: str) -> None:
    found = images.failure({"name": "c", "image": image})
    assert found is not None and found[0] == "InvalidImageName" and "invalid reference format" in found[1]


def test_an_invalid_registry_never_pulls() -> None:
    reason, message = images.failure({"name": "c", "image": "registry.invalid/train:1"}) or ("", "")
    assert reason == "ErrImagePull" and "lookup registry.invalid: no such host" in message
    never = {"name": "c", "image": "registry.invalid/train:1", "imagePullPolicy": "Never"}
    assert (images.failure(never) or ("",))[0] == "ErrImageNeverPull"
    assert images.failure({"name": "c", "image": "invalid/train:1"}) is None  # a Docker Hub repository


def pod(init_images: list[str], images_: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "uid": "u"},
        "spec": {
            "nodeName": "n",
            "initContainers": [{"name": f"i{k}", "image": im} for k, im in enumerate(init_images)],
            "containers": [{"name": f"c{k}", "image": im} for k, im in enumerate(images_)],
        },
        "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}]},
    }


def test_an_init_container_that_cannot_start_holds_the_rest() -> None:
    status = images.blocked_status(
        pod(["ok:1", "registry.invalid/x", "ok:2"], ["ok:3"]),
        host_ip="h",
        pod_ip="p",
        now=NOW,
        back_off=False,
    )
    assert status is not None and status["phase"] == "Pending"
    states = [next(iter(s["state"].items())) for s in status["initContainerStatuses"]]
    assert states[0][0] == "terminated" and states[0][1]["exitCode"] == 0
    assert states[1] == ("waiting", {"reason": "ErrImagePull", "message": states[1][1]["message"]})
    assert states[2] == ("waiting", {"reason": "PodInitializing"})
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    scheduled = next(c for c in status["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["lastTransitionTime"] == "t0"  # kept: the start deadline counts from it
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert initialized["status"] == "False"


def test_an_app_container_backs_off_pulling() -> None:
    status = images.blocked_status(
        pod([], ["registry.invalid/x:1", "ok:1"]), host_ip="h", pod_ip="p", now=NOW, back_off=True
    )
    assert status is not None
    first, second = status["containerStatuses"]
    assert first["state"]["waiting"] == {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "registry.invalid/x:1"',
    }
    assert second["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert images.blocked_status(pod([], ["ok:1"]), host_ip="h", pod_ip="p", now=NOW, back_off=False) is None
