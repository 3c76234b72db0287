"""The `kubetrain` command line: one sub-command per module in `kubetrain.commands`.

Every error is one line on stderr naming what to fix, and a non-zero exit code: a bad flag or
flag value exits 2 (`Parser.error`), a command's own errors as the command says (missing files,
bad YAML, start-up failures: 1 or 2), and anything unexpected exits 1 with the exception's one
line — its traceback is logged at debug level (`--log-level debug`), never printed otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from kubetrain.frameworks.registry import known_kinds

# Each module exposes `add_parser(subparsers) -> None`; the parser it adds sets `func`
# (a callable taking the parsed args and returning an exit code).
COMMAND_MODULES: tuple[str, ...] = (
    "validate",
    "crds",
    "certs",
    "webhook",
    "render",
    "migrate",
    "controller",
    "run",
    "statusserver",
    "dev",
    "dashboard",
)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where the help is, without the usage
    block (for `kubetrain run` that is some thirty lines above the one that matters)."""

    commands: dict[str, argparse.ArgumentParser]  # the sub-commands' parsers, by name

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> Parser:
    parser = Parser(
        prog="kubetrain",
        description=f"Kubernetes operator for distributed training jobs ({', '.join(known_kinds())}).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"kubetrain.commands.{name}")
        module.add_parser(sub)
    parser.commands = dict(sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the sub-command's parser, so the hint names *its* --help
        parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last resort: one line, never a traceback
        logging.getLogger("kubetrain").debug("kubetrain %s failed", args.command, exc_info=True)
        print(f"kubetrain {args.command}: error: {str(exc) or type(exc).__name__}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
