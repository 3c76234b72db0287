"""The node lifecycle controller's health monitor decisions (controllers/nodehealth.py, after
node_lifecycle_controller.go `tryUpdateNodeHealth`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.controllers.nodehealth import Health, observe, unknown_conditions

WALL = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
READY = {
    "type": "Ready",
    "status": "True",
    "reason": "KubeletReady",
    "message": "kubelet is posting ready status",
    "lastHeartbeatTime": "2026-01-02T03:00:00Z",
    "lastTransitionTime": "2026-01-02T02:00:00Z",
}
NETWORK = {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}


def node(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"conditions": [dict(c) for c in conditions]},
    }


def test_the_probe_moves_only_on_a_later_lease_renewal_or_a_new_heartbeat() -> None:
    first = observe(None, node(READY), "2026-01-02T03:00:00.000000Z", 10.0)
    assert first.probe == 10.0  # first sight
    assert observe(first, node(READY), "2026-01-02T03:00:00.000000Z", 30.0).probe == 10.0
    assert observe(first, node(READY), "2026-01-02T02:59:00.000000Z", 30.0).probe == 10.0  # older
    assert observe(first, node(READY), "2026-01-02T03:00:10.500000Z", 30.0).probe == 30.0
    beat = {**READY, "lastHeartbeatTime": "2026-01-02T03:00:20Z"}
    assert observe(first, node(beat), "2026-01-02T03:00:00.000000Z", 40.0).probe == 40.0


def test_within_the_grace_period_nothing_changes() -> None:
    assert unknown_conditions(node(READY), Health(0.0, None, None), 50.0, WALL) is None  # not After


def test_past_the_grace_period_the_kubelet_conditions_go_unknown() -> None:
    pressure = {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-01-02T03:00:00Z"}
    conditions = unknown_conditions(node(READY, pressure, NETWORK), Health(0.0, None, None), 50.5, WALL)
    assert conditions is not None
    by_type = {c["type"]: c for c in conditions}
    assert by_type["Ready"] == {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": "2026-01-02T03:00:00Z",  # the kubelet's last, kept
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    assert by_type["MemoryPressure"]["status"] == "Unknown"
    assert by_type["NetworkUnavailable"] == NETWORK  # managed by the control plane: untouched
    for kind in ("DiskPressure", "PIDPressure"):  # never posted: added
        assert by_type[kind] == {
            "type": kind,
            "status": "Unknown",
            "reason": "NodeStatusNeverUpdated",
            "message": "Kubelet never posted node status.",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-02T03:04:05Z",
        }
    # already Unknown everywhere: nothing more to write, the transition time stays
    assert unknown_conditions(node(*conditions), Health(0.0, None, None), 500.0, WALL) is None


def test_a_node_that_never_posted_ready_gets_the_startup_grace_period() -> None:
    assert unknown_conditions(node(), Health(0.0, None, None), 59.0, WALL) is None
    conditions = unknown_conditions(node(), Health(0.0, None, None), 61.0, WALL)
    assert conditions is not None
    assert [(c["type"], c["reason"]) for c in conditions] == [
        ("Ready", "NodeStatusNeverUpdated"),
        ("MemoryPressure", "NodeStatusNeverUpdated"),
        ("DiskPressure", "NodeStatusNeverUpdated"),
        ("PIDPressure", "NodeStatusNeverUpdated"),
    ]
