"""The `kubetrain` command line: one sub-command per module in `kubetrain.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
    "dev",
    "dashboard",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubetrain",
        description=f"Kubernetes operator for distributed training jobs ({', '.join(known_kinds())}).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"kubetrain.commands.{name}")
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
