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
from datetime import UTC, datetime
from typing import Any, NamedTuple

from kubetrain.devcluster.apiserver.kinds import fieldpaths
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldsError, FieldSet, f
from kubetrain.devcluster.apiserver.kinds.smdschema import Type
from kubetrain.devcluster.apiserver.kinds.typedvalue import added_fields_v1, compare

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


class Entry:
    """One manager's fields. An entry read from a stored object keeps its encoded `fieldsV1`
    (`raw`) and decodes it only when asked for its fields: most writes leave most managers alone,
    and theirs is written back as it was."""

    __slots__ = ("_fields", "api_version", "applied", "raw", "time")

    def __init__(
        self,
        api_version: str,
        fields: FieldSet | None = None,
        time: str | None = None,
        applied: bool = False,
        raw: dict[str, Any] | None = None,
    ) -> None:
        self.api_version = api_version
        self._fields = fields
        self.time = time
        self.applied = applied
        self.raw = raw

    @property
    def fields(self) -> FieldSet:
        if self._fields is None:
            self._fields = fieldpaths.decode(self.raw or {})
        return self._fields

    def with_fields(self, fields: FieldSet) -> Entry:
        return Entry(self.api_version, fields, self.time, self.applied)

    def owns_any(self, paths: FieldSet) -> bool:
        if not paths:
            return False
        if self._fields is None and self.raw is not None:
            return any(fieldpaths.contains(self.raw, p) for p in paths)
        return not self.fields.isdisjoint(paths)

    def encoded(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw
        return fieldpaths.encode(self.fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return (self.api_version, self.time, self.applied, self.fields) == (
            other.api_version,
            other.time,
            other.applied,
            other.fields,
        )

    def __repr__(self) -> str:
        return f"Entry({self.api_version!r}, {self.fields!r}, {self.time!r}, {self.applied!r})"


Managed = dict[ManagerKey, Entry]


class ManagedFieldsError(ValueError):
    """managedFields that do not decode (upstream `DecodeManagedFields` fails)."""


def key_for(manager: str, operation: str, api_version: str, subresource: str = "") -> ManagerKey:
    return ManagerKey(manager, operation, "" if operation == APPLY else api_version, subresource)


def decode(entries: Any, *, trusted: bool = False) -> Managed:
    """`DecodeManagedFields`. `trusted`: entries this server encoded (a stored object's), whose
    fieldsV1 are decoded when first needed."""
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
        k = key_for(str(e.get("manager", "")), op, e["apiVersion"], str(e.get("subresource", "")))
        when = e.get("time") if trusted else _rfc3339(e.get("time"))
        raw = e.get("fieldsV1") or {}
        if trusted and isinstance(raw, dict):
            out[k] = Entry(e["apiVersion"], None, when, op == APPLY, raw=raw)
            continue
        try:
            fields = fieldpaths.decode(raw)
        except FieldsError as exc:
            raise ManagedFieldsError(f"error decoding set: {exc}") from None
        out[k] = Entry(e["apiVersion"], fields, when, op == APPLY)
    return out


def _rfc3339(value: Any) -> Any:
    """A sent `time` as metav1.Time writes it back (RFC 3339, UTC, seconds): clients send
    `+00:00` or fractions (`2026-01-01T00:00:00.5+00:00`) for what is stored as `...:00Z`."""
    if not isinstance(value, str):
        return value
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode(managed: Managed) -> list[dict[str, Any]]:
    """`encodeManagedFields` with `sortEncodedManagedFields`' order: operation, time, manager,
    apiVersion, subresource."""
    out = []
    for k, e in managed.items():
        entry: dict[str, Any] = {"manager": k.manager, "operation": k.operation, "apiVersion": e.api_version}
        if e.time:
            entry["time"] = e.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = e.encoded()
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
    if subresource or sent is None or sent == stored:
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
        return decode(entries, trusted=True)
    except ManagedFieldsError:
        return {}


# (taken, removed) of a write as seen at another apiVersion of the resource; None: the object
# cannot be had at that version (`IsMissingVersionError`: its managers are dropped).
Others = dict[str, tuple[FieldSet, FieldSet] | None]


def remove_from_others(
    managed: Managed,
    me: ManagerKey,
    taken: FieldSet,
    removed: FieldSet,
    at: str = "",
    others: Others | None = None,
) -> Managed:
    """merge/update.go `Updater.update` with force: other managers lose what `me` took, every
    manager what the write removed; managers left without fields are dropped. With `others`, a
    manager of another apiVersion than `at` loses what the write took and removed as compared at
    its own version (the `Converter`'s objects)."""
    out: Managed = {}
    for k, e in managed.items():
        if k == me:
            out[k] = e
            continue
        lost, gone = taken, removed
        if others is not None and e.api_version != at:
            seen = others.get(e.api_version)
            if seen is None:
                continue
            lost, gone = seen
        if not (e.owns_any(lost) or e.owns_any(gone)):
            out[k] = e
            continue
        rest = e.fields - lost - gone
        if rest:
            out[k] = e.with_fields(rest)
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
    zero: FieldSet | None = None,
    others: Others | None = None,
) -> Managed:
    """An Update by `me` from `old` to `new`. A create passes the kind's zero object as `old`
    and, when it is only maps, their paths as `zero`: then the FieldsV1 of what it takes is built
    directly from `new`, without the comparison. `others`: see `remove_from_others`."""
    if zero is not None and not managed and all(len(p) == 1 for p in ignored):
        raw = added_fields_v1({k: v for k, v in new.items() if (f(k),) not in ignored}, t)
        raw = fieldpaths.edit(raw, set(), STRIPPED | zero)
        return {me: Entry(api_version, None, now, raw=raw)} if raw else {}
    added, modified, removed = compare(old, new, t)
    taken = fieldpaths.recursive_difference(added | modified, ignored)
    removed = fieldpaths.recursive_difference(removed, ignored)
    out = remove_from_others(managed, me, taken, removed, api_version, others)
    taken -= STRIPPED
    prev = out.get(me)
    if taken:
        if prev is not None and prev.raw is not None and prev.api_version == api_version:
            out[me] = Entry(api_version, None, now, raw=fieldpaths.edit(prev.raw, taken, removed))
        else:
            fields = taken | ((prev.fields - removed) if prev else set())
            out[me] = Entry(api_version, fields, now)
    elif prev is not None and prev.owns_any(removed):
        rest = prev.fields - removed
        if rest:
            out[me] = prev.with_fields(rest)
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
