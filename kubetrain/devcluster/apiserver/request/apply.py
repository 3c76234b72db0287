"""Server-side apply (`PATCH` with `application/apply-patch+yaml`) as decisions: the merge of an
applied configuration into the live object, the pruning of what the applier stopped applying,
and the conflicts with other managers — structured-merge-diff's `merge.Updater.Apply` under
k8s.io/apimachinery's field manager (pure: the caller reads and writes the store).

```python
merged, managed = apply(live, config, t, managed, key, "v1", force=False, now=ts)  # ApiError 409
check_options(t_field_manager, force, is_apply=True)                            # ApiError 422
```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fieldpaths
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldSet, Path
from kubetrain.devcluster.apiserver.kinds.managedfields import (
    FIELD_MANAGER_MAX_LENGTH,
    STRIPPED,
    Entry,
    Managed,
    ManagerKey,
    Others,
    cap_updates,
    manager_text,
    printable,
    remove_from_others,
)
from kubetrain.devcluster.apiserver.kinds.smdschema import Type
from kubetrain.devcluster.apiserver.kinds.typedvalue import compare, merge, remove_items, to_field_set


def check_options(field_manager: str, force: bool | None, *, is_apply: bool) -> None:
    """`ValidatePatchOptions`: 422 on `PatchOptions.meta.k8s.io`."""
    causes: list[Cause] = []
    if is_apply and not field_manager:
        causes.append(
            Cause("FieldValueRequired", "Required value: is required for apply patch", "fieldManager")
        )
    if not is_apply and force is not None:
        causes.append(
            Cause("FieldValueForbidden", "Forbidden: may not be specified for non-apply patch", "force")
        )
    causes += manager_causes(field_manager)
    if causes:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", causes)


def manager_causes(field_manager: str) -> list[Cause]:
    """`ValidateFieldManager`: at most 128 bytes, printable characters only."""
    causes: list[Cause] = []
    if len(field_manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(Cause("FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager"))
    for i, ch in enumerate(field_manager):
        if not printable(ch):
            text = f"U+{ord(ch):04X}"
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_go_quote(field_manager)}: invalid character {text} (at position {i})",
                    "fieldManager",
                )
            )
    return causes


def _go_quote(s: str) -> str:
    return '"' + s.encode("unicode_escape").decode().replace('"', '\\"') + '"'


def apply(
    live: Any,
    config: dict[str, Any],
    t: Type,
    managed: Managed,
    me: ManagerKey,
    api_version: str,
    *,
    force: bool,
    now: str,
    ignored: FieldSet = frozenset(),  # type: ignore[assignment]
    allowed: Callable[[], FieldSet | None] | None = None,
    others: Others | None = None,
) -> tuple[Any, Managed]:
    """`Updater.Apply` under `stripMetaManager` and `managedFieldsUpdater`: the merged object and
    the managers after it; a 409 Conflict (conflict.go `NewConflictError`) when another manager
    owns a field this changes, unless `force`. `allowed` (`lastAppliedManager`, called on a
    conflict): the fields the applier may take over; when every conflict is one of them the apply
    goes on as if forced, else only the other conflicts are reported. `others`: what the apply
    changes and removes as seen at each other apiVersion a manager has (`Updater.update` with its
    `Converter`); without it every manager is compared at `api_version`."""
    merged = merge(live, config, t)
    last = managed.get(me)
    applied = fieldpaths.recursive_difference(to_field_set(config, t), ignored) - STRIPPED
    managers = dict(managed)
    managers[me] = Entry(api_version, applied, last.time if last else None, applied=True)
    if last is not None:
        merged = _prune(merged, managers, last.fields, t)
    added, modified, removed = compare(live, merged, t)
    changed = fieldpaths.recursive_difference(added | modified, ignored)
    removed = fieldpaths.recursive_difference(removed, ignored)
    if not force:
        conflicts = [
            (k, e.api_version, p)
            for k, e in managers.items()
            if k != me
            for p in sorted(e.fields & _seen(e.api_version, api_version, changed, others))
        ]
        if conflicts and allowed is not None:
            takeable = allowed()
            if takeable is not None:
                conflicts = [c for c in conflicts if c[2] not in takeable]
        if conflicts:
            raise conflict_error(conflicts)
    managers = remove_from_others(managers, me, changed, removed, api_version, others)
    if merged != live:
        managers[me].time = now
    if not managers[me].fields:
        del managers[me]
    return merged, cap_updates(managers)


def _seen(version: str, at: str, changed: FieldSet, others: Others | None) -> FieldSet:
    if others is None or version == at:
        return changed
    seen = others.get(version)
    return seen[0] if seen is not None else set()


def _prune(merged: Any, managers: Managed, last: FieldSet, t: Type) -> Any:
    """`Updater.prune`: what the applier applied last time and no longer applies goes, unless a
    manager (the applier's new configuration included) owns it or a field under it."""
    owned: FieldSet = set()
    for e in managers.values():
        owned |= e.fields
    under_owned = {p[:n] for p in owned for n in range(len(p))}
    gone = {p for p in last - owned if p not in under_owned}
    return remove_items(merged, gone, t) if gone else merged


def conflict_error(conflicts: list[tuple[ManagerKey, str, Path]]) -> errors.ApiError:
    """conflict.go: one conflict `Apply failed with 1 conflict: conflict with "m" using v1: .path`;
    several grouped by manager, with a `FieldManagerConflict` cause each."""
    causes = [
        Cause("FieldManagerConflict", f"conflict with {manager_text(k, v)}", fieldpaths.text(p))
        for k, v, p in conflicts
    ]
    if len(conflicts) == 1:
        k, v, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {manager_text(k, v)}: {fieldpaths.text(p)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for k, v, p in conflicts:
            by_manager.setdefault(manager_text(k, v), []).append(fieldpaths.text(p))
        lines = []
        for m in sorted(by_manager):
            lines.append(f"conflicts with {m}:")
            lines += [f"- {p}" for p in by_manager[m]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.ApiError(409, "Conflict", message, {"causes": [c.to_dict() for c in causes]})
