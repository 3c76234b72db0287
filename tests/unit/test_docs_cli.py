"""The `kubetrain` command lines in README.md and docs/ against the CLI's argparse parsers.

A flag the docs give a `kubetrain COMMAND` must be one that command's parser accepts, and every
flag a command offers (`--help` shows it) must be documented in a place that speaks of that
command. A flag is attributed to a command only by the doc's own context:

- a command line: a fenced shell line or an inline code span whose command is `kubetrain CMD`
  (after `$ `, variable assignments, `.venv/bin/`, `python -m`); its `--flags` up to the end of
  that command (`|`, `;`, `&&`, `)`, a comment);
- a flag table (first column `flag`) or a list item starting with a `--flag` span, in a section
  whose heading names `kubetrain CMD`.

Flags of other programs (`helm --set`, `kubectl -f`, kube-apiserver's `--event-ttl`) are never in
such a context, so they are never checked against kubetrain's parsers.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass

from docs_reading import DOCS, Block, Line, blocks, code_spans, split_cells, tables

from kubetrain.cli import build_parser

SHELLS = {"", "sh", "bash", "console", "shell", "shell-session", "text"}
_SEPARATORS = re.compile(r"\|\||&&|[|;()`]|\$\(")
_FLAG = re.compile(r"^--[a-z][a-z0-9-]*")
_COMMAND_SPAN = re.compile(r"^kubetrain ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


@dataclass(frozen=True)
class Use:
    line: Line
    command: tuple[str, ...]  # ("run",), ("certs", "generate"), () for `kubetrain` alone
    flag: str | None  # None: the command itself is the fact


Parsers = dict[tuple[str, ...], argparse.ArgumentParser]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def commands() -> Parsers:
    """Every command's parser, sub-commands included, by its words after `kubetrain`."""
    found: Parsers = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = parser
        for name, sub in _subparsers(parser).items():
            walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _command_words(words: list[str]) -> list[str] | None:
    """The words after `kubetrain` when `words` (one shell command) runs kubetrain, else None."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # VAR=value kubetrain ...
    if len(words) >= 3 and words[0].split("/")[-1].startswith("python") and words[1:3] == ["-m", "kubetrain"]:
        return words[3:]
    if words and words[0].split("/")[-1] == "kubetrain":
        return words[1:]
    return None


def _parse(after: list[str], parsers: Parsers) -> tuple[tuple[str, ...], list[str]] | None:
    """The command path and `--flags` of the words after `kubetrain`; None when they are not a
    command line but a placeholder or prose (`kubetrain COMMAND`, `kubetrain validate/render`)."""
    command: tuple[str, ...] = ()
    rest = after
    while rest and not rest[0].startswith("-") and _subparsers(parsers[command]):
        if not re.fullmatch(r"[a-z][a-z-]*", rest[0]):
            return None
        command, rest = (*command, rest[0]), rest[1:]
        if command not in parsers:
            return command, []
    flags: list[str] = []
    for word in rest:
        if word == "--":
            break
        match = _FLAG.match(word)
        if match:
            flags.append(match.group(0))
    return command, flags


def _uses_in_command(text: str, block: Block, offset: int, parsers: Parsers) -> list[Use]:
    """The uses in `text`, found at `offset` of `block`'s text: one per flag, or the unknown command."""
    uses: list[Use] = []
    position = 0
    for segment in _SEPARATORS.split(text):
        start = text.index(segment, position)
        position = start + len(segment)
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        after = _command_words(words)
        parsed = None if after is None else _parse(after, parsers)
        if parsed is None:
            continue
        command, flags = parsed
        line = block.line_at(offset + start)
        if command not in parsers:
            uses.append(Use(line, command, None))
        uses += [Use(line, command, flag) for flag in flags]
    return uses


def _heading_command(heading: Line | None) -> tuple[str, ...] | None:
    if heading is None:
        return None
    for span in code_spans(heading.text):
        match = _COMMAND_SPAN.match(span)
        if match:
            return tuple(word for word in match.groups() if word)
    return None


