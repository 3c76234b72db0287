"""A pod's observedGeneration as Kubernetes 1.35+ keeps it: kube-apiserver's pods/status rule
(`preserveOldObservedGeneration`), what the simulated kubelet and scheduler write, and when the
kubelet writes again after a spec update."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds.podgeneration import preserve_observed_generation
from kubetrain.devcluster.kubelet import fit, podstatus

GATE = "example.com/Gate"


def cond(kind: str, generation: int | None = None, **fields: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"type": kind, "status": "True", **fields}
    if generation is not None:
        c["observedGeneration"] = generation
    return c


def pod_with(status: dict[str, Any], generation: int | None = 3, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "uid": "u1", **meta}
    if generation is not None:
        metadata["generation"] = generation
    return {"metadata": metadata, "spec": {"nodeName": "n"}, "status": status}


def preserved(new_status: dict[str, Any], old_status: dict[str, Any]) -> dict[str, Any]:
    new = {"metadata": {}, "status": new_status}
    preserve_observed_generation(new, {"metadata": {}, "status": old_status})
    return dict(new["status"])


# -- kube-apiserver: pods/status keeps what a write leaves out --------------------------------------


def test_a_status_write_without_observed_generation_keeps_the_stored_one() -> None:
    assert preserved({"phase": "Running"}, {"observedGeneration": 4})["observedGeneration"] == 4
    assert preserved({"observedGeneration": 0}, {"observedGeneration": 4})["observedGeneration"] == 4
    assert preserved({"observedGeneration": None}, {"observedGeneration": 4})["observedGeneration"] == 4


def test_a_status_write_that_sets_observed_generation_wins_even_going_back() -> None:
    assert preserved({"observedGeneration": 2}, {"observedGeneration": 4})["observedGeneration"] == 2


def test_a_zero_with_nothing_stored_is_not_kept() -> None:
    status = preserved({"observedGeneration": 0, "conditions": [cond("Ready", 0)]}, {})
    assert "observedGeneration" not in status
    assert "observedGeneration" not in status["conditions"][0]


def test_conditions_keep_their_stored_value_by_type() -> None:
    old = {"conditions": [cond("Ready", 2), cond("PodScheduled", 1)]}
    new = {"conditions": [cond("PodScheduled"), cond("Ready", status="False"), cond("Initialized")]}
    got = {c["type"]: c.get("observedGeneration") for c in preserved(new, old)["conditions"]}
    assert got == {"PodScheduled": 1, "Ready": 2, "Initialized": None}


def test_several_conditions_of_one_type_take_the_stored_values_in_order() -> None:
    old = {"conditions": [cond(GATE, 3), cond("Ready", 9), cond(GATE, 5)]}
    new = {"conditions": [cond(GATE), cond(GATE), cond(GATE)]}
    assert [c.get("observedGeneration") for c in preserved(new, old)["conditions"]] == [3, 5, None]


def test_a_condition_that_sets_its_own_value_still_uses_up_its_stored_entry() -> None:
    old = {"conditions": [cond(GATE, 3), cond(GATE, 5)]}
    new = {"conditions": [cond(GATE, 7), cond(GATE)]}
    assert [c.get("observedGeneration") for c in preserved(new, old)["conditions"]] == [7, 5]


# -- the simulated kubelet: the generation it acted on ------------------------------------------------


def test_the_kubelet_observes_the_generation_on_its_status_and_its_own_conditions() -> None:
    status = {
        "phase": "Failed",
        "conditions": [
            cond("PodReadyToStartContainers", status="False"),
            cond("Initialized"),
            cond("Ready", 1, status="False"),
            cond("ContainersReady", status="False"),
            cond("PodScheduled"),
            cond("DisruptionTarget", reason="TerminationByKubelet"),
            cond(GATE, 1),
        ],
    }
    out = podstatus.observed(pod_with({}, generation=3), status)
    assert out["observedGeneration"] == 3
    got = {c["type"]: c.get("observedGeneration") for c in out["conditions"]}
    assert got == {
        "PodReadyToStartContainers": 3,
        "Initialized": 3,
        "Ready": 3,
        "ContainersReady": 3,
        "PodScheduled": 3,
        "DisruptionTarget": 3,
        GATE: 1,  # a readiness gate's condition is its controller's
    }
    assert "observedGeneration" not in status  # the given status is not changed


def test_a_disruption_target_set_by_another_controller_keeps_its_generation() -> None:
    status = {"conditions": [cond("DisruptionTarget", 2, reason="DeletionByTaintManager")]}
    out = podstatus.observed(pod_with({}, generation=3), status)
    assert out["conditions"][0]["observedGeneration"] == 2


def test_a_pod_without_a_generation_gets_none() -> None:
    status = {"phase": "Running", "conditions": [cond("Ready")]}
    assert podstatus.observed(pod_with({}, generation=None), status) == status


def test_a_spec_update_is_observed_only_where_the_kubelet_wrote_and_the_pod_goes_on() -> None:
    running = {"phase": "Running", "hostIP": "10.0.0.1", "observedGeneration": 1}
    assert podstatus.unobserved_generation(pod_with(running, generation=2)) == 2
    assert podstatus.unobserved_generation(pod_with(running, generation=1)) is None
    assert podstatus.unobserved_generation(pod_with({"phase": "Pending"}, generation=2)) is None
    ended = {**running, "phase": "Succeeded"}
    assert podstatus.unobserved_generation(pod_with(ended, generation=2)) is None
    deleting = pod_with(running, generation=2, deletionTimestamp="2026-01-01T00:00:00Z")
    assert podstatus.unobserved_generation(deleting) is None


# -- the simulated scheduler: PodScheduled=False observes the generation -------------------------------


def test_the_unschedulable_condition_observes_the_generation_and_is_not_rewritten_for_it() -> None:
    pod = pod_with({"phase": "Pending"}, generation=1)
    status = fit.unschedulable_status(pod, "0/2 nodes are available: x.", "2026-01-01T00:00:00Z")
    assert status is not None
    (scheduled,) = status["conditions"]
    assert scheduled["observedGeneration"] == 1
    assert "observedGeneration" not in status  # the scheduler does not write the pod's
    # a spec update alone does not make kube-scheduler write the same condition again
    later = pod_with(status, generation=2)
    assert fit.unschedulable_status(later, "0/2 nodes are available: x.", "2026-01-01T00:05:00Z") is None
    moved = fit.unschedulable_status(later, "0/2 nodes are available: y.", "2026-01-01T00:05:00Z")
    assert moved is not None and moved["conditions"][0]["observedGeneration"] == 2
