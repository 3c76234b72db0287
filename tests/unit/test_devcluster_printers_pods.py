"""`kubectl get pods` against devcluster prints what kube-apiserver's `printPod` prints
(k8s.io/kubernetes pkg/printers/internalversion/printers.go). The numbered cases follow those of
its printers_test.go (`TestPrintPod`, `TestPrintPodWithRestartableInitContainer`,
`TestPrintPodwide`): no creationTimestamp, so AGE is `<unknown>`; restart times are relative to
a fixed clock (`(… ago)` is apimachinery's `HumanDuration`, so 60s prints `60s`, not `1m`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.resources import BUILTINS
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.verbs.printers.pods import COLUMNS, row, row_conditions
from kubetrain.devcluster.apiserver.verbs.tables import table

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
RUNNING: Obj = {"running": {}}
WAITING: Obj = {"waiting": {}}
SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def ago(**delta: float) -> Obj:
    """`lastState` of a container that last terminated `delta` before NOW."""
    when = (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"terminated": {"finishedAt": when}}


def cs(restarts: int = 0, ready: bool = False, state: Obj | None = None, **extra: Any) -> Obj:
    return {"ready": ready, "restartCount": restarts, "state": state or {}, **extra}


def pod(
    name: str,
    containers: int = 1,
    statuses: list[Obj] | None = None,
    init: list[Obj] | None = None,
    init_statuses: list[Obj] | None = None,
    **status: Any,
) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(containers)], "initContainers": init or []},
        "status": {
            "containerStatuses": statuses or [],
            "initContainerStatuses": init_statuses or [],
            **status,
        },
    }


def printed(obj: Obj) -> list[Any]:
    """The default columns' cells."""
    return row(obj, NOW)[:5]


