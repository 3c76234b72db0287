"""The dashboard's Restarts column for a TrainJob without pods: the run's record (the runtime
snapshot ConfigMap's `data.state`, `restarts` and `jobRestarts`), read from the dashboard's
informer of the snapshot ConfigMaps (`views/runrecord.py`), counts where the pods' labels are
gone — a dashboard started between attempts, or after a finished TrainJob's pods were
removed — and the higher of each count wins when both are seen."""

from __future__ import annotations

import copy
import json
from typing import Any

from trainjobs import RUNTIME, UID

from kubetrain.dashboard.views import runrecord
from kubetrain.dashboard.views.kinds import TRAINJOB
from kubetrain.jobs.trainjob import children as ch

from .test_dashboard_trainjob_restarts import pods_of_run, row, train_job, watch

Obj = dict[str, Any]


def snapshot(state: Obj, runtime: Obj = RUNTIME) -> Obj:
    """The operator's snapshot ConfigMap of TrainJob ns/tj with the run's record `state`, as the
    API server stores it, through the dashboard's informer transform."""
    cm = ch.build_snapshot(train_job(), runtime, state)
    cm["metadata"]["ownerReferences"][0]["uid"] = UID
    cm["metadata"].update(uid="cm-uid", resourceVersion="7", managedFields=[{"manager": "kubetrain"}])
    return runrecord.slim_snapshot(cm)


def test_a_trainjob_without_pods_reads_its_recorded_restarts_in_either_order() -> None:
    state = {"restarts": 2, "countedRestarts": 1, "jobRestarts": {"node": [1]}, "failures": {}}
    w = watch()
    w._on_job(TRAINJOB)(train_job())
    assert row(w).restarts == 0
    w._on_record(snapshot(state))
    assert row(w).restarts == 3  # two whole-gang restarts and one of the node Job alone
    # a dashboard started later: the informers list the ConfigMap before the TrainJob
    w = watch()
    w._on_record(snapshot(state))
    w._on_job(TRAINJOB)(train_job())
    assert row(w).restarts == 3


def test_the_record_and_the_pods_each_count_and_the_higher_wins() -> None:
    w = watch()
    w._on_job(TRAINJOB)(train_job())
    for pod in pods_of_run(4):
        w._on_pod(pod)
    w._on_record(snapshot({"restarts": 3}))  # an older record than the pods (not yet seen anew)
    assert row(w).restarts == 4
    w._on_record(snapshot({"restarts": 5}))  # the next attempt, before its pods come
    assert row(w).restarts == 5
    for pod in pods_of_run(4):
        w._on_pod_delete(pod)
    assert row(w).restarts == 5
    w._on_record_delete(snapshot({"restarts": 5}))  # garbage-collected: back to what the pods told
    assert row(w).restarts == 4


def test_the_informer_keeps_only_the_restart_counts_of_a_snapshot() -> None:
    state = {
        "restarts": 1,
        "countedRestarts": 1,
        "failures": {"node": 2},
        "restartedAt": "2026-11-26T11:00:00Z",
    }
    cm = snapshot(state)
    assert cm["data"] == {"state": json.dumps({"restarts": 1})}
    assert "managedFields" not in cm["metadata"] and cm["metadata"]["resourceVersion"] == "7"
    assert runrecord.recorded(cm) is not None
    # another child ConfigMap of a TrainJob (its label matches the selector) keeps no data
    other = copy.deepcopy(ch.build_snapshot(train_job(), RUNTIME, state))
    other["metadata"]["name"] = "tj-flux-entrypoint"
    other = runrecord.slim_snapshot(other)
    assert other["data"] == {} and runrecord.recorded(other) is None
    assert runrecord.SELECTOR == "kubetrain.io/job-kind=TrainJob"


def test_unreadable_or_odd_counts_read_as_none() -> None:
    for state in ({"restarts": "x"}, {"restarts": -1}, {"restarts": True}, {"jobRestarts": {"node": "1"}}):
        recorded = runrecord.recorded(snapshot(state))
        assert recorded is not None and recorded[1].total == 0, state
    broken = snapshot({"restarts": 1})
    broken["data"]["state"] = "{not json"
    recorded = runrecord.recorded(broken)
    assert recorded is not None and recorded[1].total == 0
    orphan = snapshot({"restarts": 1})
    orphan["metadata"]["ownerReferences"] = []
    assert runrecord.recorded(orphan) is None


def test_recorded_single_job_restarts_are_keyed_by_their_jobs_name() -> None:
    """As the pods' `batch.kubernetes.io/job-name` keys them, so one restart counts once."""
    from .test_trainjob_restartjob import rule
    from .test_trainjob_restartjob import runtime as restart_job_runtime

    rt = restart_job_runtime(rule("RestartJob", "warmup"), max_restarts=5)
    recorded = runrecord.recorded(snapshot({"restarts": 1, "jobRestarts": {"warmup": [0, 2, 0]}}, rt))
    assert recorded is not None
    uid, tally = recorded
    assert (uid, tally.gang, tally.jobs, tally.total) == (UID, 1, {"tj-warmup-1": 2}, 3)


def test_a_dashboard_refused_configmaps_counts_from_the_pods_alone() -> None:
    """Without the right to list ConfigMaps (403) the informer is reported and left out: the job
    kinds stay served and the column counts what the pods tell."""
    from kubetrain.kube.client import ApiError
    from kubetrain.kube.resources import CONFIG_MAPS

    w = watch()
    w.served = list(w.kinds)
    w._forbidden("configmaps", resource=CONFIG_MAPS)(ApiError(403, "Forbidden", "configmaps is forbidden"))
    assert w.refused == {"configmaps/v1"} and w.served == w.kinds
    w._on_job(TRAINJOB)(train_job())
    for pod in pods_of_run(2):
        w._on_pod(pod)
    assert row(w).restarts == 2
