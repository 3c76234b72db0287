"""A proof from the raw JSON bytes that no value in a body breaks the shape limits, so that the
exact walk over the decoded objects (kubetrain.webhook.shapelimits) can be skipped.

```python
within_shape_limits(body, max_depth=64, max_members=10_000)   # True: proven; False: walk it
marks = structure_marks(body)       # one pass, shared with the tier (kubetrain.webhook.tiers)
within_shape_limits(body, 64, 10_000, marks)
```

Only an over-approximation: True proves that no object or list in `body` (hence in the
`object` and `oldObject` of the review it holds) is nested more than `max_depth` deep and no
map has more than `max_members` fields; False proves nothing, the caller runs the exact walk,
which names the path. A few C-level passes over the bytes (count, translate, replace) instead
of a Python-level visit of every decoded value: a 74 KB review costs about a fifth of the walk.

`body` must be valid JSON (the review has been decoded); every argument below relies on it.
"""

from __future__ import annotations

_BACKSLASH = b"\\"
_QUOTE = b'"'
# Every byte but the brackets and the quote: deleted before the brackets are matched.
_NOT_BRACKET_OR_QUOTE = bytes(b for b in range(256) if b not in b'{}[]"')
# Every byte but the brackets, the quote, the colon and the backslash (`structure_marks`).
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'{}[]":\\')
_COLON = b":"
# A list's brackets become a map's: both count as one level, and in valid JSON every closing
# bracket matches the opening bracket before it whatever their kind.
_LISTS_AS_MAPS = bytes.maketrans(b"[]", b"{}")


def structure_marks(body: bytes) -> bytes:
    """The brackets (lists' written as maps': `[` is `{`), quotes, colons and backslashes of
    `body`, in their order, every other byte deleted: one C pass over the body, after which
    the proof and the tier's bracket count (kubetrain.webhook.tiers) read a quarter of the
    bytes (a 74 KB review has ~24 KB of them). `marks.count(b"{")` is the body's number of
    `{` and `[` bytes, `marks.count(b":")` its number of `:` bytes."""
    return body.translate(_LISTS_AS_MAPS, _NOT_STRUCTURE)


def within_shape_limits(body: bytes, max_depth: int, max_members: int, marks: bytes | None = None) -> bool:
    """True if the JSON text `body` proves that none of its objects or lists is nested more
    than `max_depth` deep (the outermost value counts as 1) and none of its maps has more than
    `max_members` fields. False when the bytes cannot prove it (not that a limit is broken).
    `marks`: `structure_marks(body)` when the caller has it already."""
    if marks is None:
        marks = structure_marks(body)
    # Members: every member of a JSON object is written `"key": value` with its own `:` byte,
    # so a map of N fields (N distinct keys after decoding: a duplicate key only merges) needs
    # N colons in the text. Colons inside strings are counted too, which only raises the count.
    if marks.count(_COLON) > max_members:
        return False
    if _BACKSLASH in marks:  # escapes are undone on the body itself
        return _bracket_depth_at_most(_structural_brackets(body), max_depth)
    # Without escapes the marks less their colons are the body's brackets and quotes.
    return _bracket_depth_at_most(_outside_strings(marks.translate(None, _COLON)), max_depth)


def _structural_brackets(body: bytes) -> bytes:
    """The brackets of `body` outside its strings, lists' written as maps' (`{}{{}}`)."""
    if _BACKSLASH in body:
        # Outside strings valid JSON has no backslash; inside, an escape is `\` and one byte
        # (or `\uXXXX`, hex digits). Removing `\\` pairs left to right pairs each run of
        # backslashes as the JSON decoder does, so every `\` left starts an escape of some
        # other byte, and a `\"` left is an escaped quote: removed too. The quotes that remain
        # are exactly the strings' delimiters; the other escapes are string contents.
        body = body.replace(_BACKSLASH + _BACKSLASH, b"").replace(_BACKSLASH + _QUOTE, b"")
    # Brackets and delimiting quotes only: quotes alternate opening and closing a string.
    return _outside_strings(body.translate(_LISTS_AS_MAPS, _NOT_BRACKET_OR_QUOTE))


def _outside_strings(text: bytes) -> bytes:
    """The brackets of `text` (brackets and delimiting quotes only) outside its strings."""
    quotes = text.count(_QUOTE)
    if text.count(b'""') * 2 == quotes:
        # Every quote lies in one of the `""` pairs found left to right: the first quote opens
        # a string and the pair found there closes it at once, and so on for each next quote.
        # So no string holds a bracket: without the quotes the rest is the structure.
        return text.translate(None, _QUOTE)
    # Some string holds brackets. Dropping each `""` pair keeps the alternation (it is an
    # empty string, or a closing quote and the next opening one with no bracket between them:
    # two strings read as one); then the pieces between quotes at odd positions are strings.
    return b"".join(text.replace(b'""', b"").split(_QUOTE)[0::2])


def _bracket_depth_at_most(brackets: bytes, max_depth: int) -> bool:
    """True if the balanced `{`/`}` sequence nests at most `max_depth` deep. Each round removes
    the innermost pairs (`bytes.replace` does not rescan what it produced, so a pair whose
    inside only became empty in this round stays for the next): a pair holding pairs k deep
    survives k rounds, so an empty sequence after `max_depth` rounds proves the depth."""
    for _ in range(max_depth):
        if not brackets:
            return True
        brackets = brackets.replace(b"{}", b"")
    return not brackets
