"""The Kubernetes CEL regex library (k8s.io/apiserver pkg/cel/library/regex.go): `find` and
`findAll` on strings.

```
"abc 123".find('[0-9]+')              // "123"      "abc".find('x')  // ""
"123 abc 456".findAll('[0-9]+')       // ["123", "456"]
"123 abc 456".findAll('[0-9]+', 1)    // ["123"]    (a negative limit: all; 0: none)
```
`findAll` follows Go's `Regexp.FindAllString`: successive non-overlapping matches, an empty
match right after the previous match ignored. Patterns are compiled by Python's `re`, not Go's
RE2: the syntax RE2 lacks (backreferences, lookaround) is accepted, and an invalid pattern's
error reads `Illegal regex: error parsing regexp: <Python's message>`, where upstream gives
RE2's message (and refuses a constant invalid pattern at CRD write).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error, no_overload


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str] | str:
    try:
        return re.compile(pattern)
    except re.error as err:
        return f"Illegal regex: error parsing regexp: {err}"


def find(s: Any, pattern: Any) -> Any:
    if not isinstance(s, str) or not isinstance(pattern, str):
        return no_overload(s, pattern)
    rx = _compile(str(pattern))
    if isinstance(rx, str):
        return error(rx)
    m = rx.search(str(s))
    return ct.StringType(m.group(0) if m else "")


def find_all(s: Any, pattern: Any, limit: Any = None) -> Any:
    if not isinstance(s, str) or not isinstance(pattern, str):
        return no_overload(s, pattern)
    if limit is not None and (not isinstance(limit, ct.IntType) or isinstance(limit, ct.BoolType)):
        return no_overload(limit)
    rx = _compile(str(pattern))
    if isinstance(rx, str):
        return error(rx)
    return ct.ListType(
        [ct.StringType(m) for m in find_all_string(rx, str(s), -1 if limit is None else int(limit))]
    )


def find_all_string(rx: re.Pattern[str], s: str, n: int) -> list[str]:
    """Go regexp.go `allMatches`: after an empty match the search moves on one rune, and an empty
    match where the previous match ended is not delivered."""
    if n < 0:
        n = len(s) + 1
    out: list[str] = []
    pos, prev_end = 0, -1
    while len(out) < n and pos <= len(s):
        m = rx.search(s, pos)
        if m is None:
            break
        accept = True
        if m.end() == pos:  # an empty match at pos
            if m.start() == prev_end:
                accept = False
            pos += 1
        else:
            pos = m.end()
        prev_end = m.end()
        if accept:
            out.append(m.group(0))
    return out


FUNCTIONS: dict[str, Callable[..., Any]] = {"find": find, "findAll": find_all}
