"""devcluster's DefaultTolerationSeconds admission (apiserver/verbs/tolerationseconds.py) with the
cases of upstream's plugin/pkg/admission/defaulttolerationseconds admission_test.go
`TestForgivenessAdmission`: the not-ready and unreachable NoExecute tolerations (300 s) are added
unless a toleration with that key or none, and effect NoExecute or none, is there already."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.verbs import tolerationseconds

NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}
GPU = {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
NOT_READY_NO_SCHEDULE = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
UNREACHABLE_ANY_EFFECT = {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}
NOT_READY_FOREVER = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}


def target(resource: str = "pods", subresource: str = "") -> Target:
    rt = Registry().by_key(resource)
    assert rt is not None
    return Target(rt, "v1", "default", "p", subresource=subresource)


def admitted(tolerations: list[dict[str, Any]] | None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    tolerationseconds.admit_pod(target(), pod)
    return pod["spec"].get("tolerations")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, [NOT_READY, UNREACHABLE]),
        ([], [NOT_READY, UNREACHABLE]),
        ([GPU], [GPU, NOT_READY, UNREACHABLE]),  # another taint's toleration stays first
        # the pod's own seconds for one taint are kept; the other gets the default
        ([{**NOT_READY, "tolerationSeconds": 700}], [{**NOT_READY, "tolerationSeconds": 700}, UNREACHABLE]),
        ([{**UNREACHABLE, "tolerationSeconds": 700}], [{**UNREACHABLE, "tolerationSeconds": 700}, NOT_READY]),
        ([NOT_READY, UNREACHABLE], [NOT_READY, UNREACHABLE]),
        # a NoSchedule toleration of the taint is not one for its NoExecute effect
        ([NOT_READY_NO_SCHEDULE], [NOT_READY_NO_SCHEDULE, NOT_READY, UNREACHABLE]),
        # an empty effect covers NoExecute; an empty key covers both taints
        ([UNREACHABLE_ANY_EFFECT], [UNREACHABLE_ANY_EFFECT, NOT_READY]),
        ([{"operator": "Exists", "effect": "NoExecute"}], [{"operator": "Exists", "effect": "NoExecute"}]),
        ([{"operator": "Exists"}], [{"operator": "Exists"}]),
        ([NOT_READY_FOREVER], [NOT_READY_FOREVER, UNREACHABLE]),  # forever is the pod's choice
    ],
)
def test_the_default_tolerations_are_added_only_where_the_pod_has_none(
    given: list[dict[str, Any]] | None, expected: list[dict[str, Any]]
) -> None:
    assert admitted(given) == expected


def test_subresources_and_other_kinds_are_left_alone() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": []}}
    tolerationseconds.admit_pod(target(subresource="status"), pod)
    assert "tolerations" not in pod["spec"]
    other: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {}}
    tolerationseconds.admit_pod(target("configmaps"), other)
    assert other["spec"] == {}


def test_tolerations_that_are_not_a_list_are_left_to_validation() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"tolerations": "all"}}
    tolerationseconds.admit_pod(target(), pod)
    assert pod["spec"]["tolerations"] == "all"
