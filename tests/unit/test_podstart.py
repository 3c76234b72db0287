"""Pods that cannot start (operator/podstart.py): which waiting containers count (init containers
too, never an unscheduled pod), one event per (pod, container, reason) and a condition written
only when that set changes, the start deadline's arithmetic on the plan's `now` — for a v1 kind
(Kubeflow's conditions) and a TrainJob (Trainer's), and the annotation's admission rule."""

from __future__ import annotations

import copy
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import T0, Sim, at, job, replica, ts
from trainjobs import trainjob_pod

from kubetrain.api.startdeadline import ANNOTATION, annotation_errors, start_deadline_seconds
from kubetrain.operator import podstart
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainplan import NOW, snapshot, trainjob

Obj = dict[str, Any]


def stuck(
    pod: Obj,
    reason: str = "ImagePullBackOff",
    message: str = 'Back-off pulling image "nope:1"',
    *,
    init: bool = False,
    container: str = "c",
    scheduled: str | None = ts(T0),
) -> Obj:
    """`pod` Pending, its container (or init container) `container` waiting with `reason`."""
    out = copy.deepcopy(pod)
    status = out.setdefault("status", {})
    status["phase"] = "Pending"
    key = "initContainerStatuses" if init else "containerStatuses"
    status[key] = [{"name": container, "state": {"waiting": {"reason": reason, "message": message}}}]
    if init:
        status["containerStatuses"] = [{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}]
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled})
    status["conditions"] = conditions
    return out


def bare(name: str) -> Obj:
    return {"metadata": {"name": name}, "status": {}}


# --- detection ---------------------------------------------------------------------------------


def test_waiting_init_and_app_containers_are_found_with_their_kubelet_messages() -> None:
    pod = stuck(bare("p"), "ErrImagePull", "rpc error:  pull\naccess denied", init=True, container="fetch")
    [w] = podstart.waiting_containers(pod)
    assert (w.pod, w.container, w.init, w.reason, w.kind) == (
        "p",
        "fetch",
        True,
        "ErrImagePull",
        "ImagePullBackOff",
    )
    assert w.message == "rpc error: pull access denied" and w.scheduled_at == T0 and w.pending
    config = stuck(bare("q"), "CreateContainerConfigError", 'configmap "cfg" not found')
    assert [w.reason for w in podstart.waiting_containers(config)] == ["CreateContainerConfigError"]
    assert "init container fetch cannot start: ErrImagePull" in w.told()


def test_waiting_that_passes_by_itself_or_an_unscheduled_pod_does_not_count() -> None:
    assert podstart.waiting_containers(stuck(bare("p"), "ContainerCreating")) == []
    assert podstart.waiting_containers(stuck(bare("p"), "CrashLoopBackOff")) == []
    assert podstart.waiting_containers(stuck(bare("p"), scheduled=None)) == []  # queued, gang-waiting
    ended = stuck(bare("p"))
    ended["status"]["phase"] = "Failed"
    assert podstart.waiting_containers(ended) == []
    deleting = stuck(bare("p"))
    deleting["metadata"]["deletionTimestamp"] = ts(T0)
    assert podstart.waiting_containers(deleting) == []


def test_a_long_kubelet_message_is_truncated() -> None:
    [w] = podstart.waiting_containers(stuck(bare("p"), message="x" * 5000))
    assert len(w.message) == podstart.MAX_KUBELET_MESSAGE and w.message.endswith("...")


# --- the condition and the events: written on change only --------------------------------------


def condition_after(verdict: podstart.Verdict, old: Obj | None) -> Obj | None:
    if verdict.condition is not None:
        return {"type": podstart.CONDITION, "status": "True", "message": verdict.condition[1]}
    return None if verdict.cleared else old


