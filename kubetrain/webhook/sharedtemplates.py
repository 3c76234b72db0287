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

A template text's object is also kept between reviews (`DECODED_TEMPLATES`, keyed by the text's
bytes, which decode to one value only): the next review holding the same text, as the reviews
of jobs made from one manifest do, takes it instead of decoding it again (a 16 KB template: ~4
µs for the lookup against ~55 µs for the decode and its free). Every review is still decided in
full on that object; only its decode is saved. Limits: the object is then shared by reviews,
which deciding must only read (the tests check the kept objects against a fresh decode after
every answer); the memory is bounded by an estimate, DECODED_TEMPLATE_COST_PER_BYTE bytes of
objects per byte of text (measured 5-7 for pod templates; a text of empty lists could take
~21), up to DECODED_TEMPLATES_BYTES in all, least recently used first out, and a text costing
over DECODED_TEMPLATE_ENTRY_BYTES is decoded each time.

One more way the parts could decode where the whole would not: orjson's nesting limit
(1,024 levels). A template put back stands 6 levels down (review, request, object, spec, replica
map, replica type), so a text is shared only if its `{` and `[` bytes (a bound on its depth;
brackets in strings only raise the count) are at most 1,024 - 6; a deeper text stays in the
body, decoded in place. So any body may be given, of any size, with or without a shape proof
(kubetrain.webhook.shapebound).
Measured figures: docs/performance.md, "The xlarge review: collections and shared
templates" (2026-11-27) and "Large reviews: templates decoded once at every size, and kept
between reviews" (2026-11-28).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from kubetrain.api.sizedcache import SizedLRU

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
_CLOSE_BRACE, _CLOSE_BRACKET = ord("}"), ord("]")
# The decoded template texts kept between reviews, charged this estimate per byte of text.
DECODED_TEMPLATE_COST_PER_BYTE = 24
DECODED_TEMPLATES_BYTES = 32 * 1024 * 1024
DECODED_TEMPLATE_ENTRY_BYTES = 4 * 1024 * 1024
DECODED_TEMPLATES: SizedLRU[bytes, Any] = SizedLRU(
    max_bytes=DECODED_TEMPLATES_BYTES, max_entry_bytes=DECODED_TEMPLATE_ENTRY_BYTES
)
# orjson decodes at most this many nested levels; a template put back stands below 6 of them.
ORJSON_MAX_DEPTH = 1024
_MAX_TEMPLATE_OPENERS = ORJSON_MAX_DEPTH - 6


def loads_sharing_templates(body: bytes) -> Any:
    """`orjson.loads(body)` with byte-identical templates decoded once (see the module text)."""
    # Fewer than two `"template"` keys (a small job's review): nothing to share, nothing searched.
    first = body.find(_KEY)
    shareable = first >= 0 and body.find(_KEY, first + 1) >= 0 and _PLACEHOLDER_PREFIX not in body
    groups = _groups(body) if shareable else []
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
        values = {PLACEHOLDER - 10 - g: _decoded(text) for g, (text, _) in enumerate(groups)}
    except orjson.JSONDecodeError:
        return orjson.loads(body)
    if _put_back(review, values) != len(places):
        return orjson.loads(body)
    return review


def _decoded(text: bytes) -> Any:
    """orjson.loads(text), kept in DECODED_TEMPLATES (a text is an object: never None)."""
    value = DECODED_TEMPLATES.get(text)
    if value is None:
        value = orjson.loads(text)
        DECODED_TEMPLATES.put(text, value, cost=len(text) * DECODED_TEMPLATE_COST_PER_BYTE)
    return value


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
            if guess is not None and guess.count(b"{") + guess.count(b"[") > _MAX_TEMPLATE_OPENERS:
                guess = None  # it might decode alone and not in place: left in the body
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


def _value_text(text: bytes) -> bytes | None:
    """The shortest prefix of `text` ending in one of its last _MAX_END_TRIES `}` whose
    brackets balance: a guess at the object value `text` begins with (brackets in strings
    may mislead it, which the decode of the result finds out). One pass keeps the brackets;
    they are read back from the end only as far as the last _MAX_END_TRIES `}`."""
    brackets = text.translate(None, _NOT_BRACKET)
    # The balance (opening less closing) of the prefix that ends where the reading has come to.
    balance = brackets.count(b"{") + brackets.count(b"[") - brackets.count(b"}") - brackets.count(b"]")
    closes = 0
    found = 0  # the shortest balanced prefix ends at the found-th `}` from the end
    for byte in reversed(brackets):
        if byte == _CLOSE_BRACE:
            closes += 1
            if balance == 0:
                found = closes
            if closes == _MAX_END_TRIES:
                break
            balance += 1
        elif byte == _CLOSE_BRACKET:
            balance += 1
        else:
            balance -= 1
    if not found:
        return None
    end = len(text)
    for _ in range(found):
        end = text.rfind(b"}", 0, end)
    return text[: end + 1]


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
