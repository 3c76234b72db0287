"""The gang schedulers' texts, word for word as Volcano (JobInfo.FitError, the overcommit plugin)
and the coscheduling PostFilter write them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubetrain.devcluster.gang import volcanofit
from kubetrain.devcluster.gang.phases import coscheduling_rejection

Obj = dict[str, Any]


def pod(name: str, phase: str = "Pending", node: str = "") -> Obj:
    return {
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_task_status_is_volcanos_get_task_status() -> None:
    assert volcanofit.task_status(pod("a"), bound=False) == "Pending"
    assert volcanofit.task_status(pod("a"), bound=True) == "Binding"  # bound, not yet watched
    assert volcanofit.task_status(pod("a", node="n"), bound=True) == "Bound"
    assert volcanofit.task_status(pod("a", "Running", "n"), bound=True) == "Running"
    assert volcanofit.task_status(pod("a", "Succeeded", "n"), bound=False) == "Succeeded"
    assert volcanofit.task_status(pod("a", "Unknown", "n"), bound=True) == "Unknown"


def test_fit_error_sorts_the_histograms_as_strings_and_names_the_origin() -> None:
    statuses = ["Pending"] * 10 + ["Running"] * 2
    fit = volcanofit.fit_error(
        statuses, 12, ["Schedulable"] * 9 + ["Unschedulable"], ("w-9", "0/3 nodes are unavailable: x.")
    )
    # Go's sort.Strings: "10 Pending" < "12 minAvailable" < "2 Running"; "1 U…" < "9 S…".
    assert fit == (
        "pod group is not ready, 10 Pending, 12 minAvailable, 2 Running; "
        "Pending: 1 Unschedulable, 9 Schedulable. Origin reason is w-9: 0/3 nodes are unavailable: x."
    )


def test_fit_error_of_a_ready_group_without_pending_reasons() -> None:
    assert volcanofit.fit_error(["Running", "Bound"], 2, []) == (
        "pod group is ready, 1 Bound, 1 Running, 2 minAvailable"
    )
    assert volcanofit.fit_error([], 4, []) == "pod group is not ready, 4 minAvailable"


def test_gang_unschedulable_and_schedulable_texts() -> None:
    assert volcanofit.gang_unschedulable(1, 4, "F") == "1/4 tasks in gang unschedulable: F"
    assert volcanofit.schedulable(pod("w-0"), "node-1") == (
        "Pod ns/w-0 can possibly be assigned to node-1, once minAvailable is satisfied"
    )


def test_overused_names_cpu_memory_then_the_rest_sorted_and_never_pods() -> None:
    need = {"pods": Fraction(9), "nvidia.com/gpu": Fraction(4), "memory": Fraction(1), "cpu": Fraction(8)}
    idle = {"pods": Fraction(1), "nvidia.com/gpu": Fraction(2), "memory": Fraction(5), "cpu": Fraction(2)}
    assert volcanofit.overused(need, idle) == (
        "resource in cluster is overused: overused cpu, overused nvidia.com/gpu"
    )
    assert volcanofit.overused({"pods": Fraction(9)}, {}) == "resource in cluster is overused"


def test_coscheduling_rejection_follows_the_reject_percentage() -> None:
    group = {"metadata": {"namespace": "ns", "name": "g"}, "spec": {"minMember": 20}}
    rejected = ", PodGroup ns/g gets rejected due to Pod p is unschedulable even after PostFilter"
    assert coscheduling_rejection(group, pod("p"), 0) == rejected
    assert coscheduling_rejection(group, pod("p"), 17) == rejected  # 15 % short
    assert coscheduling_rejection(group, pod("p"), 18) == ""  # 10 %: a small gap, others may fill it
    assert coscheduling_rejection(group, pod("p"), 20) == ""
    assert coscheduling_rejection(None, pod("p"), 0) == ", can not find pod group"
