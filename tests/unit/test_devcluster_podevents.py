"""The kubelet's Events read off a status change (devcluster/kubelet/podevents.py): which Events a
container's start, restart, pull and config failures, back-off and stop give, with the kubelet's
texts, and that a status write saying nothing new gives none."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.kubelet.podevents import PodEvent, container_events, pull_policy

Obj = dict[str, Any]
PATH = "spec.containers{main}"
PRESENT = 'Container image "trainer:1" already present on machine and can be accessed by the pod'


def pod(state: Obj | None, *, restarts: int = 0, image: str = "trainer:1", **container: Any) -> Obj:
    spec = {"containers": [{"name": "main", "image": image, **container}], "nodeName": "n0"}
    statuses = [] if state is None else [{"name": "main", "restartCount": restarts, "state": state}]
    meta = {"name": "p", "namespace": "ns", "uid": "u-1"}
    return {"metadata": meta, "spec": spec, "status": {"containerStatuses": statuses}}


def waiting(reason: str, message: str = "") -> Obj:
    return {"waiting": {"reason": reason, **({"message": message} if message else {})}}


RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


def said(old: Obj, new: Obj) -> list[tuple[str, str, str]]:
    events = container_events(old, new)
    assert all(e.field_path == PATH for e in events)
    return [(e.type, e.reason, e.message) for e in events]


def test_a_started_container_is_pulled_created_and_started_once() -> None:
    before = pod(waiting("ContainerCreating"))
    after = pod(RUNNING)
    assert said(before, after) == [
        ("Normal", "Pulled", PRESENT),
        ("Normal", "Created", "Container created"),
        ("Normal", "Started", "Container started"),
    ]
    assert said(pod(None), after) == said(before, after)  # no status before: the same start
    assert container_events(after, copy.deepcopy(after)) == []  # a later write: nothing new


def test_an_always_pulled_image_is_pulled_first() -> None:
    assert pull_policy({"image": "trainer"}) == pull_policy({"image": "r.io/t:latest"}) == "Always"
    assert pull_policy({"image": "localhost:5000/t:2"}) == "IfNotPresent"
    assert pull_policy({"image": "t:2", "imagePullPolicy": "Always"}) == "Always"
    assert said(pod(None, image="trainer"), pod(RUNNING, image="trainer"))[:2] == [
        ("Normal", "Pulling", 'Pulling image "trainer"'),
        (
            "Normal",
            "Pulled",
            'Successfully pulled image "trainer" in 0s (0s including waiting). Image size: 0 bytes.',
        ),
    ]


def test_a_restart_starts_again_and_a_back_off_says_which_container_of_which_pod() -> None:
    running = pod(RUNNING, restarts=1)
    again = pod(RUNNING, restarts=2)
    assert [r for _, r, _ in said(running, again)] == ["Pulled", "Created", "Started"]
    back_off = pod(waiting("CrashLoopBackOff", "back-off 10s restarting failed container=main"), restarts=1)
    assert said(running, back_off) == [
        ("Warning", "BackOff", "Back-off restarting failed container main in pod p_ns(u-1)")
    ]
    assert [r for _, r, _ in said(back_off, again)] == ["Pulled", "Created", "Started"]


def test_an_image_pull_failure_then_its_back_off() -> None:
    image = "registry.invalid/t:1"
    error = "dial tcp: lookup registry.invalid: no such host"
    pulling = pod(waiting("ErrImagePull", error), image=image)
    assert said(pod(waiting("ContainerCreating"), image=image), pulling) == [
        ("Normal", "Pulling", f'Pulling image "{image}"'),
        ("Warning", "Failed", f'Failed to pull image "{image}": {error}'),
        ("Warning", "Failed", "Error: ErrImagePull"),
    ]
    backing_off = pod(waiting("ImagePullBackOff", f'Back-off pulling image "{image}"'), image=image)
    assert said(pulling, backing_off) == [
        ("Normal", "BackOff", f'Back-off pulling image "{image}"'),
        ("Warning", "Failed", "Error: ImagePullBackOff"),
    ]
    assert said(backing_off, copy.deepcopy(backing_off)) == []


def test_never_pull_invalid_names_and_config_errors_have_their_own_reasons() -> None:
    absent = 'Container image "t:1" is not present with pull policy of Never'
    never = pod(waiting("ErrImageNeverPull", absent))
    assert said(pod(None), never) == [
        ("Warning", "ErrImageNeverPull", absent),
        ("Warning", "Failed", "Error: ErrImageNeverPull"),
    ]
    invalid = pod(waiting("InvalidImageName", "couldn't parse image name"))
    assert [r for _, r, _ in said(pod(None), invalid)] == ["InspectFailed", "Failed"]
    config = pod(waiting("CreateContainerConfigError", 'configmap "cfg" not found'))
    assert said(pod(None), config) == [
        ("Normal", "Pulled", PRESENT),
        ("Warning", "Failed", 'Error: configmap "cfg" not found'),
    ]
    other = pod(waiting("CreateContainerConfigError", 'secret "s" not found'))
    assert [m for _, _, m in said(config, other)][-1] == 'Error: secret "s" not found'  # a new message


def test_a_running_container_stopped_for_a_deletion_is_killed_but_an_exit_is_not() -> None:
    terminated = pod({"terminated": {"exitCode": 143, "reason": "Error"}})
    assert said(pod(RUNNING), terminated) == []  # it exited on its own
    deleting = copy.deepcopy(terminated)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert said(pod(RUNNING), deleting) == [("Normal", "Killing", "Stopping container main")]


def test_an_init_container_that_ran_between_two_writes_was_started() -> None:
    before = pod(None)
    after = copy.deepcopy(before)
    after["spec"]["initContainers"] = [{"name": "sync", "image": "alpine/git:2"}]
    after["status"]["initContainerStatuses"] = [
        {"name": "sync", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}
    ]
    events = container_events(before, after)
    assert events == [
        PodEvent(
            "Normal",
            "Pulled",
            'Container image "alpine/git:2" already present on machine and can be accessed by the pod',
            "spec.initContainers{sync}",
        ),
        PodEvent("Normal", "Created", "Container created", "spec.initContainers{sync}"),
        PodEvent("Normal", "Started", "Container started", "spec.initContainers{sync}"),
    ]
