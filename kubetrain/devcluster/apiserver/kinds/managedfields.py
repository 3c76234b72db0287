"""`metadata.managedFields`: who owns which fields, as k8s.io/apimachinery's
`pkg/util/managedfields/internal` records them on every write (pure: no I/O, no clock).

```python
managed = decode(obj["metadata"].get("managedFields"))      # {ManagerKey: Entry}; ManagedFieldsError
managed = record_update(managed, old, new, t, key, now)      # an Update by `key` at `now`
obj["metadata"]["managedFields"] = encode(managed)
```

The pieces follow upstream's manager chain (`NewDefaultFieldManager`):

- `record_update` is `managedFieldsUpdater.Update` over `structuredMergeManager.Update` (merge/
  update.go `Updater.Update`): the fields the write added or modified move to the writer, removed
  fields leave every manager, managers left without fields are dropped; the writer's entry gets
  the time only when it took fields; `metadata.name`, `uid`, ... never count (`stripMetaManager`).
- `cap_updates` is `capManagersManager`: past 10 Update managers the oldest merge into
  "ancient-changes" entries per apiVersion.
- `manager_name` is the handlers' `managerOrUserAgent`/`prefixFromUserAgent`.
- `from_request` is `decodeLiveOrNew`: managedFields a client sends replace the stored ones when
  they decode, `[]` (or one empty entry) clears them, anything else keeps the stored ones.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from kubetrain.devcluster.apiserver.kinds import fieldpaths
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldsError, FieldSet, f
from kubetrain.devcluster.apiserver.kinds.smdschema import Type
from kubetrain.devcluster.apiserver.kinds.typedvalue import compare

MAX_UPDATE_MANAGERS = 10  # DefaultMaxUpdateManagers
OLD_UPDATES_MANAGER = "ancient-changes"
FIELD_MANAGER_MAX_LENGTH = 128
UPDATE, APPLY = "Update", "Apply"

# stripMetaManager's stripSet: never owned by anybody.
STRIPPED: FieldSet = {
    (f("apiVersion"),),
    (f("kind"),),
    (f("metadata"),),
    *((f("metadata"), f(n)) for n in ("name", "namespace", "creationTimestamp", "selfLink", "uid")),
    *((f("metadata"), f(n)) for n in ("clusterName", "generation", "managedFields", "resourceVersion")),
}


class ManagerKey(NamedTuple):
    """`BuildManagerIdentifier`: an Apply entry is the same manager at any apiVersion."""

    manager: str
    operation: str
    api_version: str  # "" for Apply
    subresource: str


@dataclass
class Entry:
    api_version: str
    fields: FieldSet
    time: str | None = None
    applied: bool = False


Managed = dict[ManagerKey, Entry]


class ManagedFieldsError(ValueError):
    """managedFields that do not decode (upstream `DecodeManagedFields` fails)."""


def key_for(manager: str, operation: str, api_version: str, subresource: str = "") -> ManagerKey:
    return ManagerKey(manager, operation, "" if operation == APPLY else api_version, subresource)


def decode(entries: Any) -> Managed:
    """`DecodeManagedFields`."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise ManagedFieldsError("managedFields must be a list")
    out: Managed = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ManagedFieldsError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in (APPLY, UPDATE):
            raise ManagedFieldsError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise ManagedFieldsError("apiVersion must not be empty")
        ftype = e.get("fieldsType", "")
        if ftype != "FieldsV1":
            if not ftype:
                raise ManagedFieldsError(f"missing fieldsType in managed fields entry {i}")
            raise ManagedFieldsError(f'invalid fieldsType "{ftype}" in managed fields entry {i}')
        try:
            fields = fieldpaths.decode(e.get("fieldsV1") or {})
        except FieldsError as exc:
            raise ManagedFieldsError(f"error decoding set: {exc}") from None
        k = key_for(str(e.get("manager", "")), op, e["apiVersion"], str(e.get("subresource", "")))
        out[k] = Entry(e["apiVersion"], fields, e.get("time"), op == APPLY)
    return out


