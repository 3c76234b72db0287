"""Host network mode (docs/behaviour.md §4): a job annotated `kubetrain.io/network-mode: host` runs
its pods with `hostNetwork: true`, so every pod needs a port of its own on its node.

Ports are chosen per pod, deterministically, from the job's range (`kubetrain.io/host-port-range`,
default 20000-29999): the job's pods take consecutive ports (in replica priority order, wrapping
around the range) from an offset that a hash of `namespace/name` picks, so different jobs start at
different places of the range, and every pod's cluster env (TF_CONFIG, MASTER_PORT, MX_CONFIG, …)
can name every other pod's port without asking the cluster. The pod declares its port as
`containerPort` and `hostPort` both: the scheduler then never places two pods that claim the same
port on one node (its NodePorts filter), whichever job they belong to. KubeDL's annotation
`kubedl.io/network-mode: host` turns the same mode on (either name works; both are validated). Pure.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import FieldError, invalid, not_supported
from kubetrain.api.labels import (
    ANNOTATION_HOST_PORT_RANGE,
    ANNOTATION_NETWORK_MODE,
    KUBEDL_ANNOTATION_NETWORK_MODE,
    NETWORK_MODE_HOST,
)

DEFAULT_PORT_RANGE = (20000, 29999)
NETWORK_MODES = (NETWORK_MODE_HOST,)
NETWORK_MODE_ANNOTATIONS = (ANNOTATION_NETWORK_MODE, KUBEDL_ANNOTATION_NETWORK_MODE)
_RANGE = re.compile(r"^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$")


def job_annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    value = meta.get("annotations") if isinstance(meta, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def is_host_network(obj: Mapping[str, Any]) -> bool:
    values = job_annotations(obj)
    return any(values.get(key) == NETWORK_MODE_HOST for key in NETWORK_MODE_ANNOTATIONS)


def parse_port_range(value: Any) -> tuple[int, int] | str:
    """(first, last) of a `FIRST-LAST` range, or what is wrong with it."""
    match = _RANGE.match(value) if isinstance(value, str) else None
    if match is None:
        return f"{value!r} is not a port range: use FIRST-LAST, e.g. 20000-29999"
    first, last = int(match.group(1)), int(match.group(2))
    if not 1 <= first <= last <= 65535:
        return f"{value!r}: ports must satisfy 1 <= FIRST <= LAST <= 65535"
    return first, last


def port_range(obj: Mapping[str, Any]) -> tuple[int, int]:
    """The job's host port range (the default when the annotation is unset or invalid)."""
    raw = job_annotations(obj).get(ANNOTATION_HOST_PORT_RANGE)
    parsed = parse_port_range(raw) if raw is not None else DEFAULT_PORT_RANGE
    return parsed if isinstance(parsed, tuple) else DEFAULT_PORT_RANGE


def assign_ports(
    namespace: str, name: str, slots: list[tuple[str, int]], first: int, last: int
) -> dict[tuple[str, int], int]:
    """The port of each pod slot (type, index), given in priority order."""
    span = last - first + 1
    offset = zlib.crc32(f"{namespace}/{name}".encode()) % span
    return {slot: first + (offset + i) % span for i, slot in enumerate(slots)}


def annotation_errors(obj: Mapping[str, Any], total_replicas: int | None) -> list[FieldError]:
    """Problems of the network-mode and host-port-range annotations of a job."""
    values = job_annotations(obj)
    errors: list[FieldError] = []
    base = "metadata.annotations"
    for key in NETWORK_MODE_ANNOTATIONS:
        mode = values.get(key)
        if mode is not None and mode not in NETWORK_MODES:
            errors.append(not_supported(f"{base}[{key}]", mode, NETWORK_MODES))
    raw = values.get(ANNOTATION_HOST_PORT_RANGE)
    if raw is None:
        return errors
    parsed = parse_port_range(raw)
    path = f"{base}[{ANNOTATION_HOST_PORT_RANGE}]"
    if isinstance(parsed, str):
        errors.append(invalid(path, parsed))
    elif total_replicas is not None and parsed[1] - parsed[0] + 1 < total_replicas:
        errors.append(
            invalid(
                path,
                f"{raw!r} has {parsed[1] - parsed[0] + 1} ports, fewer than the job's {total_replicas} pods",
            )
        )
    return errors
