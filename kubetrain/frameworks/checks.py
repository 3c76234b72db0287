"""Small helpers the frameworks' `validate_spec` rules share (pure)."""

from __future__ import annotations

from kubetrain.api.common import ReplicaSpec


def replica_path(base_path: str, replica_field: str, replica_type: str) -> str:
    """`spec.tfReplicaSpecs[Worker]`."""
    return f"{base_path}.{replica_field}[{replica_type}]"


def replica_count(spec: ReplicaSpec | None) -> int:
    """Desired pods of one replica type: 0 when the type is absent, 1 when `replicas` is unset."""
    if spec is None:
        return 0
    return 1 if spec.replicas is None else spec.replicas


def listing(names: tuple[str, ...] | list[str]) -> str:
    """`Scheduler, Server and Worker`."""
    items = list(names)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