def test_one_event_per_pod_container_and_reason_not_per_reconcile() -> None:
    pods = [stuck(bare("job-worker-1"), "ErrImagePull", "no such host")]
    first = podstart.judge(pods, None, None, at(0), "TFJob job")
    assert first.condition is not None and first.condition[0] == "ImagePullBackOff"
    assert first.condition[1].startswith("TFJob job: 1 container(s) of its pods cannot start: job-worker-1/c")
    assert first.condition[1].endswith("Kubelet: no such host")
    assert [w.pod for w in first.events] == ["job-worker-1"]
    assert first.listed == podstart.Listed((("job-worker-1", "c", "ImagePullBackOff"),), 1)
    cond = condition_after(first, None)
    again = podstart.judge(pods, cond, None, at(5), "TFJob job", listed=first.listed)
    assert again.condition is None and again.events == []
    # The kubelet's back-off alternation is the same reason: no write, no event.
    backoff = [stuck(bare("job-worker-1"), "ImagePullBackOff", "Back-off pulling image")]
    assert podstart.judge(backoff, cond, None, at(9), "TFJob job", listed=first.listed).condition is None
    assert podstart.judge(backoff, cond, None, at(9), "TFJob job", listed=first.listed).events == []
    # A second pod (whose name ends like the first's) is new: a new message, one event for it.
    pods.append(stuck(bare("b-worker-1"), "CreateContainerConfigError", 'secret "s" not found'))
    more = podstart.judge(pods, cond, None, at(10), "TFJob job", listed=first.listed)
    assert more.condition is not None and more.condition[0] == "CreateContainerConfigError"
    assert [(w.pod, w.reason) for w in more.events] == [("b-worker-1", "CreateContainerConfigError")]
    # Every pod started: the condition clears; a later failure tells again.
    cond = condition_after(more, cond)
    cleared = podstart.judge([], cond, None, at(20), "TFJob job", listed=more.listed)
    assert cleared.cleared and cleared.events == [] and cleared.listed == podstart.NOTHING
    false = {**(cond or {}), "status": "False"}
    assert podstart.judge(pods, false, None, at(30), "TFJob job", listed=cleared.listed).events


def test_a_large_job_names_the_first_containers_and_counts_the_rest() -> None:
    pods = [stuck(bare(f"p-{i:02d}")) for i in range(25)]
    verdict = podstart.judge(pods, None, None, at(0), "PyTorchJob big")
    assert verdict.condition is not None
    assert "25 container(s)" in verdict.condition[1] and " and 15 more." in verdict.condition[1]
    assert len(verdict.events) == podstart.MAX_LISTED
    assert verdict.listed.count == 25 and len(verdict.listed.containers) == podstart.MAX_LISTED
    cond = condition_after(verdict, None)
    again = podstart.judge(pods, cond, None, at(1), "PyTorchJob big", listed=verdict.listed)
    assert again.condition is None and again.events == []
    # One more beyond the first ten: only the count changes — a rewrite, no event.
    pods.append(stuck(bare("z-26")))
    grown = podstart.judge(pods, cond, None, at(2), "PyTorchJob big", listed=verdict.listed)
    assert grown.condition is not None and " and 16 more." in grown.condition[1] and grown.events == []


# --- decided from what the controller keeps, never from the condition's message ---------------

ONE = ("job-worker-1", "c", "ImagePullBackOff")
WORDINGS = [
    "",
    "arbitrary text that names no container at all",
    # reads as though it listed both containers already, in today's wording
    "TFJob job: 2 container(s) of its pods cannot start: a-worker-0/c CreateContainerConfigError, "
    "job-worker-1/c ImagePullBackOff. Kubelet: x",
    # another version's wording of the same single container
    "1 pod cannot start (job-worker-1/c: ImagePullBackOff)",
]


@pytest.mark.parametrize("message", WORDINGS)
def test_the_wording_of_the_condition_message_cannot_change_the_decision(message: str) -> None:
    one = [stuck(bare("job-worker-1"), "ErrImagePull", "no such host")]
    listed = podstart.Listed((ONE,), 1)
    written = {"type": podstart.CONDITION, "status": "True", "reason": "ImagePullBackOff", "message": message}
    same = podstart.judge(one, written, None, at(5), "TFJob job", listed=listed)
    assert same.condition is None and same.events == [] and same.listed == listed
    two = [*one, stuck(bare("a-worker-0"), "CreateContainerConfigError", 'secret "s" not found')]
    more = podstart.judge(two, written, None, at(10), "TFJob job", listed=listed)
    assert more.condition is not None
    assert more.condition[1].startswith("TFJob job: 2 container(s) of its pods cannot start: a-worker-0/c")
    assert [(w.pod, w.kind) for w in more.events] == [("a-worker-0", "CreateContainerConfigError")]
    assert more.listed == podstart.Listed((("a-worker-0", "c", "CreateContainerConfigError"), ONE), 2)


def test_a_condition_an_earlier_operator_process_wrote_is_set_again_but_not_told_again() -> None:
    pods = [stuck(bare("job-worker-1"), "ErrImagePull", "no such host")]
    first = podstart.judge(pods, None, None, at(0), "TFJob job")
    written = condition_after(first, None)
    # A new process keeps no record yet: the condition is set as it reads now (the same text, so
    # no status write), and what it may already list is not told again.
    restarted = podstart.judge(pods, written, None, at(5), "TFJob job")
    assert restarted.condition == first.condition and restarted.events == []
    assert restarted.listed == first.listed
    # From its record on, only what changes is told.
    pods.append(stuck(bare("job-worker-2")))
    later = podstart.judge(pods, written, None, at(6), "TFJob job", listed=restarted.listed)
    assert [w.pod for w in later.events] == ["job-worker-2"]
    # Without a True condition nothing was told: every listed container is.
    fresh = podstart.judge(pods, {**(written or {}), "status": "False"}, None, at(7), "TFJob job")
    assert [w.pod for w in fresh.events] == ["job-worker-1", "job-worker-2"]


