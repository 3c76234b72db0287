"""Decoding a review whose replica types carry byte-identical pod templates once per template.

```python
review = loads_sharing_templates(body)   # == orjson.loads(body), or raises what it raises
```

A job's replica types often share one pod template, written out again for each: the 74 KB
review of a TFJob with 4 replica types of 16 containers is four copies of a 16 KB template, and
decoding it builds (and then frees) each copy's ~500 dicts and lists. Here each distinct
template text is decoded once and the one object stands at every place the text was: the
result is equal to `orjson.loads(body)` (same values, same key order), only the equal
templates are one object, which deciding treats as read-only like everything in a review
(kubetrain.jobs.defaulting copies what it changes). A template cache key
(kubetrain.api.podtemplate.template_key) is then computed once for all of them.

How, and why the result is exact:
- the candidates are the values of the body's `"template":` members that begin with `{`; a
  candidate's text is found from the bytes (it ends at the first of the last `}` before the
  next candidate that balances the brackets before it: a guess, proven below), and the later
  candidates whose bytes start with the same text join it (the search for candidates skips
  the bytes of a text it has grouped);
- the body is decoded with each such text replaced by an integer, PLACEHOLDER - 10 - its group,
  whose digits do not occur in the body; each group's text is decoded on its own;
- in the decoded review, the placeholders are looked for where a replica map keeps its
  templates (`request.object` and `request.oldObject`: `spec.<map>.<type>.template`) and
  replaced by their group's object. Only if every text replaced was found there is the result
  used. A placeholder found as an integer value was read as a whole number token (one that
  began or ended elsewhere would be other digits, or invalid JSON), so the text it replaced
  stood where a value stands; that text being a JSON value itself, the body reads exactly as
  the replaced one with the value in its place;
- otherwise (a guessed end that was not the template's, a placeholder not found, any decode
  error) the body is decoded as a whole: the same result or the same error as before, at the
  cost of the failed attempt (at most about one more decode of the body).
The caller uses it only for a body whose shape proof holds (kubetrain.webhook.shapebound:
nested at most 64 deep), so that a template's depth added to its place's cannot pass
orjson's nesting limit (1,024) where the whole body's would not.
Measured figures: docs/performance.md, "The xlarge review: collections and shared
templates" (2026-11-27).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# Group g's placeholder is PLACEHOLDER - 10 - g (g < _MAX_GROUPS): all of them 20 bytes, one
# `-` first and digits after, all beginning with the same 18 bytes, which the body must not hold.
PLACEHOLDER = -7160598262118419000
_PLACEHOLDER_PREFIX = str(PLACEHOLDER)[:-2].encode()
_MAX_GROUPS = 16
_MAX_CANDIDATES = 64
# A `"template"` member whose value is an object, up to its `{` (JSON's four spaces allowed).
_KEY = b'"template"'
_MEMBER = re.compile(rb'"template"[ \t\r\n]*:[ \t\r\n]*\{')
_MAX_END_TRIES = 16
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"{}[]")


def loads_sharing_templates(body: bytes) -> Any:
    """`orjson.loads(body)` with byte-identical templates decoded once (see the module text)."""
    groups = _groups(body) if _PLACEHOLDER_PREFIX not in body else []
    if not groups:
        return orjson.loads(body)
    places = sorted((start, g) for g, (_, starts) in enumerate(groups) for start in starts)
    pieces: list[bytes] = []
    last = 0
    for start, g in places:
        pieces += (body[last:start], str(PLACEHOLDER - 10 - g).encode())
        last = start + len(groups[g][0])
    pieces.append(body[last:])
    try:
        review = orjson.loads(b"".join(pieces))
        values = {PLACEHOLDER - 10 - g: orjson.loads(text) for g, (text, _) in enumerate(groups)}
    except orjson.JSONDecodeError:
        return orjson.loads(body)
    if _put_back(review, values) != len(places):
        return orjson.loads(body)
    return review


def _groups(body: bytes) -> list[tuple[bytes, list[int]]]:
    """The template texts written at least twice, each with where its copies start. The
    search for the next candidate resumes after a text just grouped: its copies' bytes, most
    of a big body, are compared (`startswith`), never searched. None past _MAX_CANDIDATES
    candidates (a body with that many is not an ordinary job's) or _MAX_GROUPS texts."""
    groups: list[tuple[bytes, list[int]]] = []
    start = _candidate(body, 0)
    for visited in range(_MAX_CANDIDATES + 1):
        if start < 0:
            return [(text, where) for text, where in groups if len(where) > 1]
        if visited == _MAX_CANDIDATES:
            break
        resume = start + 1
        for text, where in groups:
            if body.startswith(text, start):
                where.append(start)
                resume = start + len(text)
                break
        else:
            following = _candidate(body, start + 1)
            if following < 0:
                start = following  # the last candidate has no later copy to share with
                continue
            guess = _value_text(body[start:following]) if len(groups) < _MAX_GROUPS else None
            if guess is not None:
                groups.append((guess, [start]))
                resume = start + len(guess)
            if following >= resume:
                start = following
                continue
        start = _candidate(body, resume)
    return []


def _candidate(body: bytes, at: int) -> int:
    """Where the value of the first `"template":` member at or after `at` that is an object
    begins; -1 if none."""
    at = body.find(_KEY, at)  # a C search for the key, the pattern matched only where it is
    while at >= 0:
        member = _MEMBER.match(body, at)
        if member is not None:
            return member.end() - 1
        at = body.find(_KEY, at + len(_KEY))
    return -1


def _balance(text: bytes) -> int:
    """Opening less closing brackets: one pass keeps them, four counts read what is left."""
    brackets = text.translate(None, _NOT_BRACKET)
    return brackets.count(b"{") + brackets.count(b"[") - brackets.count(b"}") - brackets.count(b"]")


def _value_text(text: bytes) -> bytes | None:
    """The shortest prefix of `text` ending in one of its last _MAX_END_TRIES `}` whose
    brackets balance: a guess at the object value `text` begins with (brackets in strings
    may mislead it, which the decode of the result finds out). Each byte is counted once."""
    total = _balance(text)
    suffix = 0  # the balance of text[end:]
    end = len(text)
    found = None
    for _ in range(_MAX_END_TRIES):
        close = text.rfind(b"}", 0, end)
        if close <= 0:
            break
        suffix += _balance(text[close + 1 : end])
        if total == suffix:  # text[: close + 1] balances
            found = close + 1
        suffix -= 1  # the `}` at close
        end = close
    return None if found is None else text[:found]


def _put_back(review: Any, values: dict[int, Any]) -> int:
    """Put each placeholder's value back where replica maps keep templates; how many."""
    found = 0
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        return 0
    for name in ("object", "oldObject"):
        obj = request.get(name)
        spec = obj.get("spec") if isinstance(obj, dict) else None
        if not isinstance(spec, dict):
            continue
        for replica_map in spec.values():
            if not isinstance(replica_map, dict):
                continue
            for replica in replica_map.values():
                if not isinstance(replica, dict):
                    continue
                template = replica.get("template")
                if type(template) is int and template in values:
                    replica["template"] = values[template]
                    found += 1
    return found
