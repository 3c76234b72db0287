"""The simulated kubelet's per-pod decisions (devcluster/kubelet/lifecycle.py): binding only what
its scheduler names serve and no gated pod, finishing deletions only on its own nodes, leaving
ended pods alone, and a Pending pod's order — a backing-off init container, then an image it
cannot use, then the start — with the pod's annotated behaviour."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.kubelet import behaviour
from kubetrain.devcluster.kubelet.lifecycle import Step, next_step

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
SCHEDULERS = ("default-scheduler",)


def pod(phase: str = "Pending", node: str | None = "node-0", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": {}},
        "spec": {
            "containers": [{"name": "c", "image": "trainer:1"}],
            **({"nodeName": node} if node else {}),
            **spec,
        },
        "status": {"phase": phase},
    }


def step(p: dict[str, Any], *, ours: bool = True, schedulers: tuple[str, ...] = SCHEDULERS) -> Step:
    return next_step(p, ours=ours, scheduler_names=schedulers, default_run_seconds=None)


def test_an_unscheduled_pod_is_bound_only_by_a_scheduler_it_serves_and_without_gates() -> None:
    assert step(pod(node=None)).action == "bind"
    assert step(pod(node=None, schedulerName="volcano")).action == "idle"
    assert step(pod(node=None), schedulers=()).action == "idle"  # a cluster with its own scheduler
    assert step(pod(node=None, schedulingGates=[{"name": "kueue"}])).action == "idle"


def test_a_deleted_pod_is_finished_on_its_own_nodes_only() -> None:
    deleting = pod("Running")
    deleting["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    assert step(deleting).action == "finish-deletion"
    assert step(deleting, ours=False).action == "idle"


def test_another_nodes_pod_or_an_ended_one_only_stops_its_timers() -> None:
    assert step(pod("Running"), ours=False).action == "stop"
    assert step(pod("Succeeded")).action == "stop" and step(pod("Failed")).action == "stop"


def test_a_pending_pod_backs_off_its_init_container_then_checks_its_images_then_starts() -> None:
    failed_at = T0.strftime("%Y-%m-%dT%H:%M:%SZ")
    backing_off = pod(initContainers=[{"name": "init", "image": "registry.invalid/x:1"}])
    backing_off["status"]["initContainerStatuses"] = [
        {
            "name": "init",
            "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": failed_at}},
        }
    ]
    retry = step(backing_off)
    assert retry.action == "init-retry" and retry.uid == "u1"
    assert retry.init_retry is not None and retry.init_retry[0] == 1 and retry.init_retry[1] > T0
    unpullable = pod(containers=[{"name": "c", "image": "registry.invalid/train:1"}])
    assert step(unpullable).action == "image"
    started = step(pod())
    assert (started.action, started.uid, started.behaviour, started.problem) == (
        "start",
        "u1",
        behaviour.Behaviour(),
        None,
    )


def test_a_running_pod_runs_with_its_annotated_behaviour_or_none_if_malformed() -> None:
    annotated = pod("Running")
    annotated["metadata"]["annotations"] = {behaviour.RUN_SECONDS: "30", behaviour.START_SECONDS: "2"}
    run = step(annotated)
    assert run.action == "run" and run.behaviour.run_seconds == 30 and run.behaviour.start_seconds == 2
    defaulted = next_step(pod("Running"), ours=True, scheduler_names=SCHEDULERS, default_run_seconds=5)
    assert defaulted.behaviour.run_seconds == 5  # `kubetrain dev`'s default run
    annotated["metadata"]["annotations"][behaviour.EXIT_CODE] = "300"
    bad = step(annotated)
    assert bad.action == "run" and bad.behaviour == behaviour.Behaviour()
    assert bad.problem is not None and behaviour.EXIT_CODE in bad.problem
