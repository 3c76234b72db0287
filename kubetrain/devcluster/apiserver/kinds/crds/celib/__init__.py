"""The Kubernetes CEL libraries kube-apiserver's CRD validation environment declares (k8s.io/
apiserver pkg/cel/environment/base.go), as functions for celpy: lists (plus cel-go's string
`indexOf` / `lastIndexOf`), regex, URLs, quantities, IPs, CIDRs, semantic versions, CEL
optionals and named formats.
`FUNCTIONS` maps each function name to its implementation; a member call `x.f(y)` reaches it as
`f(x, y)`. Where libraries share a name (`compareTo`, `isLessThan`, `isGreaterThan` of
quantities and semvers; `ip()` of a string and of a CIDR), the overload is chosen by the
arguments, as cel-go's dispatch does: each implementation refuses arguments not its own with
a TypeError (`no such overload`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.kinds.crds.celib import (
    cidr,
    format,
    ip,
    lists,
    optionals,
    quantity,
    regex,
    semver,
    urls,
)

_LIBRARIES = (lists, regex, urls, quantity, ip, cidr, semver, optionals, format)
# identifiers a rule may name besides self and oldSelf: library namespaces (`format.uuid()`)
NAMESPACES: dict[str, Any] = {"format": format.NAMESPACE}


def _overloads(impls: list[Callable[..., Any]]) -> Callable[..., Any]:
    if len(impls) == 1:
        return impls[0]

    def dispatch(*args: Any) -> Any:
        for impl in impls[:-1]:
            try:
                return impl(*args)
            except TypeError:
                continue
        return impls[-1](*args)

    return dispatch


def _merge() -> dict[str, Callable[..., Any]]:
    by_name: dict[str, list[Callable[..., Any]]] = {}
    for library in _LIBRARIES:
        for name, impl in library.FUNCTIONS.items():
            by_name.setdefault(name, []).append(impl)
    return {name: _overloads(impls) for name, impls in by_name.items()}


FUNCTIONS: dict[str, Callable[..., Any]] = _merge()