PRINT_POD = [
    # container ready status and restarts, the phase as the status
    (
        pod("test1", 2, [cs(3, True, RUNNING), cs(3)], phase="podPhase"),
        ["test1", "1/2", "podPhase", "6", "<unknown>"],
    ),
    # a waiting container's reason overrides the phase
    (
        pod(
            "test2",
            2,
            [cs(3, True, RUNNING), cs(3, state={"waiting": {"reason": "ContainerWaitingReason"}})],
            phase="podPhase",
        ),
        ["test2", "1/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    # the first container's state wins over the rest
    (
        pod(
            "test3",
            2,
            [
                cs(3, state={"waiting": {"reason": "ContainerWaitingReason"}}),
                cs(3, state={"terminated": {"reason": "ContainerTerminatedReason"}}),
            ],
            phase="podPhase",
        ),
        ["test3", "0/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    # ready is not enough for reporting running
    (
        pod("test4", 2, [cs(3, True), cs(3, True)], phase="podPhase"),
        ["test4", "0/2", "podPhase", "6", "<unknown>"],
    ),
    # the pod's reason overrides its phase
    (
        pod("test5", 2, [cs(3, True, RUNNING), cs(3, True)], phase="podPhase", reason="podReason"),
        ["test5", "1/2", "podReason", "6", "<unknown>"],
    ),
    # one container running and one completed, without a True Ready condition
    (
        pod(
            "test6",
            2,
            [cs(3, True, {"terminated": {"reason": "Completed", "exitCode": 0}}), cs(3, True, RUNNING)],
            phase="Running",
        ),
        ["test6", "1/2", "NotReady", "6", "<unknown>"],
    ),
    # the same with a True Ready condition
    (
        pod(
            "test6",
            2,
            [cs(3, True, {"terminated": {"reason": "Completed", "exitCode": 0}}), cs(3, True, RUNNING)],
            phase="Running",
            conditions=[{"type": "Ready", "status": "True"}],
        ),
        ["test6", "1/2", "Running", "6", "<unknown>"],
    ),
    # one init container restarting and one container not running
    (
        pod(
            "test7",
            1,
            [cs(0, state=WAITING)],
            [{"name": "i0"}],
            [cs(3, False, RUNNING, lastState=ago(seconds=10))],
        ),
        ["test7", "0/1", "Init:0/1", "3 (10s ago)", "<unknown>"],
    ),
    # two init containers, one restarting and the other not running
    (
        pod(
            "test8",
            1,
            [cs(0, state=WAITING)],
            [{"name": "i0"}, {"name": "i1"}],
            [cs(3, False, RUNNING, lastState=ago(seconds=10)), cs(0, state=WAITING)],
        ),
        ["test8", "0/1", "Init:0/2", "3 (10s ago)", "<unknown>"],
    ),
    # one init container completed without restarts and the other restarting
    (
        pod(
            "test9",
            1,
            [cs(0, state=WAITING)],
            [{"name": "i0"}, {"name": "i1"}],
            [cs(0, state={"terminated": {}}), cs(3, False, RUNNING, lastState=ago(seconds=20))],
        ),
        ["test9", "0/1", "Init:1/2", "3 (20s ago)", "<unknown>"],
    ),
    # one init container completed with restarts and the other restarting
    (
        pod(
            "test10",
            1,
            [cs(0, state=WAITING)],
            [{"name": "i0"}, {"name": "i1"}],
            [
                cs(2, state={"terminated": {}}, lastState=ago(minutes=4)),
                cs(3, False, RUNNING, lastState=ago(minutes=3)),
            ],
        ),
        ["test10", "0/1", "Init:1/2", "5 (3m ago)", "<unknown>"],
    ),
    # the init container completed with restarts, the container restarting: only its restarts count
    (
        pod(
            "test11",
            1,
            [cs(4, False, RUNNING, lastState=ago(seconds=20))],
            [{"name": "i0"}],
            [cs(2, state={"terminated": {}}, lastState=ago(minutes=2))],
            phase="Running",
        ),
        ["test11", "0/1", "Running", "4 (20s ago)", "<unknown>"],
    ),
    # restarted 5d ago
    (
        pod("test12", 1, [cs(3, True, RUNNING, lastState=ago(days=5))], phase="Running"),
        ["test12", "1/1", "Running", "3 (5d ago)", "<unknown>"],
    ),
    # one container never restarted, the other 10d ago
    (
        pod(
            "test13", 2, [cs(0, True, RUNNING), cs(3, True, RUNNING, lastState=ago(days=10))], phase="Running"
        ),
        ["test13", "2/2", "Running", "3 (10d ago)", "<unknown>"],
    ),
    # restarts 5d and 20d ago: the latest counts
    (
        pod(
            "test14",
            2,
            [cs(6, True, RUNNING, lastState=ago(days=5)), cs(3, True, RUNNING, lastState=ago(days=20))],
            phase="Running",
        ),
        ["test14", "2/2", "Running", "9 (5d ago)", "<unknown>"],
    ),
    # a PodScheduled condition with reason SchedulingGated
    (
        pod(
            "test15",
            2,
            phase="podPhase",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        ),
        ["test15", "0/2", "SchedulingGated", "0", "<unknown>"],
    ),
    # succeeded and failed pods
    (
        pod(
            "test16", 1, [cs(state={"terminated": {"reason": "Completed", "exitCode": 0}})], phase="Succeeded"
        ),
        ["test16", "0/1", "Completed", "0", "<unknown>"],
    ),
    (
        pod("test17", 1, [cs(state={"terminated": {"reason": "Error", "exitCode": 1}})], phase="Failed"),
        ["test17", "0/1", "Error", "0", "<unknown>"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), PRINT_POD, ids=[c[1][0] + f"-{i}" for i, c in enumerate(PRINT_POD)]
)
def test_print_pod(obj: Obj, expected: list[Any]) -> None:
    assert printed(obj) == expected


def test_a_finished_pods_row_carries_the_completed_condition() -> None:
    assert row_conditions(pod("p", phase="Succeeded")) == SUCCEEDED
    assert row_conditions(pod("p", phase="Failed")) == FAILED
    for phase in ("Pending", "Running", "Unknown", ""):
        assert row_conditions(pod("p", phase=phase)) == []


SIDECARS = [
    {"name": "restartable-init-1", "restartPolicy": "Always"},
    {"name": "restartable-init-2", "restartPolicy": "Always"},
]
INITIALIZED = [{"type": "Initialized", "status": "True"}]


def sidecar(n: int, **kw: Any) -> Obj:
    return cs(name=f"restartable-init-{n}", **kw)


PRINT_POD_WITH_SIDECARS = [
    # the first sidecar running but not started
    (
        pod(
            "test1",
            1,
            [cs(state=WAITING)],
            SIDECARS,
            [
                sidecar(1, restarts=3, state=RUNNING, started=False, lastState=ago(seconds=10)),
                sidecar(2, state=WAITING, started=False),
            ],
            phase="Pending",
            conditions=[{"type": "Initialized", "status": "False"}],
        ),
        ["test1", "0/3", "Init:0/2", "3 (10s ago)", "<unknown>"],
    ),
    # the first sidecar started, the second running but not started
    (
        pod(
            "test2",
            1,
            [cs(state=WAITING)],
            SIDECARS,
            [
                sidecar(1, restarts=3, state=RUNNING, started=True, lastState=ago(seconds=10)),
                sidecar(2, state=RUNNING, started=False),
            ],
            phase="Pending",
            conditions=[{"type": "Initialized", "status": "False"}],
        ),
        ["test2", "0/3", "Init:1/2", "3 (10s ago)", "<unknown>"],
    ),
    # both sidecars started and the container running: started sidecars count in READY when ready
    (
        pod(
            "test3",
            1,
            [cs(4, True, RUNNING, lastState=ago(seconds=20))],
            SIDECARS,
            [
                sidecar(1, restarts=3, state=RUNNING, started=True, lastState=ago(seconds=10)),
                sidecar(2, ready=True, state=RUNNING, started=True),
            ],
            phase="Running",
            conditions=INITIALIZED,
        ),
        ["test3", "2/3", "Running", "7 (10s ago)", "<unknown>"],
    ),
    # both sidecars terminated with non-zero codes, the container completed
    (
        pod(
            "test4",
            1,
            [cs(4, state={"terminated": {"reason": "Completed", "exitCode": 0}}, lastState=ago(seconds=20))],
            SIDECARS,
            [
                sidecar(
                    1,
                    restarts=3,
                    state={"terminated": {"reason": "Error", "exitCode": 137}},
                    started=False,
                    lastState=ago(seconds=10),
                ),
                sidecar(2, state={"terminated": {"reason": "Error", "exitCode": 137}}, started=False),
            ],
            phase="Succeeded",
            conditions=INITIALIZED,
        ),
        ["test4", "0/3", "Completed", "7 (10s ago)", "<unknown>"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), PRINT_POD_WITH_SIDECARS, ids=[c[1][0] for c in PRINT_POD_WITH_SIDECARS]
)
def test_print_pod_with_restartable_init_containers(obj: Obj, expected: list[Any]) -> None:
    assert printed(obj) == expected


@pytest.mark.parametrize(
    ("init_status", "expected"),
    [
        ({"terminated": {"reason": "OOMKilled", "exitCode": 137}}, "Init:OOMKilled"),
        ({"terminated": {"signal": 9, "exitCode": 137}}, "Init:Signal:9"),
        ({"terminated": {"exitCode": 2}}, "Init:ExitCode:2"),
        ({"waiting": {"reason": "CrashLoopBackOff"}}, "Init:CrashLoopBackOff"),
        ({"waiting": {"reason": "ErrImagePull"}}, "Init:ErrImagePull"),
        ({"waiting": {"reason": "PodInitializing"}}, "Init:0/2"),  # not a reason to show
        ({"running": {}}, "Init:0/2"),
    ],
)
def test_a_failing_or_unfinished_init_container_holds_the_status(init_status: Obj, expected: str) -> None:
    obj = pod(
        "p",
        1,
        [cs(state={"waiting": {"reason": "PodInitializing"}})],
        [{"name": "i0"}, {"name": "i1"}],
        [cs(state=init_status), cs(state=WAITING)],
        phase="Pending",
    )
    assert printed(obj)[2] == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"waiting": {"reason": "ContainerCreating"}}, "ContainerCreating"),
        ({"waiting": {"reason": "PodInitializing"}}, "PodInitializing"),
        ({"waiting": {"reason": "CrashLoopBackOff"}}, "CrashLoopBackOff"),
        ({"waiting": {"reason": "ImagePullBackOff"}}, "ImagePullBackOff"),
        ({"waiting": {"reason": "CreateContainerConfigError"}}, "CreateContainerConfigError"),
        ({"waiting": {}}, "Running"),  # a waiting state without a reason leaves the phase
        ({"terminated": {"reason": "OOMKilled", "exitCode": 137}}, "OOMKilled"),
        ({"terminated": {"signal": 15, "exitCode": 143}}, "Signal:15"),
        ({"terminated": {"exitCode": 3}}, "ExitCode:3"),
    ],
)
def test_a_containers_state_is_the_status(state: Obj, expected: str) -> None:
    assert printed(pod("p", 1, [cs(state=state)], phase="Running"))[2] == expected


def test_a_crash_looping_container_shows_its_restarts_and_when_it_last_exited() -> None:
    looping = cs(
        5,
        state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
        lastState={"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": "2026-05-01T11:55:00Z"}},
    )
    assert printed(pod("p", 1, [looping], phase="Running")) == [
        "p",
        "0/1",
        "CrashLoopBackOff",
        "5 (5m ago)",
        "<unknown>",
    ]
    # restarts without a recorded finish time print the count alone
    looping.pop("lastState")
    assert printed(pod("p", 1, [looping], phase="Running"))[3] == "5"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"phase": "Running"}, "Terminating"),
        ({"phase": "Pending"}, "Terminating"),
        ({"phase": "Running", "reason": "NodeLost"}, "Unknown"),
        ({"phase": "Succeeded"}, "Completed"),  # a finished pod keeps its status (IsPodPhaseTerminal)
        ({"phase": "Failed"}, "Error"),
    ],
)
def test_a_deleted_pod(status: Obj, expected: str) -> None:
    terminated = {"Succeeded": {"reason": "Completed"}, "Failed": {"reason": "Error", "exitCode": 1}}
    state = {"terminated": terminated[status["phase"]]} if status["phase"] in terminated else RUNNING
    obj = pod("p", 1, [cs(0, True, state)], **status)
    obj["metadata"]["deletionTimestamp"] = "2026-05-01T11:59:00Z"
    assert printed(obj)[2] == expected


