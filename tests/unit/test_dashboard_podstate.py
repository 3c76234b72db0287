"""What the job page says a pod is doing: kubectl's STATUS word and why, from the pod's status."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dashboard.views import timeline
from kubetrain.dashboard.views.podhistory import life_from_pod
from kubetrain.dashboard.views.podstate import pod_state
from kubetrain.dashboard.views.podsummary import pod_table

BACK_OFF = "back-off 20s restarting failed container=pytorch pod=j-worker-0_ns(u1)"


def pod(
    name: str = "j-worker-0",
    *,
    phase: str = "Running",
    containers: tuple[dict[str, Any], ...] = (),
    conditions: tuple[dict[str, Any], ...] = (),
    deleting: bool = False,
    **status: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": "u-" + name, "creationTimestamp": "2026-01-01T00:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:10:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": "node-1", "containers": [{"name": "pytorch"}]},
        "status": {
            "phase": phase,
            "containerStatuses": list(containers),
            "conditions": list(conditions),
            **status,
        },
    }


def running(ready: bool = True) -> dict[str, Any]:
    return {
        "name": "pytorch",
        "ready": ready,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}},
    }


def crash_looping(restarts: int = 2) -> dict[str, Any]:
    return {
        "name": "pytorch",
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": BACK_OFF}},
        "lastState": {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": "2026-01-01T00:00:30Z",
                "finishedAt": "2026-01-01T00:00:40Z",
            }
        },
    }


def test_a_running_ready_pod_is_ok() -> None:
    state = pod_state(pod(containers=(running(),)))
    assert (state.word, state.why, state.ready, state.ok, state.tone) == ("Running", "", "1/1", True, "ok")


def test_a_crash_looping_pod_reads_crashloopbackoff_with_the_back_off_message_and_restarts() -> None:
    state = pod_state(pod(containers=(crash_looping(restarts=2),)))
    assert state.word == "CrashLoopBackOff"
    assert state.why == BACK_OFF
    assert (state.restarts, state.ready, state.ok, state.tone) == (2, "0/1", False, "bad")


@pytest.mark.parametrize(
    "reason", ["ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "ContainerCreating"]
)
def test_a_pending_pod_reads_its_containers_waiting_reason(reason: str) -> None:
    waiting = {"name": "pytorch", "ready": False, "state": {"waiting": {"reason": reason, "message": "m"}}}
    state = pod_state(pod(phase="Pending", containers=(waiting,)))
    assert (state.word, state.why, state.ok) == (reason, "m", False)
    assert state.tone == ("waiting" if reason == "ContainerCreating" else "bad")


def test_an_unschedulable_pod_says_why_from_its_podscheduled_condition() -> None:
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
    }
    state = pod_state(pod(phase="Pending", conditions=(cond,)))
    assert (state.word, state.why, state.tone) == ("Pending", cond["message"], "waiting")


def test_a_scheduling_gated_pod_reads_schedulinggated() -> None:
    cond = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    assert pod_state(pod(phase="Pending", conditions=(cond,))).word == "SchedulingGated"


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("EvictionByEvictionAPI", "evicted through the Eviction API (a node drain, or a user's eviction)"),
        ("DeletionByTaintManager", "evicted: its node has a NoExecute taint"),
        ("DeletionByPodGC", "deleted by the pod garbage collector: its node is gone"),
        ("PreemptionByScheduler", "preempted by the scheduler"),
        ("SomethingNew", "disrupted (SomethingNew)"),
    ],
)
def test_a_disrupted_pod_says_who_disrupted_it_rather_than_failed(reason: str, said: str) -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": "by the controller"}
    term = {"name": "pytorch", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}
    state = pod_state(pod(phase="Failed", containers=(term,), conditions=(cond,)))
    assert state.word == "Error"
    assert state.why.startswith(said) and state.why.endswith(": by the controller")
    assert not state.ok and state.tone == "bad"


def test_a_false_disruption_target_says_nothing() -> None:
    cond = {"type": "DisruptionTarget", "status": "False", "reason": "EvictionByEvictionAPI"}
    assert pod_state(pod(containers=(running(),), conditions=(cond,))).why == ""


def test_a_pod_of_a_stopped_node_being_deleted_reads_terminating() -> None:
    state = pod_state(pod(containers=(running(),), deleting=True))
    assert state.word == "Terminating" and "deleted at 2026-01-01 00:10:00Z:" in state.why
    assert not state.ok and state.tone == "waiting"
    # a deleted pod already Failed or Succeeded is not Terminating (printPod: IsPodPhaseTerminal)
    done = {"name": "pytorch", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    assert pod_state(pod(phase="Succeeded", containers=(done,), deleting=True)).word == "Completed"
    # nor one whose node is unreachable: Unknown
    assert pod_state(pod(containers=(running(),), deleting=True, reason="NodeLost")).word == "Unknown"


def test_a_kubelet_eviction_reads_evicted_with_its_message() -> None:
    state = pod_state(pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory."))
    assert (state.word, state.why, state.tone) == ("Evicted", "The node was low on resource: memory.", "bad")


def test_a_terminated_container_without_a_reason_reads_its_exit_code_or_signal() -> None:
    code = {"name": "pytorch", "state": {"terminated": {"exitCode": 3}}}
    signal = {"name": "pytorch", "state": {"terminated": {"exitCode": 137, "signal": 9}}}
    assert pod_state(pod(phase="Failed", containers=(code,))).word == "ExitCode:3"
    assert pod_state(pod(phase="Failed", containers=(signal,))).word == "Signal:9"


def test_a_failing_init_container_reads_init_and_its_reason() -> None:
    p = pod(phase="Pending")
    p["spec"]["initContainers"] = [{"name": "fetch"}, {"name": "warm"}]
    failing = {"name": "fetch", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    p["status"]["initContainerStatuses"] = [failing]
    state = pod_state(p)
    assert (state.word, state.restarts) == ("Init:CrashLoopBackOff", 3)
    done = {"name": "fetch", "state": {"terminated": {"exitCode": 0}}}
    p["status"]["initContainerStatuses"] = [done, {"name": "warm", "state": {"running": {}}}]
    assert pod_state(p).word == "Init:1/2"
    assert pod_state(p).tone == "waiting"


def test_the_table_puts_pods_not_working_first_and_counts_every_pod() -> None:
    pods = [
        pod("j-worker-0", containers=(running(),)),
        pod("j-worker-1", containers=(crash_looping(),)),
        pod("j-worker-2", containers=(running(),)),
    ]
    table = pod_table(pods, limit=2)
    assert [r.name for r in table.rows] == ["j-worker-1", "j-worker-0"] and table.more == 1
    assert table.rows[0].node == "node-1"
    # the count line takes in every pod, the pods not working first
    assert table.summary.text == "1 CrashLoopBackOff · 2 Running"


def test_the_chart_draws_a_crash_loop_as_a_wait_after_the_last_exit_saying_why() -> None:
    first = pod(containers=(running(),))
    life = life_from_pod(first, None, now=10.0)
    looping = life_from_pod(pod(containers=(crash_looping(),)), life, now=50.0)
    assert looping.waiting == f"CrashLoopBackOff: {BACK_OFF}"
    bars = timeline.pod_bars(looping, [], now=1767225660.0)  # 00:01:00
    last = bars[-1]
    assert last.state == "pending" and last.open
    assert last.start == 1767225640.0  # the exit, 00:00:40
    assert last.title.endswith(f"— CrashLoopBackOff: {BACK_OFF}")
    assert bars[-2].state == "failed" and "exit code 1 (Error)" in bars[-2].title
    # running again: the wait is over, the open bar is a run
    again = life_from_pod(pod(containers=(running(),)), looping, now=70.0)
    assert again.waiting == "" and timeline.pod_bars(again, [], now=1767225670.0)[-1].state == "running"


def test_the_chart_says_why_a_failed_pod_was_disrupted() -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC", "message": "PodGC"}
    term = {
        "name": "pytorch",
        "state": {
            "terminated": {
                "exitCode": 137,
                "reason": "Error",
                "startedAt": "2026-01-01T00:00:05Z",
                "finishedAt": "2026-01-01T00:00:50Z",
            }
        },
    }
    life = life_from_pod(pod(phase="Failed", containers=(term,), conditions=(cond,)), None, now=0.0)
    title = timeline.pod_bars(life, [], now=1767225700.0)[-1].title
    assert "failed with exit code 137 (Error)" in title
    assert "deleted by the pod garbage collector: its node is gone: PodGC" in title
