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
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid, not_supported
from kubetrain.api.labels import (
    ANNOTATION_HOST_PORT_RANGE,
    ANNOTATION_NETWORK_MODE,
    KUBEDL_ANNOTATION_NETWORK_MODE,
    NETWORK_MODE_HOST,
    annotations_of,
)

DEFAULT_PORT_RANGE = (20000, 29999)
NETWORK_MODES = (NETWORK_MODE_HOST,)
NETWORK_MODE_ANNOTATIONS = (ANNOTATION_NETWORK_MODE, KUBEDL_ANNOTATION_NETWORK_MODE)
_RANGE = re.compile(r"^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$")


@dataclass(frozen=True)
class HostNetwork:
    """A job's host-network annotations, read once (`read_host_network`): whether the mode is
    on, the port range its pods take (the default when the annotation is unset or invalid), and
    what is wrong with the annotations themselves."""

    enabled: bool = False
    port_range: tuple[int, int] = DEFAULT_PORT_RANGE
    written_range: Any = None  # the host-port-range annotation as written, when valid
    errors: tuple[FieldError, ...] = ()

    def errors_for(self, total_replicas: int | None) -> list[FieldError]:
        """The annotations' problems, and a valid range with fewer ports than the job's pods."""
        errors = list(self.errors)
        first, last = self.port_range
        if (
            self.written_range is not None
            and total_replicas is not None
            and last - first + 1 < total_replicas
        ):
            errors.append(
                invalid(
                    f"metadata.annotations[{ANNOTATION_HOST_PORT_RANGE}]",
                    f"{QUOTE.encode(self.written_range)} has {last - first + 1} ports, fewer than the job's "
                    f"{total_replicas} pods",
                )
            )
        return errors


def read_host_network(annotations: Mapping[str, Any]) -> HostNetwork:
    """The host-network annotations of a job (its `metadata.annotations`), parsed."""
    errors: list[FieldError] = []
    base = "metadata.annotations"
    for key in NETWORK_MODE_ANNOTATIONS:
        mode = annotations.get(key)
        if mode is not None and mode not in NETWORK_MODES:
            errors.append(not_supported(f"{base}[{key}]", mode, NETWORK_MODES))
    enabled = any(annotations.get(key) == NETWORK_MODE_HOST for key in NETWORK_MODE_ANNOTATIONS)
    raw = annotations.get(ANNOTATION_HOST_PORT_RANGE)
    if raw is None:
        return HostNetwork(enabled, DEFAULT_PORT_RANGE, None, tuple(errors))
    parsed = parse_port_range(raw)
    if isinstance(parsed, str):
        errors.append(invalid(f"{base}[{ANNOTATION_HOST_PORT_RANGE}]", parsed))
        return HostNetwork(enabled, DEFAULT_PORT_RANGE, None, tuple(errors))
    return HostNetwork(enabled, parsed, raw, tuple(errors))


def parse_port_range(value: Any) -> tuple[int, int] | str:
    """(first, last) of a `FIRST-LAST` range, or what is wrong with it."""
    match = _RANGE.match(value) if isinstance(value, str) else None
    if match is None:
        return f"{QUOTE.encode(value)} is not a port range: use FIRST-LAST, e.g. 20000-29999"
    first, last = int(match.group(1)), int(match.group(2))
    if not 1 <= first <= last <= 65535:
        return f"{QUOTE.encode(value)}: ports must satisfy 1 <= FIRST <= LAST <= 65535"
    return first, last


def assign_ports(
    namespace: str, name: str, slots: list[tuple[str, int]], first: int, last: int
) -> dict[tuple[str, int], int]:
    """The port of each pod slot (type, index), given in priority order."""
    span = last - first + 1
    offset = zlib.crc32(f"{namespace}/{name}".encode()) % span
    return {slot: first + (offset + i) % span for i, slot in enumerate(slots)}


def annotation_errors(obj: Mapping[str, Any], total_replicas: int | None) -> list[FieldError]:
    """Problems of the network-mode and host-port-range annotations of a job."""
    return read_host_network(annotations_of(obj)).errors_for(total_replicas)
