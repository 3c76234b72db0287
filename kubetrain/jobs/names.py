"""Job name rules (docs/behaviour.md §3): `metadata.name` (or `generateName`) is a DNS-1035
label, short enough that every pod name it leads to is a host name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.dnsnames import DNS1035_LABEL, MAX_LABEL_LENGTH
from kubetrain.api.errors import QUOTE, FieldError, invalid, required

# generateName gets 5 random characters appended by the API server.
GENERATED_SUFFIX_LENGTH = 5


def name_errors(metadata: Any, most: Mapping[Any, int]) -> list[FieldError]:
    """The job's name against the longest pod name it leads to (`most`: the most pods each
    replica type can have, a scalable type at its maximum)."""
    if not isinstance(metadata, dict):
        return [required("metadata.name", "a job needs a name (a DNS-1035 label)")]
    name = metadata.get("name")
    path = "metadata.name"
    budget_reserve = 0
    if not name:
        generate = metadata.get("generateName")
        if not isinstance(generate, str) or not generate:
            return [required(path, "a job needs a name (a DNS-1035 label) or metadata.generateName")]
        path, name, budget_reserve = "metadata.generateName", generate + "x" * GENERATED_SUFFIX_LENGTH, 5
    if not isinstance(name, str):
        return [invalid(path, "must be a string")]
    shown = name[: len(name) - budget_reserve] if budget_reserve else name
    if len(name) > MAX_LABEL_LENGTH or not DNS1035_LABEL.match(name):
        return [
            invalid(
                path,
                f"{QUOTE.encode(shown)} is not a DNS-1035 label: at most {MAX_LABEL_LENGTH - budget_reserve} "
                "lower-case "
                "letters, digits and '-', starting with a letter and ending with a letter or digit",
            )
        ]
    longest = ""
    for rtype, replicas in most.items():
        pod = f"{name}-{str(rtype).lower()}-{max(replicas - 1, 0)}"
        if len(pod) > len(longest):
            longest = pod
    if len(longest) > MAX_LABEL_LENGTH:
        allowed = MAX_LABEL_LENGTH - (len(longest) - len(name)) - budget_reserve
        return [
            invalid(
                path,
                f"{QUOTE.encode(shown)} is too long: the pod name {QUOTE.encode(longest)} would be "
                f"{len(longest)} characters "
                f"(pod names are host names: at most {MAX_LABEL_LENGTH}); use at most {max(allowed, 0)} "
                "characters for this job",
            )
        ]
    return []