def attributed() -> list[Use]:
    """Every (command, flag) the docs state, with where."""
    parsers = commands()
    uses: list[Use] = []
    for doc in DOCS:
        flag_rows = {row.line for header, rows in tables(doc) if header[:1] == ("flag",) for row in rows}
        for block in blocks(doc):
            text = block.text
            if block.language is not None:
                if block.language in SHELLS:
                    command_text = re.sub(r"(^|\s)#.*$", "", text)
                    command_text = re.sub(r"^\$\s+", "", command_text.strip())
                    uses += _uses_in_command(command_text, block, 0, parsers)
                continue
            for match in re.finditer(r"(`+)(.+?)\1", text):
                uses += _uses_in_command(match.group(2), block, match.start(2), parsers)
            command = _heading_command(block.heading)
            if command is None or command not in parsers:
                continue
            if block.first in flag_rows:
                for span in code_spans(split_cells(text)[0]):
                    match = _FLAG.match(span)
                    if match:
                        uses.append(Use(block.first, command, match.group(0)))
            item = re.match(r"^\s*[-*+]\s+`(--[a-z][a-z0-9-]*)", text)
            if item:
                uses.append(Use(block.first, command, item.group(1)))
    return uses


def test_the_docs_give_command_lines_to_check() -> None:
    uses = attributed()
    assert len({use.command for use in uses if use.flag}) >= 6
    assert len(uses) >= 80


def test_every_documented_command_and_flag_exists() -> None:
    parsers = commands()
    problems: list[str] = []
    for use in attributed():
        name = " ".join(("kubetrain", *use.command))
        if use.flag is None:
            known = ", ".join(sorted(" ".join(path) for path in parsers if len(path) == len(use.command)))
            problems.append(f"{use.line.where()}: `{name}` is not a kubetrain command (there are: {known})")
        elif use.flag not in _options(parsers[use.command]):
            problems.append(f"{use.line.where()}: `{name}` has no flag {use.flag} (`{name} --help`)")
    assert not problems, "\n".join(problems)


def _sections() -> list[tuple[Line, set[tuple[str, ...]], str]]:
    """Each section (heading to the next heading): its heading, the commands it names, its text."""
    parsers = commands()
    found: list[tuple[Line, set[tuple[str, ...]], list[str]]] = []
    for doc in DOCS:
        for block in blocks(doc):
            if block.heading is None:
                continue
            if not found or found[-1][0] != block.heading:
                found.append((block.heading, set(), []))
            found[-1][2].append(block.text)
            spans = code_spans(block.text) if block.language is None else [block.text]
            for span in spans:
                for use in _uses_in_command(span, block, 0, parsers):
                    if use.flag is not None or use.command in parsers:
                        found[-1][1].add(use.command)
                for match in re.finditer(r"(?:^|[\s(])kubetrain ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", span):
                    for size in (2, 1):
                        path = tuple(word for word in match.groups()[:size] if word)
                        if path in parsers:
                            found[-1][1].add(path)
                            break
    return [(heading, names, "\n".join(texts)) for heading, names, texts in found]


def test_every_flag_is_documented_where_its_command_is() -> None:
    sections = _sections()
    problems: list[str] = []
    for path, parser in commands().items():
        if _subparsers(parser):
            continue  # `kubetrain` and `kubetrain certs` only choose a sub-command
        texts = "\n".join(text for _, names, text in sections if path in names)
        written = set(re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", texts))
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings or "-h" in action.option_strings:
                continue
            if not written & set(action.option_strings):
                name = " ".join(("kubetrain", *path))
                problems.append(
                    f"{'/'.join(action.option_strings)} of `{name}` is not documented: no section of "
                    f"README.md or docs/*.md that names `{name}` mentions it"
                )
    assert not problems, "\n".join(problems)
