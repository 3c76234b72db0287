"""The job page's finished indexes (status.completedIndexes): the per-type line a user reads and
the pod-table rows for a finished index whose pod is gone."""

from __future__ import annotations

from typing import Any

from kubetrain.api.labels import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from kubetrain.dashboard.views import finishedindexes
from kubetrain.dashboard.views.finishedindexes import GoneIndex


def a_job(completed: object, replicas: dict[str, int]) -> dict[str, Any]:
    specs = {t: {"replicas": n, "template": {"spec": {"containers": []}}} for t, n in replicas.items()}
    status = {} if completed is None else {"completedIndexes": completed}
    return {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": specs}, "status": status}


def a_pod(rtype: str, index: int) -> dict[str, Any]:
    labels = {LABEL_REPLICA_TYPE: rtype.lower(), LABEL_REPLICA_INDEX: str(index)}
    return {"metadata": {"name": f"j-{rtype.lower()}-{index}", "labels": labels}}


def test_each_type_reads_its_finished_indexes_as_runs_with_a_count() -> None:
    job = a_job({"Master": "0", "Worker": "0,2-3"}, {"Master": 1, "Worker": 5})
    found = finishedindexes.finished(job, [], 100)
    assert [line.text for line in found.lines] == [
        "Master: finished index 0 (1 of 1)",
        "Worker: finished indexes 0, 2\u20133 (3 of 5)",
    ]


def test_a_finished_index_without_a_pod_is_a_gone_row_and_one_with_a_pod_is_not() -> None:
    job = a_job({"Worker": "0-3"}, {"Master": 1, "Worker": 4})
    pods = [a_pod("Master", 0), a_pod("Worker", 0), a_pod("Worker", 2)]
    found = finishedindexes.finished(job, pods, 100)
    assert found.gone == (GoneIndex("Worker", 1), GoneIndex("Worker", 3))
    assert [g.label for g in found.gone] == ["Worker 1", "Worker 3"]
    assert found.gone_more == 0


def test_gone_rows_stop_at_the_room_left_and_count_the_rest() -> None:
    job = a_job({"Worker": "0-9"}, {"Worker": 10})
    found = finishedindexes.finished(job, [a_pod("Worker", 0)], 3)
    assert [g.index for g in found.gone] == [1, 2, 3]
    assert found.gone_more == 6
    assert finishedindexes.finished(job, [], 0).gone == ()


def test_nothing_shows_without_a_record_and_bad_parts_or_types_are_dropped() -> None:
    assert finishedindexes.finished(a_job(None, {"Worker": 2}), [], 10) == finishedindexes.NONE
    assert finishedindexes.finished(a_job({}, {"Worker": 2}), [], 10) == finishedindexes.NONE
    # a type the spec does not name, an index past replicas, a descending range, a non-number
    job = a_job({"Ghost": "0", "Worker": "x,3-1,1-99,\uff11"}, {"Worker": 3})
    found = finishedindexes.finished(job, [], 10)
    assert [(line.replica_type, line.indexes) for line in found.lines] == [("Worker", (1, 2))]
    assert finishedindexes.finished(a_job({"Worker": "5"}, {"Worker": 3}), [], 10).lines == ()


def test_ranges_join_runs_with_an_en_dash() -> None:
    assert finishedindexes.ranges([5, 0, 1, 2, 7, 8]) == "0\u20132, 5, 7\u20138"
    assert finishedindexes.ranges([]) == ""
