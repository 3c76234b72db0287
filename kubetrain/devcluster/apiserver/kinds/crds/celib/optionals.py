"""CEL optional values (cel-go `cel.OptionalTypes`, which kube-apiserver enables for CRD rules):
`optional.of`, `optional.none`, `optional.ofNonZeroValue`, and `hasValue`, `value`, `orValue`,
`or` on an optional; with them, the `oldSelf` of a rule setting `optionalOldSelf`.

```
optional.of(1).orValue(2)          // 1       optional.none().hasValue()   // false
optional.none().value()            // error "optional.none() dereference"
oldSelf.hasValue() ? oldSelf.value() <= self : true      // optionalOldSelf: also on create
```
Not covered: the optional syntax `x.?field` and `m[?key]` and the `optMap` / `optFlatMap`
macros, which celpy's parser does not read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.kinds.crds.celib.values import equal, error, no_overload


@dataclass(frozen=True, eq=False)
class Optional:
    """`types.Optional`: a value, or none (`value` is `_NONE`)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return False
        if self.value is _NONE or other.value is _NONE:
            return self.value is other.value
        return equal(self.value, other.value)

    def __hash__(self) -> int:
        return 0


_NONE = object()
NONE = Optional(_NONE)


def of(value: Any) -> Optional:
    return Optional(value)


def _zero(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (ct.BoolType, ct.IntType, ct.UintType, ct.DoubleType, str, bytes, list, dict)):
        return not v
    if isinstance(v, ct.DurationType):
        return v.total_seconds() == 0
    return False


def _namespace(call: Callable[..., Any]) -> Callable[..., Any]:
    """`optional.f(...)`: celpy reads it as a method of the identifier `optional`, which names
    the `optional` function below."""

    def method(namespace: Any, *args: Any) -> Any:
        if namespace is not _optional:
            return no_overload(namespace)
        return call(*args)

    return method


def _optional(*_args: Any) -> Any:
    return no_overload()


def _on(get: Callable[..., Any]) -> Callable[..., Any]:
    def call(opt: Any, *args: Any) -> Any:
        if not isinstance(opt, Optional):
            return no_overload(opt)
        return get(opt, *args)

    return call


def _value(opt: Optional) -> Any:
    return error("optional.none() dereference") if opt.value is _NONE else opt.value


def _or(opt: Optional, other: Any) -> Any:
    if not isinstance(other, Optional):
        return no_overload(other)
    return other if opt.value is _NONE else opt


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "optional": _optional,
    "of": _namespace(of),
    "none": _namespace(lambda: NONE),
    "ofNonZeroValue": _namespace(lambda v: NONE if _zero(v) else Optional(v)),
    "hasValue": _on(lambda o: ct.BoolType(o.value is not _NONE)),
    "value": _on(_value),
    "orValue": _on(lambda o, default: default if o.value is _NONE else o.value),
    "or": _on(_or),
}
