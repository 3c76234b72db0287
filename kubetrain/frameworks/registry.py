"""Job kind → Framework. Adding a framework is one line here plus its module."""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api.groups import KUBEDL_GROUP, KUBEFLOW_GROUP, group_version
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


def job_version(kind: str, group: str) -> str:
    """The version a job kind is stored, admitted and reconciled at in `group`."""
    fw = FRAMEWORKS.get(kind)
    return fw.kubeflow_version if fw is not None and group == KUBEFLOW_GROUP else group_version(group)


def conversion_crd_names(groups: Iterable[str]) -> list[str]:
    """The CRDs with a conversion webhook among the served groups' (mpijobs.kubeflow.org)."""
    if KUBEFLOW_GROUP not in groups:
        return []
    return [f"{fw.plural}.{KUBEFLOW_GROUP}" for fw in FRAMEWORKS.values() if fw.kubeflow_converted_versions]


def converted_versions(kind: str, group: str) -> tuple[str, ...]:
    """The further versions the kind is served at in `group`, through the conversion webhook."""
    fw = FRAMEWORKS.get(kind)
    return fw.kubeflow_converted_versions if fw is not None and group == KUBEFLOW_GROUP else ()


def group_serves(group: str, kind: str) -> bool:
    """Whether API group `group` has job kind `kind` (KubeDL's group: only KubeDL's kinds)."""
    framework = FRAMEWORKS.get(kind)
    return framework is not None and (group != KUBEDL_GROUP or framework.kubedl_kind)
