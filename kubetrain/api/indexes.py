"""The Job API's compressed form of a set of indexes (`status.completedIndexes`, `"0,2-3"`):
written as indexed_job_utils.go's `orderedIntervals.String` writes it, read leniently as
`parseIndexesFromString` reads a stored one. Pure.

(A success policy's `succeededIndexes`, which admission checks strictly and the Job controller
reads with its own stop rule, is `kubetrain.jobs.jobsuccess`'s.)
"""

from __future__ import annotations

from collections.abc import Iterable


def runs(indexes: Iterable[int]) -> list[tuple[int, int]]:
    """`indexes` sorted, each run of consecutive ones as (first, last)."""
    out: list[list[int]] = []
    for i in sorted(set(indexes)):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [(a, b) for a, b in out]


def format_indexes(indexes: Iterable[int], *, sep: str = ",", dash: str = "-") -> str:
    """`indexes` in the compressed form: sorted, runs as `first-last`, comma-separated
    (`{0, 2, 3, 4}` -> `"0,2-4"`); `sep` and `dash` for a reader's rendering (`0, 2` and an en dash)."""
    return sep.join(str(a) if a == b else f"{a}{dash}{b}" for a, b in runs(indexes))


def parse_indexes(text: str, size: int) -> set[int]:
    """The indexes below `size` that `text` (the compressed form) names; a part that is not a
    decimal index or an ascending `first-last` range is ignored, a range is cut at `size`."""
    out: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not is_decimal(first) or (dash and not is_decimal(last)):
            continue
        a, b = int(first), int(last) if dash else int(first)
        if a <= b:
            out.update(range(a, min(b, size - 1) + 1))
    return out


def is_decimal(text: str) -> bool:
    """An index as the API writes one: ASCII digits only."""
    return text.isdecimal() and text.isascii()