def encode(managed: Managed) -> list[dict[str, Any]]:
    """`encodeManagedFields` with `sortEncodedManagedFields`' order: operation, time, manager,
    apiVersion, subresource."""
    out = []
    for k, e in managed.items():
        entry: dict[str, Any] = {"manager": k.manager, "operation": k.operation, "apiVersion": e.api_version}
        if e.time:
            entry["time"] = e.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = fieldpaths.encode(e.fields)
        if k.subresource:
            entry["subresource"] = k.subresource
        out.append(entry)
    out.sort(
        key=lambda e: (
            e["operation"],
            e.get("time") or "",
            e["manager"],
            e["apiVersion"],
            e.get("subresource", ""),
        )
    )
    return out


def is_reset(entries: Any) -> bool:
    """`isResetManagedFields`: `[]` or a single empty entry."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def from_request(sent: Any, stored: Any, subresource: str) -> Managed:
    """`decodeLiveOrNew`: the managed fields a write starts from."""
    live = _decode_or_empty(stored)
    if subresource or sent is None:
        return live
    if is_reset(sent):
        return {}
    try:
        managed = decode(sent)
    except ManagedFieldsError:
        return live
    return managed or live


def _decode_or_empty(entries: Any) -> Managed:
    try:
        return decode(entries)
    except ManagedFieldsError:
        return {}


def remove_from_others(managed: Managed, me: ManagerKey, taken: FieldSet, removed: FieldSet) -> Managed:
    """merge/update.go `Updater.update` with force: other managers lose what `me` took, every
    manager what the write removed; managers left without fields are dropped."""
    out: Managed = {}
    for k, e in managed.items():
        if k == me:
            out[k] = e
            continue
        rest = e.fields - taken - removed
        if rest:
            out[k] = e if rest == e.fields else replace(e, fields=rest)
    return out


def record_update(
    managed: Managed,
    old: Any,
    new: Any,
    t: Type,
    me: ManagerKey,
    api_version: str,
    now: str,
    ignored: FieldSet = frozenset(),  # type: ignore[assignment]
) -> Managed:
    """An Update by `me` from `old` to `new` (`old` `{}` on a create)."""
    added, modified, removed = compare(old, new, t)
    taken = fieldpaths.recursive_difference(added | modified, ignored)
    removed = fieldpaths.recursive_difference(removed, ignored)
    out = remove_from_others(managed, me, taken, removed)
    taken -= STRIPPED
    if taken:
        prev = out.get(me)
        fields = taken | ((prev.fields - removed) if prev else set())
        out[me] = Entry(api_version, fields, now)
    elif me in out:
        rest = out[me].fields - removed
        if rest:
            out[me] = replace(out[me], fields=rest)
        else:
            del out[me]
    return cap_updates(out)


def cap_updates(managed: Managed, limit: int = MAX_UPDATE_MANAGERS) -> Managed:
    """`capManagersManager.capUpdateManagers`."""
    updaters = [k for k, e in managed.items() if not e.applied]
    if len(updaters) <= limit:
        return managed
    out = dict(managed)
    updaters.sort(key=lambda k: (out[k].time or "", json.dumps(k._asdict())))
    first_of_version: dict[str, ManagerKey] = {}
    length = len(updaters)
    for k in updaters:
        if length <= limit:
            break
        e = out[k]
        bucket = key_for(OLD_UPDATES_MANAGER, UPDATE, e.api_version)
        if e.api_version not in first_of_version:
            first_of_version[e.api_version] = k
            continue
        if bucket not in out:
            out[bucket] = out.pop(first_of_version[e.api_version])
        out[bucket] = Entry(e.api_version, e.fields | out[bucket].fields, e.time)
        del out[k]
        length -= 1
    return out


def manager_name(field_manager: str, user_agent: str) -> str:
    """`managerOrUserAgent`: the fieldManager parameter, else the User-Agent before its first
    `/`, without unprintable characters, cut to 128 bytes (`prefixFromUserAgent`)."""
    if field_manager:
        return field_manager
    out = ""
    size = 0
    for ch in user_agent.split("/")[0]:
        if not printable(ch):
            continue
        n = len(ch.encode())
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out += ch
        size += n
    return out


def printable(ch: str) -> bool:
    """Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def manager_text(k: ManagerKey, api_version: str) -> str:
    """conflict.go `printManager` of a manager identifier (which carries no time)."""
    out = json.dumps(k.manager)
    if k.subresource:
        out += f" with subresource {json.dumps(k.subresource)}"
    if k.operation == UPDATE:
        out += f" using {api_version}"
    return out
