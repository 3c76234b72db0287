"""Image references and `allowedImages` globs.

Globs are matched with `fnmatch.fnmatchcase` against the *full* image reference: `*` matches
any run of characters including `/` and `:`, `?` one character, `[abc]` a set. The reference is
first normalised the way the container runtime resolves it, so a short name cannot slip past a
registry rule: `pytorch/pytorch:2.3` is matched as `docker.io/pytorch/pytorch:2.3`, and
`python:3.11` as `docker.io/library/python:3.11`. Tags and digests are kept as written (no
implicit `:latest`), so `registry.example.com/ml/*` admits every tag and digest under that path.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from kubetrain.api.errors import QUOTE

DOCKER_HUB = "docker.io"


def _has_registry(first: str) -> bool:
    return "." in first or ":" in first or first == "localhost" or first != first.lower()


def normalize_image(image: str) -> str:
    """The full reference of `image`: registry host and (for Docker Hub) `library/` added."""
    image = image.strip()
    first, sep, rest = image.partition("/")
    if sep and _has_registry(first):
        domain, remainder = first, rest
    else:
        domain, remainder = DOCKER_HUB, image
    if domain in ("index.docker.io", "registry-1.docker.io"):
        domain = DOCKER_HUB
    if domain == DOCKER_HUB and "/" not in remainder:
        remainder = f"library/{remainder}"
    return f"{domain}/{remainder}"


def image_allowed(image: str, globs: list[str]) -> bool:
    full = normalize_image(image)
    return any(fnmatchcase(full, glob) for glob in globs)


def glob_problem(glob: str) -> str | None:
    """Why a glob can never do what its author meant, or None when it is usable."""
    if not glob or glob != glob.strip() or any(c.isspace() for c in glob):
        return "must be a non-empty glob without whitespace"
    depth = 0
    for char in glob:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
    if depth:
        return "has an unclosed '[' (character class)"
    wild = any(c in glob for c in "*?[")
    first, sep, _ = glob.partition("/")
    if not sep:
        if not wild:
            return (
                "never matches: images are matched by their full reference, "
                f"e.g. {QUOTE.encode(normalize_image(glob))}"
            )
        return None
    if not any(c in first for c in "*?[") and not _has_registry(first):
        return (
            "never matches: images are matched by their full reference starting with the "
            f"registry host, e.g. {QUOTE.encode(DOCKER_HUB + '/' + glob)}"
        )
    return None