# --- the start deadline ------------------------------------------------------------------------


def test_the_start_deadline_counts_from_scheduling_to_the_second() -> None:
    pods = [stuck(bare("p"), scheduled=ts(at(10)))]
    before = podstart.judge(pods, None, 60, at(69), "TFJob job")
    assert before.failed is None and before.due == at(70)
    due = podstart.judge(pods, None, 60, at(70), "TFJob job")
    assert due.failed is not None and "scheduled more than 60s ago" in due.failed
    assert "container c still cannot start: ImagePullBackOff" in due.failed
    unscheduled = [stuck(bare("p"), scheduled=None)]
    assert podstart.judge(unscheduled, None, 60, at(10_000), "TFJob job").failed is None
    running = stuck(bare("p"))
    running["status"]["phase"] = "Running"  # a restart that cannot start again is not a start
    late = podstart.judge([running], None, 60, at(10_000), "TFJob job")
    assert late.failed is None and late.condition is not None


def test_the_annotation_is_read_and_checked() -> None:
    assert start_deadline_seconds({ANNOTATION: "300"}) == 300
    assert start_deadline_seconds({ANNOTATION: "0"}) is None and start_deadline_seconds({}) is None
    for bad in ("0", "-5", "1.5", "ten", "²"):
        [error] = annotation_errors({ANNOTATION: bad})
        assert error.path == f"metadata.annotations[{ANNOTATION}]" and "positive integer" in error.message
    assert annotation_errors({ANNOTATION: "30"}) == []


# --- in the planner: a v1 kind ------------------------------------------------------------------


def pytorch(deadline: str | None = None) -> Obj:
    obj = job(
        "PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 1)}, name="pt"
    )
    if deadline is not None:
        obj["metadata"].setdefault("annotations", {})[ANNOTATION] = deadline
    return obj


def test_a_v1_job_says_why_once_and_fails_at_its_start_deadline() -> None:
    sim = Sim(pytorch("120"))
    sim.step(at(0))
    sim.pods["pt-worker-0"] = stuck(sim.pods["pt-worker-0"], container="pytorch", scheduled=ts(at(1)))
    p = sim.step(at(5))
    cond = sim.condition(podstart.CONDITION)
    assert cond is not None and cond["status"] == "True" and cond["reason"] == "ImagePullBackOff"
    assert sim.job["status"]["conditions"][-1]["type"] == podstart.CONDITION  # what `kubectl get` shows
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "PodNotStarting")]
    assert "pod pt-worker-0 container pytorch cannot start: ImagePullBackOff" in p.events[0].message
    assert p.requeue_at == at(121)  # woken at the deadline, not polled
    quiet = sim.step(at(60))
    assert quiet.status is None and quiet.events == []
    failed = sim.step(at(121))
    assert sim.is_true("Failed") and sim.condition("Failed")["reason"] == "StartDeadlineExceeded"  # type: ignore[index]
    assert sorted(failed.delete_pods) == ["pt-master-0", "pt-worker-0"]


def test_what_the_condition_lists_goes_from_one_reconcile_to_the_next() -> None:
    sim = Sim(pytorch())
    sim.step(at(0))
    sim.pods["pt-worker-0"] = stuck(
        sim.pods["pt-worker-0"], "ErrImagePull", "no such host", container="pytorch"
    )
    p = sim.step(at(1))
    assert p.not_starting == podstart.Listed((("pt-worker-0", "pytorch", "ImagePullBackOff"),), 1)
    written = sim.condition(podstart.CONDITION)
    assert written is not None and written["message"].endswith("Kubelet: no such host")
    # The kubelet backs off: another reason and message for the same container — no write.
    backoff = 'Back-off pulling image "x"'
    sim.pods["pt-worker-0"] = stuck(sim.pods["pt-worker-0"], "ImagePullBackOff", backoff, container="pytorch")
    quiet = sim.step(at(2))
    assert quiet.status is None and quiet.events == [] and sim.condition(podstart.CONDITION) == written
    # A new operator process (no record yet): the condition is set as it reads now, once; no event.
    sim.not_starting = None
    restarted = sim.step(at(3))
    assert restarted.status is not None and restarted.events == []
    assert sim.condition(podstart.CONDITION)["message"].endswith(f"Kubelet: {backoff}")  # type: ignore[index]
    assert sim.step(at(4)).status is None


