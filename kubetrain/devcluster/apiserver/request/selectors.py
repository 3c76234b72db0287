"""Label selectors (equality- and set-based) and field selectors, parsed like apimachinery does.

`parse_label_selector("app=x,tier in (a,b),!canary")` and `parse_field_selector(...)` return
predicates over plain-dict objects; bad input raises `errors.ApiError` 400 BadRequest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote
from kubetrain.devcluster.apiserver.kinds.objectmeta import qualified_name_problems

Predicate = Callable[[Obj], bool]

_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|[^\s(),!=]+)")


def _always(_: Obj) -> bool:
    return True


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def _labels(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = obj.get("metadata", {}).get("labels") or {}
    return labels


def _absent(key: str) -> Predicate:
    return lambda o: key not in _labels(o)


def _present(key: str) -> Predicate:
    return lambda o: key in _labels(o)


def _label_eq(key: str, value: str) -> Predicate:
    return lambda o: _labels(o).get(key) == value


def _label_ne(key: str, value: str) -> Predicate:
    return lambda o: _labels(o).get(key) != value


def _label_in(key: str, values: frozenset[str]) -> Predicate:
    return lambda o: _labels(o).get(key) in values


def _label_notin(key: str, values: frozenset[str]) -> Predicate:
    return lambda o: _labels(o).get(key) not in values


def _field_eq(path: str, value: str) -> Predicate:
    return lambda o: field_value(o, path) == value


def _field_ne(path: str, value: str) -> Predicate:
    return lambda o: field_value(o, path) != value


def _derived(get: Callable[[Obj], str], value: str, negated: bool) -> Predicate:
    return lambda o: (get(o) == value) != negated


def parse_label_selector(text: str | None) -> Predicate:
    if not text or not text.strip():
        return _always
    toks = _tokens(text)
    reqs: list[Predicate] = []
    i = 0

    def fail(msg: str) -> errors.ApiError:
        return errors.bad_request(f"unable to parse requirement: {msg}")

    def unexpected(found: str) -> errors.ApiError:  # after a requirement: not inside one
        return errors.bad_request(f"found '{found}', expected: ',' or 'end of string'")

    while i < len(toks):
        negate = False
        if toks[i] == "!":
            negate = True
            i += 1
        if i >= len(toks):
            raise fail("found '', expected: identifier")
        key = toks[i]
        problems = qualified_name_problems(key)
        if problems:  # apimachinery's validateLabelKey: a field.Error at `key`
            raise fail(f"key: Invalid value: {go_quote(key)}: {'; '.join(problems)}")
        i += 1
        op = toks[i] if i < len(toks) else ","
        if negate:
            if op != ",":
                raise unexpected(op)
            reqs.append(_absent(key))
        elif op == ",":
            reqs.append(_present(key))
        elif op in ("=", "==", "!="):
            i += 1
            value = toks[i] if i < len(toks) and toks[i] not in (",",) else ""
            if value:
                i += 1
            if op == "!=":
                reqs.append(_label_ne(key, value))
            else:
                reqs.append(_label_eq(key, value))
        elif op in ("in", "notin"):
            i += 1
            if i >= len(toks) or toks[i] != "(":
                raise fail("found '', expected: '('")
            i += 1
            values: set[str] = set()
            while i < len(toks) and toks[i] != ")":
                if toks[i] != ",":
                    values.add(toks[i])
                i += 1
            if i >= len(toks):
                raise fail("found '', expected: ')'")
            i += 1
            if op == "in":
                reqs.append(_label_in(key, frozenset(values)))
            else:
                reqs.append(_label_notin(key, frozenset(values)))
        else:
            raise fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(toks):
            if toks[i] != ",":
                raise unexpected(toks[i])
            i += 1
    return lambda obj: all(r(obj) for r in reqs)


def field_value(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_field_selector(
    text: str | None,
    supported: tuple[str, ...],
    kind: str = "",
    derived: Mapping[str, Callable[[Obj], str]] | None = None,
) -> Predicate:
    """`metadata.name=x,status.phase!=Running`. Unsupported field labels are rejected with 400.
    `derived`: the labels whose value is not the field at their path (an Event's `source`)."""
    if not text or not text.strip():
        return _always
    reqs: list[Predicate] = []
    for term in text.split(","):
        term = term.strip()
        if not term:
            continue
        for op in ("!=", "==", "="):
            if op in term:
                field, value = term.split(op, 1)
                break
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field = field.strip()
        value = "".join(_split_unescaped(value.strip(), "\0"))
        if field not in supported:
            raise errors.bad_request(f"field label not supported: {field}")
        get = (derived or {}).get(field)
        if get is not None:
            reqs.append(_derived(get, value, op == "!="))
        elif op == "!=":
            reqs.append(_field_ne(field, value))
        else:
            reqs.append(_field_eq(field, value))
    return lambda obj: all(r(obj) for r in reqs)


def exact_name(text: str | None) -> str | None:
    """The name a `metadata.name=X` field selector pins (for O(1) lookups), else None."""
    if not text or "," in text or "!=" in text:
        return None
    for op in ("==", "="):
        if op in text:
            field, value = text.split(op, 1)
            if field.strip() == "metadata.name":
                return value.strip()
    return None
