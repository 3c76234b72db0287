"""Setting one pod condition as upstream's `UpdatePodCondition` does (devcluster/apiserver/kinds/
podconditions.py), and which of devcluster's writers stamp the pod's generation on it as
Kubernetes 1.36 does: the taint manager's and pod GC's DisruptionTarget do, pod GC's Failed status
does, the Eviction API's DisruptionTarget and the binding's PodScheduled do not."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.apiserver.kinds.podconditions import (
    condition_observed_generation,
    pod_condition,
    update_pod_condition,
)
from kubetrain.devcluster.apiserver.verbs.subresources import _set_scheduled
from kubetrain.devcluster.controllers import noexecute, podgcplan

NOW = "2026-11-27T10:00:00Z"
EARLIER = "2026-11-27T09:00:00Z"


def disruption(**fields: Any) -> dict[str, Any]:
    return pod_condition("DisruptionTarget", "True", **fields)


def test_a_new_condition_is_appended_as_go_serializes_it() -> None:
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    new, changed = update_pod_condition(status, disruption(reason="R", observed_generation=4), NOW)
    assert changed
    assert new["conditions"][-1] == {
        "type": "DisruptionTarget",
        "observedGeneration": 4,
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": NOW,
        "reason": "R",
    }
    assert status["conditions"] == [{"type": "Ready", "status": "True"}]  # the input is kept


def test_a_condition_whose_status_stays_keeps_its_transition_time_and_is_replaced_whole() -> None:
    old = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "A",
        "message": "a",
        "observedGeneration": 2,
    }
    new, changed = update_pod_condition(
        {"conditions": [{**old, "lastTransitionTime": EARLIER}]}, disruption(), NOW
    )
    (condition,) = new["conditions"]
    assert changed  # reason and message went
    assert condition == {
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": EARLIER,
    }
    # a condition that had no transition time keeps none (Go copies the zero time)
    new, _ = update_pod_condition(
        {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}, disruption(), NOW
    )
    assert new["conditions"][0]["lastTransitionTime"] is None


def test_a_status_change_moves_the_transition_time() -> None:
    old = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "lastTransitionTime": EARLIER,
    }
    new, changed = update_pod_condition({"conditions": [old]}, pod_condition("PodScheduled", "True"), NOW)
    assert changed and new["conditions"][0]["lastTransitionTime"] == NOW
    assert "reason" not in new["conditions"][0]


def test_only_status_reason_message_and_times_count_as_a_change() -> None:
    stored = {**disruption(reason="R", observed_generation=2), "lastTransitionTime": EARLIER}
    same, changed = update_pod_condition(
        {"conditions": [stored]}, disruption(reason="R", observed_generation=5), NOW
    )
    assert not changed  # upstream's isEqual does not compare observedGeneration
    assert same["conditions"][0]["observedGeneration"] == 5  # yet the condition was replaced
    # absent, null and empty are Go's zero values alike
    bare = {"type": "DisruptionTarget", "status": "True", "reason": "", "lastTransitionTime": EARLIER}
    assert not update_pod_condition({"conditions": [bare]}, disruption(), NOW)[1]


def test_only_the_first_condition_of_the_type_is_set() -> None:
    twice = [{"type": "Ready", "status": "False"}, {"type": "Ready", "status": "False", "reason": "second"}]
    new, _ = update_pod_condition({"conditions": twice}, pod_condition("Ready", "True"), NOW)
    assert new["conditions"][0]["status"] == "True" and new["conditions"][1]["reason"] == "second"


def test_the_generation_observed_is_the_pods_and_none_without_one() -> None:
    assert condition_observed_generation(3) == 3
    for missing in (None, 0, True, "3"):
        assert condition_observed_generation(missing) == 0
    assert "observedGeneration" not in disruption(observed_generation=0)


def test_pod_gc_stamps_the_generation_on_the_failed_status_and_its_condition() -> None:
    """gc_controller.go: `gcOrphaned`'s condition carries
    `CalculatePodConditionObservedGeneration`, `markFailedAndDeletePodWithCondition` sets
    `status.observedGeneration` to `CalculatePodStatusObservedGeneration`."""
    pod = {
        "metadata": {"name": "w", "namespace": "ns", "uid": "u", "generation": 3},
        "spec": {"nodeName": "gone"},
        "status": {"phase": "Running", "observedGeneration": 2},
    }
    (deletion,) = podgcplan.plan([pod], {}, {"gone"}, threshold=12500)
    assert deletion.generation == 3
    when = datetime(2026, 11, 27, 10, tzinfo=UTC)
    status = podgcplan.failed_status(pod["status"], deletion.condition, when, deletion.generation)
    assert status is not None
    assert status["phase"] == "Failed" and status["observedGeneration"] == 3
    (condition,) = status["conditions"]
    assert (condition["reason"], condition["observedGeneration"]) == ("DeletionByPodGC", 3)
    assert podgcplan.failed_status(status, deletion.condition, when, deletion.generation) is None


def test_the_taint_managers_condition_observes_the_generation() -> None:
    (condition,) = noexecute.add_condition({}, datetime(2026, 11, 27, 10, tzinfo=UTC), generation=7) or []
    assert condition["observedGeneration"] == 7 and condition["reason"] == "DeletionByTaintManager"


def test_the_binding_replaces_the_unschedulable_condition_without_a_generation() -> None:
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available",
        "observedGeneration": 1,
        "lastTransitionTime": EARLIER,
    }
    pod: dict[str, Any] = {"metadata": {"generation": 1}, "status": {"conditions": [unschedulable]}}
    _set_scheduled(pod, NOW)
    assert pod["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW}
    ]