def test_a_v1_job_whose_pods_start_turns_the_condition_false() -> None:
    sim = Sim(pytorch())
    sim.step(at(0))
    sim.pods["pt-master-0"] = stuck(sim.pods["pt-master-0"], "InvalidImageName", container="pytorch")
    p = sim.step(at(1))
    assert p.requeue_at is None or p.requeue_at > at(10_000)  # no deadline: nothing to wake for
    sim.all_phase("Running")
    sim.step(at(2))
    cond = sim.condition(podstart.CONDITION)
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "PodsStarted"
    assert sim.is_true("Running") and sim.job["status"]["conditions"][-1]["type"] == "Running"


# --- in the planner: a TrainJob -------------------------------------------------------------------


def tj_plan(job: Obj, pods: list[Obj], now: Any = NOW) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=[snapshot(job)])
    return plan_trainjob(job, observed, None, now, PlannerConfig())


def test_a_trainjob_says_why_and_fails_at_its_start_deadline() -> None:
    job = trainjob(2)
    job["metadata"]["annotations"] = {ANNOTATION: "60"}
    pods = [trainjob_pod("tj-node-0-0"), stuck(trainjob_pod("tj-node-0-1", ready=False), scheduled=ts(NOW))]
    p = tj_plan(job, pods)
    [cond] = p.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (podstart.CONDITION, "True", "ImagePullBackOff")
    assert set(cond) == {"type", "status", "reason", "message", "lastTransitionTime"}  # a metav1.Condition
    assert [e.reason for e in p.events] == ["PodNotStarting"]
    assert p.requeue_at == NOW + timedelta(seconds=60)
    job["status"] = p.status
    quiet = tj_plan(job, pods, NOW + timedelta(seconds=30))
    assert quiet.status is None and quiet.events == []
    failed = tj_plan(job, pods, NOW + timedelta(seconds=60))
    done = next(c for c in failed.status["conditions"] if c["type"] == "Failed")
    assert done["reason"] == "StartDeadlineExceeded" and "tj-node-0-1" in done["message"]
    assert sorted(failed.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]


def test_a_trainjob_whose_pods_start_loses_the_condition() -> None:
    job = trainjob(1)
    p = tj_plan(job, [stuck(trainjob_pod("tj-node-0-0", ready=False), "CreateContainerError")])
    job["status"] = p.status
    started = tj_plan(job, [trainjob_pod("tj-node-0-0")], NOW + timedelta(seconds=5))
    assert "conditions" not in started.status or started.status["conditions"] == []


def test_the_dashboard_shows_the_state() -> None:
    from kubetrain.dashboard.views.joblist import STATES, job_state

    sim = Sim(pytorch())
    sim.step(at(0))
    sim.pods["pt-master-0"] = stuck(sim.pods["pt-master-0"], container="pytorch")
    sim.step(at(1))
    assert job_state(sim.job) == "PodsNotStarting" and "PodsNotStarting" in STATES
    job = trainjob(1)
    job["status"] = tj_plan(job, [stuck(trainjob_pod("tj-node-0-0", ready=False))]).status
    assert job["status"]["jobsStatus"][0]["active"] == 1  # counted active, yet not running
    assert job_state(job) == "PodsNotStarting"


def test_kubetrain_io_jobs_may_declare_it_in_run_policy_first() -> None:
    from kubetrain.jobs.defaulting import default_job
    from kubetrain.jobs.validation import validate_job
    from kubetrain.operator.prepare import prepare_job

    obj = pytorch("300")
    assert prepare_job(obj).run_policy.start_deadline_seconds == 300
    obj["spec"]["runPolicy"] = {"startDeadlineSeconds": 60}
    assert prepare_job(obj).run_policy.start_deadline_seconds == 60  # the field wins
    for bad in (0, -1, "ten"):
        obj["spec"]["runPolicy"] = {"startDeadlineSeconds": bad}
        defaulted = default_job(obj).obj
        errors = validate_job(defaulted).errors
        assert [e.path for e in errors] == ["spec.runPolicy.startDeadlineSeconds"], errors
    obj["spec"]["runPolicy"] = {}
    obj["metadata"]["annotations"][ANNOTATION] = "soon"
    defaulted = default_job(obj).obj
    assert [e.path for e in validate_job(defaulted).errors] == [f"metadata.annotations[{ANNOTATION}]"]
