"""Job kind → Framework. Adding a framework is one line here plus its module."""

from __future__ import annotations

from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.frameworks import jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost
from kubetrain.frameworks.base import Framework

FRAMEWORKS: dict[str, Framework] = {
    f.kind: f
    for f in (
        tensorflow.FRAMEWORK,
        pytorch.FRAMEWORK,
        mxnet.FRAMEWORK,
        xgboost.FRAMEWORK,
        jax.FRAMEWORK,
        paddle.FRAMEWORK,
        mpi.FRAMEWORK,
    )
}


def get_framework(kind: str) -> Framework | None:
    return FRAMEWORKS.get(kind)


def known_kinds() -> tuple[str, ...]:
    return tuple(FRAMEWORKS)


def group_serves(group: str, kind: str) -> bool:
    """Whether API group `group` has job kind `kind` (KubeDL's group: only KubeDL's kinds)."""
    framework = FRAMEWORKS.get(kind)
    return framework is not None and (group != KUBEDL_GROUP or framework.kubedl_kind)
