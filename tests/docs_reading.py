"""Reading the documentation (README.md, docs/*.md) for tests that compare it with the code.

The docs are the source of truth for users and operators; tests/unit/test_docs_*.py check the
facts in them that can be checked mechanically (metric names, CLI flags, repository paths, chart
values) against the code itself. This module only reads markdown: where each fact is (the doc and
line, for the failure message), which text is a table cell, a code span or a fenced code block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/architecture.md", "docs/behaviour.md", "docs/operations.md", "docs/performance.md")

_SPAN = re.compile(r"(`+)(.+?)\1")
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")


@dataclass(frozen=True)
class Line:
    """One line of a doc: `doc` is its path relative to the repository, `number` 1-based."""

    doc: str
    number: int
    text: str

    def where(self) -> str:
        return f"{self.doc}:{self.number}"


@dataclass(frozen=True)
class CodeLine:
    """A line inside a fenced code block; `language` is the fence's info word ("" without one)."""

    line: Line
    language: str


@dataclass(frozen=True)
class Row:
    """A body row of a markdown table, its cells stripped, keyed by the header's cells."""

    line: Line
    cells: dict[str, str]


@cache
def lines(doc: str) -> tuple[Line, ...]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return tuple(Line(doc, n, t) for n, t in enumerate(text.splitlines(), start=1))


def all_lines() -> Iterator[Line]:
    for doc in DOCS:
        yield from lines(doc)


def prose_lines(doc: str) -> Iterator[Line]:
    """The lines of `doc` outside fenced code blocks."""
    fence: str | None = None
    for line in lines(doc):
        match = _FENCE.match(line.text)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
                continue
            if marker.startswith(fence[0]) and len(marker) >= len(fence) and not match.group(2):
                fence = None
                continue
        if fence is None:
            yield line


def code_block_lines(doc: str) -> Iterator[CodeLine]:
    """The lines of `doc` inside fenced code blocks, with the fence's language."""
    fence: str | None = None
    language = ""
    for line in lines(doc):
        match = _FENCE.match(line.text)
        if match:
            marker = match.group(1)
            if fence is None:
                fence, language = marker, match.group(2)
                continue
            if marker.startswith(fence[0]) and len(marker) >= len(fence) and not match.group(2):
                fence = None
                continue
        if fence is not None:
            yield CodeLine(line, language)


def code_spans(text: str) -> list[str]:
    """The contents of the inline code spans (`...`, ``...``) of one line."""
    return [match.group(2).strip() for match in _SPAN.finditer(text)]


def split_cells(text: str) -> list[str]:
    """A table line's cells: split on `|` outside code spans (a `|` in `a|b` is not a border)."""
    cells: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        span = _SPAN.match(text, i) if text[i] == "`" else None
        if span:
            current.append(span.group(0))
            i = span.end()
            continue
        if text[i] == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(text[i])
        i += 1
    cells.append("".join(current).strip())
    if text.strip().startswith("|"):
        cells = cells[1:]
    if text.strip().endswith("|"):
        cells = cells[:-1]
    return cells


def _table_runs(doc: str) -> Iterator[list[Line]]:
    """The runs of lines that form a table: `|` lines whose second is a delimiter row."""
    block: list[Line] = []
    for line in [*prose_lines(doc), Line(doc, 0, "")]:
        if line.text.lstrip().startswith("|") and (not block or block[-1].number == line.number - 1):
            block.append(line)
            continue
        if len(block) >= 2 and set(block[1].text.replace("|", "").strip()) <= set("-: "):
            yield block
        block = [line] if line.text.lstrip().startswith("|") else []


def tables(doc: str) -> Iterator[tuple[tuple[str, ...], list[Row]]]:
    """Every table of `doc` outside code blocks: its header cells and its body rows."""
    for block in _table_runs(doc):
        header = tuple(split_cells(block[0].text))
        rows = [Row(row, dict(zip(header, split_cells(row.text), strict=False))) for row in block[2:]]
        yield header, rows


@dataclass(frozen=True)
class Block:
    """A paragraph, list item, table row or heading (its lines joined by spaces), or one line of
    a fenced code block (`language` set, "" for a block without one; None outside code). Code
    spans are read from a block as a whole, since one may wrap onto the next line."""

    lines: tuple[Line, ...]
    heading: Line | None  # the nearest heading above (itself for a heading)
    language: str | None = None

    @property
    def text(self) -> str:
        return " ".join(line.text.strip() for line in self.lines)

    @property
    def first(self) -> Line:
        return self.lines[0]

    def line_at(self, offset: int) -> Line:
        """The line holding the character at `offset` of `text`."""
        for line in self.lines:
            length = len(line.text.strip()) + 1
            if offset < length:
                return line
            offset -= length
        return self.lines[-1]


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def blocks(doc: str) -> Iterator[Block]:
    """`doc` as blocks, in order."""
    heading: Line | None = None
    current: list[Line] = []
    in_code = {line.line.number: line.language for line in code_block_lines(doc)}
    prose = {line.number for line in prose_lines(doc)}
    table_lines = {line.number for run in _table_runs(doc) for line in run}

    def flush() -> Iterator[Block]:
        if current:
            yield Block(tuple(current), heading)
            current.clear()

    for line in lines(doc):
        if line.number in in_code:
            yield from flush()
            yield Block((line,), heading, in_code[line.number])
            continue
        stripped = line.text.strip()
        if line.number not in prose or not stripped:  # a fence line, or blank
            yield from flush()
            continue
        if stripped.startswith("#"):
            yield from flush()
            heading = line
            yield Block((line,), heading)
            continue
        if line.number in table_lines or _ITEM.match(line.text):
            yield from flush()
        current.append(line)
        if line.number in table_lines:
            yield from flush()
    yield from flush()
