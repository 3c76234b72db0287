"""The Kubernetes CEL semver library (k8s.io/apiserver pkg/cel/library/semverlib.go, version 1)
over a port of github.com/blang/semver/v4 `Parse`: `semver()` and `isSemver` (each optionally
normalizing: `semver('v01.2', true)` is 1.2.0), `isGreaterThan`, `isLessThan`, `compareTo`,
`major`, `minor`, `patch`.

```
semver('1.2.3-alpha.1').isLessThan(semver('1.2.3'))   // true (a prerelease sorts first)
semver('1.2.3+build') == semver('1.2.3')              // true (build metadata is not compared)
semver('1.2')       // error "No Major.Minor.Patch elements found"
```
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import error, no_overload
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote

_NUMBERS = set(string.digits)
_ALPHANUM = set(string.ascii_letters + string.digits + "-")


class SemverError(ValueError):
    pass


@dataclass(frozen=True, eq=False)
class Semver:
    """The CEL `Semver` type: major, minor, patch and the prerelease identifiers (numbers as
    ints); build metadata is parsed and checked, then ignored, as comparisons ignore it."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and compare(self, other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))


def _only(s: str, allowed: set[str]) -> bool:
    return all(c in allowed for c in s)


def _uint(s: str) -> int:
    if s == "" or not _only(s, _NUMBERS):
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(s)}: invalid syntax")
    if int(s) >= 2**64:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(s)}: value out of range")
    return int(s)


def _number(s: str, which: str) -> int:
    if not _only(s, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {which.lower()} number {go_quote(s)}")
    if len(s) > 1 and s[0] == "0":
        raise SemverError(f"{which} number must not contain leading zeroes {go_quote(s)}")
    return _uint(s)


def _prerelease(s: str) -> int | str:
    """`NewPRVersion`."""
    if s == "":
        raise SemverError("Prerelease is empty")
    if _only(s, _NUMBERS):
        if len(s) > 1 and s[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(s)}")
        return _uint(s)
    if _only(s, _ALPHANUM):
        return s
    raise SemverError(f"Invalid character(s) found in prerelease {go_quote(s)}")


def parse(s: str) -> Semver:
    """blang/semver `Parse`, or raise with its error."""
    if s == "":
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "Major"), _number(parts[1], "Minor")
    patch_text, build_sep, build = parts[2].partition("+")
    patch_text, pre_sep, pre = patch_text.partition("-")
    patch = _number(patch_text, "Patch")
    prerelease = tuple(_prerelease(p) for p in pre.split(".")) if pre_sep else ()
    for item in build.split(".") if build_sep else []:
        if item == "":
            raise SemverError("Build meta data is empty")
        if not _only(item, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(item)}")
    return Semver(major, minor, patch, prerelease)


def normalize_and_parse(s: str) -> Semver:
    """semverlib.go `normalizeAndParse`: a `v` prefix dropped, leading zeros removed, a missing
    minor or patch filled with 0."""
    parts = s.removeprefix("v").split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if p == "" or p[0] not in string.digits:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


def compare(v: Semver, o: Semver) -> int:
    """`Version.Compare`: numbers, then prerelease identifiers (a version without one is
    greater; numeric identifiers sort before alphanumeric ones)."""
    for a, b in ((v.major, o.major), (v.minor, o.minor), (v.patch, o.patch)):
        if a != b:
            return _cmp(a, b)
    if not v.pre or not o.pre:
        return _cmp(not v.pre, not o.pre)
    for x, y in zip(v.pre, o.pre, strict=False):
        if x == y:
            continue
        if isinstance(x, int) != isinstance(y, int):
            return -1 if isinstance(x, int) else 1
        return -1 if x < y else 1  # type: ignore[operator]
    return _cmp(len(v.pre), len(o.pre))


def _parser(normalize: Any) -> Callable[[str], Semver] | None:
    if normalize is None:
        return parse
    if isinstance(normalize, ct.BoolType):
        return normalize_and_parse if bool(normalize) else parse
    return None


def to_semver(s: Any, normalize: Any = None) -> Any:
    run = _parser(normalize)
    if not isinstance(s, str) or run is None:
        return no_overload(s)
    try:
        return run(str(s))
    except SemverError as err:
        return error(str(err))


def is_semver(s: Any, normalize: Any = None) -> Any:
    run = _parser(normalize)
    if not isinstance(s, str) or run is None:
        return no_overload(s)
    try:
        run(str(s))
    except SemverError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _two(op: Callable[[int], Any]) -> Callable[[Any, Any], Any]:
    def call(a: Any, b: Any) -> Any:
        if not isinstance(a, Semver) or not isinstance(b, Semver):
            return no_overload(a)
        return op(compare(a, b))

    return call


def _one(get: Callable[[Semver], int]) -> Callable[[Any], Any]:
    def call(v: Any) -> Any:
        if not isinstance(v, Semver):
            return no_overload(v)
        return ct.IntType(get(v))

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "semver": to_semver,
    "isSemver": is_semver,
    "isGreaterThan": _two(lambda c: ct.BoolType(c == 1)),
    "isLessThan": _two(lambda c: ct.BoolType(c == -1)),
    "compareTo": _two(ct.IntType),
    "major": _one(lambda v: v.major),
    "minor": _one(lambda v: v.minor),
    "patch": _one(lambda v: v.patch),
}
