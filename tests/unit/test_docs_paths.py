"""The repository files and Python names README.md and docs/ point readers to exist.

- A path starting with one of the repository's own top-level directories (`kubetrain/`,
  `benchmarks/`, `examples/`, `charts/`, `tests/`, `scripts/`, `docs/`, `crds/`) exists; `*`,
  `<placeholder>` and a trailing `…` stand for any name and must match at least one. Paths git
  ignores (benchmark output) are what a command writes, not files of the repository. A path right
  after another project's possessive (Trainer's `examples/flux`) is that project's, not ours.
- A dotted name under a kubetrain package (`kubetrain.serving.merge`,
  `kubetrain.operator.status.is_true`) imports, or is an attribute of a module that does.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess

from docs_reading import ROOT, Line, all_lines

import kubetrain

TOP = ("kubetrain", "benchmarks", "examples", "charts", "tests", "scripts", "docs", "crds")
_PATH = re.compile(r"(?<![\w./@:-])((?:" + "|".join(TOP) + r")/[\w./*<>…-]*)")
_OTHER_PROJECTS = re.compile(r"[A-Z][\w.-]*(?: v?[\d.]+)?'s `$")
_DOTTED = re.compile(r"(?<![\w./-])kubetrain(?:\.[A-Za-z_]\w*)+")
PACKAGES = {module.name for module in pkgutil.iter_modules(kubetrain.__path__)}


def _ignored(paths: list[str]) -> set[str]:
    """Those of `paths` git ignores."""
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=ROOT,
        input="\n".join(paths),
        capture_output=True,
        text=True,
        check=False,
    )
    return set(result.stdout.split())


def named_paths() -> list[tuple[Line, str]]:
    found: list[tuple[Line, str]] = []
    previous = ""
    for line in all_lines():
        for match in _PATH.finditer(line.text):
            before = line.text[: match.start()].lstrip()
            if _OTHER_PROJECTS.search(f"{previous.strip()} {before}" if before == "`" else before):
                continue
            path = match.group(1).rstrip(".")
            found.append((line, path))
        previous = line.text
    return found


def _exists(path: str) -> bool:
    pattern = re.sub(r"<[^>]*>", "*", path.replace("…", "*"))
    if "*" in pattern:
        return any(ROOT.glob(pattern.rstrip("/")))
    return (ROOT / path).exists()


def test_the_docs_name_repository_paths() -> None:
    assert len(named_paths()) >= 200


def test_every_repository_path_the_docs_name_exists() -> None:
    named = named_paths()
    missing = [(line, path) for line, path in named if not _exists(path)]
    ignored = _ignored([path for _, path in missing])
    problems = [f"{line.where()}: {path} does not exist" for line, path in missing if path not in ignored]
    assert not problems, "\n".join(problems)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def named_modules() -> list[tuple[Line, str]]:
    """Dotted names under one of kubetrain's packages (`kubetrain.io`, the API group, is not one)."""
    found: list[tuple[Line, str]] = []
    for line in all_lines():
        for match in _DOTTED.finditer(line.text):
            name = match.group(0)
            if name.split(".")[1] in PACKAGES and line.text[match.end() : match.end() + 1] != "/":
                found.append((line, name))
    return found


def test_the_docs_name_modules() -> None:
    assert len(named_modules()) >= 20


def test_every_module_the_docs_name_imports() -> None:
    problems = [
        f"{line.where()}: {name} is neither a module nor an attribute of one"
        for line, name in named_modules()
        if not _resolves(name)
    ]
    assert not problems, "\n".join(problems)