def test_the_pods_reason_such_as_evicted_is_the_status() -> None:
    evicted = pod("p", 1, [cs(state={"terminated": {}})], phase="Failed", reason="Evicted")
    # a container terminated without reason nor code overrides it, as upstream's
    assert printed(evicted)[2] == "ExitCode:0"
    assert printed(pod("p", 1, phase="Failed", reason="Evicted"))[2] == "Evicted"
    assert printed(pod("p", 1))[2] == ""  # no phase yet: an empty cell, as kube-apiserver prints


def test_wide_columns() -> None:
    """`TestPrintPodwide`: the first pod IP, the node, the nominated node and the readiness gates."""
    obj = pod(
        "test1",
        2,
        [cs(3, True, RUNNING), cs(3)],
        phase="podPhase",
        podIPs=[{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
        nominatedNodeName="node1",
        conditions=[{"type": "condition1", "status": "True"}],
    )
    obj["spec"].update(
        nodeName="test1", readinessGates=[{"conditionType": "condition1"}, {"conditionType": "condition2"}]
    )
    assert [c["name"] for c in COLUMNS if c["priority"] == 1] == [
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert row(obj, NOW)[5:] == ["1.1.1.1", "test1", "node1", "1/2"]
    bare = pod("test2", 1, phase="Pending")
    assert row(bare, NOW)[5:] == ["<none>", "<none>", "<none>", "<none>"]
    # v1 `podIP` is the first IP whatever `podIPs` says (Convert_v1_PodStatus_To_core_PodStatus)
    bare["status"].update(podIP="10.0.0.9", podIPs=[{"ip": "10.0.0.8"}])
    assert row(bare, NOW)[5] == "10.0.0.9"


def test_the_table_sends_the_row_conditions_of_finished_pods_only() -> None:
    rt = next(r for r in BUILTINS if r.resource == "pods" and r.group == "")
    done = pod("done", 1, phase="Succeeded")
    live = pod("live", 1, phase="Running")
    out = table(Target(rt, "v1"), [done, live], {"resourceVersion": "7"}, None, NOW)
    assert [r.get("conditions") for r in out["rows"]] == [SUCCEEDED, None]
    assert [c["name"] for c in out["columnDefinitions"]][:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
