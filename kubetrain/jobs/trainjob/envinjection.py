"""A runtime's `spec.mlPolicy.torch.envInjection`: Trainer 2.3's CRD rules for it, which
kubetrain's runtime admission checks (docs/behaviour.md, "Admission"). What the field does —
the `PET_*` and master variables for the named containers — is `resolve.py`'s.

Trainer's markers (`EnvInjection`, `EnvInjectionTarget` in trainingruntime_types.go):

- `targets`: at most 16, a list map keyed by `jobName` (one target per replicated job);
- `targets[i].jobName`: required, 1 to 253 characters;
- `targets[i].containerNames`: required, 1 to 8 distinct names (a set) of at most 63
  characters, and never `node` — the CEL rule `!self.exists(c, c == 'node')` and its message:
  the trainer's `node` container always gets the variables. The rule reads the names only, so it
  holds for every target, whichever replicated job it names.

Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, duplicate, invalid, required
from kubetrain.api.trainer import constants as c

PATH = "spec.mlPolicy.torch.envInjection"
MAX_TARGETS = 16
MAX_JOB_NAME = 253
MAX_CONTAINER_NAMES = 8
MAX_CONTAINER_NAME = 63
# Trainer's CEL rule message on containerNames, word for word.
NODE_MESSAGE = (
    "containerNames must not include the main node container because PET_* envs are always injected into it"
)


def validate(ml_policy: Mapping[str, Any]) -> list[FieldError]:
    """Every problem of `mlPolicy.torch.envInjection` (none without it)."""
    torch = ml_policy.get("torch")
    injection = torch.get("envInjection") if isinstance(torch, Mapping) else None
    if not isinstance(injection, Mapping):
        return []
    targets = injection.get("targets")
    if targets is None:
        return []
    if not isinstance(targets, list):
        return [invalid(f"{PATH}.targets", "must be a list of {jobName, containerNames} targets")]
    errors: list[FieldError] = []
    if len(targets) > MAX_TARGETS:
        errors.append(
            invalid(f"{PATH}.targets", f"must have at most {MAX_TARGETS} items, not {len(targets)}")
        )
    jobs: set[str] = set()
    for i, target in enumerate(targets):
        path = f"{PATH}.targets[{i}]"
        if not isinstance(target, Mapping):
            errors.append(invalid(path, "must be an object with jobName and containerNames"))
            continue
        errors += _job_name(target.get("jobName"), f"{path}.jobName", jobs)
        errors += _container_names(target.get("containerNames"), f"{path}.containerNames")
    return errors


def _job_name(name: object, path: str, seen: set[str]) -> list[FieldError]:
    if name is None or name == "":
        return [required(path, "the replicated job whose containers get the PET_* variables")]
    if not isinstance(name, str):
        return [invalid(path, f"must be a string, not {QUOTE.encode(name)}")]
    if len(name) > MAX_JOB_NAME:
        return [invalid(path, f"must be at most {MAX_JOB_NAME} characters, not {len(name)}")]
    if name in seen:
        return [duplicate(path, f"{QUOTE.encode(name)}: another target names this replicated job")]
    seen.add(name)
    return []


def _container_names(names: object, path: str) -> list[FieldError]:
    if names is None:
        return [required(path, "1 to 8 names of containers or init containers of the replicated job")]
    if not isinstance(names, list):
        return [invalid(path, f"must be a list of container names, not {QUOTE.encode(names)}")]
    errors: list[FieldError] = []
    if not names:
        errors.append(invalid(path, f"must have at least 1 item, at most {MAX_CONTAINER_NAMES}"))
    elif len(names) > MAX_CONTAINER_NAMES:
        errors.append(invalid(path, f"must have at most {MAX_CONTAINER_NAMES} items, not {len(names)}"))
    seen: set[str] = set()
    for j, name in enumerate(names):
        if not isinstance(name, str):
            errors.append(invalid(f"{path}[{j}]", f"must be a string, not {QUOTE.encode(name)}"))
        elif len(name) > MAX_CONTAINER_NAME:
            errors.append(
                invalid(f"{path}[{j}]", f"must be at most {MAX_CONTAINER_NAME} characters, not {len(name)}")
            )
        elif name in seen:
            errors.append(duplicate(f"{path}[{j}]", QUOTE.encode(name)))
        else:
            seen.add(name)
    if c.NODE in names:
        errors.append(invalid(path, NODE_MESSAGE))
    return errors
