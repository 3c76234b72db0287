"""The job list's pod summaries: each job's pods counted by what they do (`kubectl get pods`'s
STATUS word), the pods not working first; kept per pod event by the dashboard's watch; the list
filtered to, and sorted by, the jobs whose pods are not working — only where the user may list
pods."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, cast

from kubetrain.dashboard.access import AccessCache
from kubetrain.dashboard.views import joblist
from kubetrain.dashboard.views.auth import Credentials
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.views.podstate import pod_state
from kubetrain.dashboard.views.podsummary import NO_PODS, PodTally, summarize, summary_of
from kubetrain.dashboard.watch import JobWatch

from .test_dashboard_podstate import crash_looping, pod, running

Obj = dict[str, Any]
KINDS = served_kinds(["kubetrain.io"])
PT = next(k for k in KINDS if k.kind == "PyTorchJob")
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}


def image_pull() -> Obj:
    return {"name": "pytorch", "ready": False, "state": {"waiting": {"reason": "ImagePullBackOff"}}}


def owned(p: Obj, job_uid: str = "job-uid", namespace: str = "ns") -> Obj:
    p = copy.deepcopy(p)
    p["metadata"]["namespace"] = namespace
    p["metadata"]["ownerReferences"] = [{"uid": job_uid, "controller": True, "kind": "PyTorchJob"}]
    return p


def test_the_pods_not_working_come_first_failing_before_waiting_each_most_first() -> None:
    pods = [pod(f"w-{i}", containers=(running(),)) for i in range(8)]
    pods += [pod("w-8", containers=(crash_looping(),)), pod("w-9", containers=(crash_looping(),))]
    pods += [pod("w-10", phase="Pending", conditions=(UNSCHEDULABLE,))]
    pods += [pod("w-11", phase="Pending", containers=(image_pull(),))]
    pods += [pod("w-12", phase="Succeeded")]
    summary = summary_of(pod_state(p) for p in pods)
    assert summary.text == "2 CrashLoopBackOff · 1 ImagePullBackOff · 1 Pending · 8 Running · 1 Succeeded"
    assert [p.tone for p in summary.parts] == ["bad", "bad", "waiting", "ok", "done"]
    assert (summary.not_working, summary.failing, summary.total) == (4, 3, 13)
    assert [p.working for p in summary.parts] == [False, False, False, True, True]


def test_a_running_pod_not_ready_is_counted_apart_from_the_working_ones() -> None:
    summary = summary_of(
        [
            pod_state(pod("a", containers=(running(),))),
            pod_state(pod("b", containers=(running(ready=False),))),
        ]
    )
    assert summary.text == "1 Running (not ready) · 1 Running"
    assert (summary.not_working, summary.failing) == (1, 0)


def test_no_pods_is_an_empty_summary() -> None:
    assert summary_of([]) == NO_PODS == summarize({("Running", "ok"): 0})
    assert NO_PODS.text == "" and NO_PODS.not_working == 0


def test_the_tally_follows_each_pods_changes_and_deletion() -> None:
    tally = PodTally()
    first, second = pod("w-0", containers=(running(),)), pod("w-1", containers=(running(),))
    tally.observe(first)
    tally.observe(second)
    tally.observe(second)  # the same state again (a resync): counted once
    assert tally.summary().text == "2 Running"
    crashed = pod("w-1", containers=(crash_looping(),))
    tally.observe(crashed)
    assert tally.summary().text == "1 CrashLoopBackOff · 1 Running"
    assert tally.summary() == summary_of([pod_state(first), pod_state(crashed)])
    tally.forget(crashed)
    assert tally.summary().text == "1 Running" and len(tally) == 1
    tally.forget(crashed)  # a second delete of the same pod changes nothing
    tally.forget(first)
    assert tally.summary() == NO_PODS and len(tally) == 0


def pytorch_job(name: str = "train", uid: str = "job-uid", namespace: str = "ns") -> Obj:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}},
        "status": {"conditions": [{"type": "Running", "status": "True"}]},
    }


def test_the_watch_keeps_each_rows_summary_from_pod_events_in_any_order() -> None:
    w = JobWatch(cast(Any, None), [PT])
    key = (PT.group, PT.plural, "ns", "train")
    healthy = owned(pod("train-worker-0", containers=(running(),)))
    w._on_pod(healthy)  # a pod before its job
    w._on_job(PT)(pytorch_job())
    assert w.rows[key].pods.text == "1 Running"
    seq = w.hub.seq
    crashing = owned(pod("train-worker-1", containers=(crash_looping(),)))
    w._on_pod(crashing)
    assert w.rows[key].pods.text == "1 CrashLoopBackOff · 1 Running"
    assert w.hub.seq == seq + 1  # the list's live update is told
    w._on_job(PT)(pytorch_job())  # the job changes: its new row keeps the summary
    assert w.rows[key].pods.failing == 1
    w._on_pod_delete(crashing)
    w._on_pod_delete(healthy)
    assert w.rows[key].pods == NO_PODS and w.pod_tallies == {}
    # another job's pod leaves this row alone
    w._on_pod(owned(pod("other-0", containers=(crash_looping(),)), job_uid="other"))
    assert w.rows[key].pods == NO_PODS


def row(name: str, pods: list[Obj], namespace: str = "ns", created: int = 0) -> joblist.JobRow:
    base = joblist.job_row(PT, pytorch_job(name, uid=name, namespace=namespace))
    return replace(base, created=float(created), pods=summary_of(pod_state(p) for p in pods))


def scene() -> list[joblist.JobRow]:
    ok = pod("a", containers=(running(),))
    return [
        row("healthy", [ok, ok], created=5),
        row("crashing", [ok, pod("b", containers=(crash_looping(),))], created=1),
        row("two-crashing", [pod("b", containers=(crash_looping(),))] * 2, created=2),
        row("unschedulable", [pod("c", phase="Pending", conditions=(UNSCHEDULABLE,))], created=3),
        row("no-pods", [], created=4),
        row("elsewhere", [pod("b", containers=(crash_looping(),))], namespace="other", created=6),
    ]


def test_sort_by_pods_puts_the_jobs_with_the_most_failing_pods_first() -> None:
    page = joblist.build_page(scene(), joblist.ListQuery(sort="pods"))
    assert [r.name for r in page.rows] == [
        "two-crashing",
        "elsewhere",
        "crashing",
        "unschedulable",
        "healthy",
        "no-pods",
    ]
    ascending = joblist.build_page(scene(), joblist.ListQuery(sort="pods", descending=False))
    assert [r.name for r in ascending.rows][-1] == "two-crashing"


def test_the_pods_filter_keeps_the_jobs_with_a_pod_not_working_and_counts_them() -> None:
    everything = joblist.build_page(scene(), joblist.ListQuery())
    assert everything.total == 6 and everything.not_working == 4
    page = joblist.build_page(scene(), joblist.ListQuery(pods="not-working"))
    assert {r.name for r in page.rows} == {"crashing", "two-crashing", "unschedulable", "elsewhere"}
    assert page.state_counts == {"Running": 4} and page.not_working == 4
    one_ns = joblist.build_page(scene(), joblist.ListQuery(namespace="other", pods="not-working"))
    assert [r.name for r in one_ns.rows] == ["elsewhere"] and one_ns.not_working == 1


def test_pod_summaries_count_only_where_the_user_may_list_pods() -> None:
    page = joblist.build_page(scene(), joblist.ListQuery(pods="not-working", sort="pods"), {"ns"})
    assert "elsewhere" not in {r.name for r in page.rows} and page.not_working == 3
    everything = joblist.build_page(scene(), joblist.ListQuery(sort="pods"), {"ns"})
    hidden = next(r for r in everything.rows if r.name == "elsewhere")
    assert not everything.shows_pods(hidden)
    assert [r.name for r in everything.rows][:2] == ["two-crashing", "crashing"]


def test_a_bad_pods_parameter_names_what_is_valid() -> None:
    query, errors = joblist.parse_query({"pods": "broken"}, KINDS)
    assert query.pods == "" and errors == [
        'pods: "broken" is not a pod filter (valid: not-working, or empty for all)'
    ]
    query, errors = joblist.parse_query({"pods": "not-working", "sort": "pods"}, KINDS)
    assert not errors and (query.pods, query.sort) == ("not-working", "pods")
    assert query.params(page=1) == {"pods": "not-working", "sort": "pods"}


class Reviews:
    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.asked: list[str] = []

    async def can(self, *, verb: str, group: str, resource: str, namespace: str = "", **_: Any) -> bool:
        assert (verb, group, resource) == ("list", "", "pods")
        self.asked.append(namespace)
        return namespace in self.allowed


async def test_pod_namespaces_asks_cluster_wide_first_then_per_namespace() -> None:
    everywhere = Reviews({""})
    rows = [row("x", [], namespace="a"), row("y", [], namespace="b"), row("z", [], namespace="a")]
    assert await AccessCache().pod_namespaces(everywhere, Credentials(token="a"), rows) is None  # type: ignore[arg-type]
    assert everywhere.asked == [""]
    some = Reviews({"a"})
    assert await AccessCache().pod_namespaces(some, Credentials(token="a"), rows) == {"a"}  # type: ignore[arg-type]
    assert sorted(some.asked) == ["", "a", "b"]
