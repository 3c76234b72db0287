"""devcluster refuses a pod's nodeSelector and inter-pod affinity terms as kube-apiserver does
(kinds/affinityvalidation.py; upstream pkg/apis/core/validation `validatePodAffinityTerm`,
apimachinery `ValidateLabelSelector`, `ValidateLabels`) — among them the terms a TrainJob's
exclusive placement writes into its leader pods."""

from __future__ import annotations

from typing import Any

from kubetrain.api.trainer import constants as c
from kubetrain.devcluster.apiserver.kinds import builtins
from kubetrain.jobs import jobsetplacement

QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
REQUIRED = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


def causes(**spec: Any) -> list[tuple[str, str, str]]:
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    spec.setdefault("restartPolicy", "Never")
    return [(x.reason, x.field, x.message) for x in builtins.validate_pod({"spec": spec}, None)]


def leader(topology_key: str) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "labels": {c.JOB_KEY: "0123abcd"},
            "annotations": {jobsetplacement.EXCLUSIVE_KEY: topology_key, c.COMPLETION_INDEX: "0"},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
    }
    jobsetplacement.apply(pod, "ns", "tj-node-0")
    return pod


def test_the_exclusive_placement_leaders_terms_are_accepted() -> None:
    pod = leader("cloud.google.com/gke-nodepool")
    assert pod["spec"]["affinity"]["podAntiAffinity"]
    assert builtins.validate_pod(pod, None) == []


def test_an_empty_topology_key_is_refused_twice_as_upstream_does() -> None:
    pod = leader("")
    got = [(x.reason, x.field, x.message) for x in builtins.validate_pod(pod, None)]
    anti = REQUIRED.replace("podAffinity", "podAntiAffinity")
    assert got == [
        ("FieldValueRequired", f"{REQUIRED}.topologyKey", "Required value: can not be empty"),
        ("FieldValueInvalid", f"{REQUIRED}.topologyKey", 'Invalid value: "": name part must be non-empty'),
        ("FieldValueInvalid", f"{REQUIRED}.topologyKey", f'Invalid value: "": {QUALIFIED}'),
        ("FieldValueRequired", f"{anti}.topologyKey", "Required value: can not be empty"),
        ("FieldValueInvalid", f"{anti}.topologyKey", 'Invalid value: "": name part must be non-empty'),
        ("FieldValueInvalid", f"{anti}.topologyKey", f'Invalid value: "": {QUALIFIED}'),
    ]


def test_a_topology_key_that_is_no_label_name() -> None:
    got = causes(
        affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "rack!"}]}
        }
    )
    assert got == [("FieldValueInvalid", f"{REQUIRED}.topologyKey", f'Invalid value: "rack!": {QUALIFIED}')]


def test_label_selector_requirements() -> None:
    selector = {
        "matchLabels": {"app": "a b"},
        "matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Equals", "values": ["x"]},
            {"key": "d", "operator": "NotIn", "values": ["ok", "not ok"]},
        ],
    }
    term = {"labelSelector": selector, "topologyKey": "zone", "namespaces": ["Bad_NS"]}
    got = causes(
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": term}]
            }
        }
    )
    at = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    sel = f"{at}.podAffinityTerm.labelSelector"
    value_error = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
        "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
    assert [(r, f) for r, f, _ in got] == [
        ("FieldValueInvalid", f"{at}.weight"),
        ("FieldValueInvalid", f"{sel}.matchLabels"),
        ("FieldValueRequired", f"{sel}.matchExpressions[0].values"),
        ("FieldValueForbidden", f"{sel}.matchExpressions[1].values"),
        ("FieldValueInvalid", f"{sel}.matchExpressions[2].operator"),
        ("FieldValueInvalid", f"{sel}.matchExpressions[3].values[1]"),
        ("FieldValueInvalid", f"{at}.podAffinityTerm.namespace"),
    ]
    messages = [m for _, _, m in got]
    assert messages[0] == "Invalid value: 0: must be in the range 1-100"
    assert messages[1] == f'Invalid value: "a b": {value_error}'
    assert messages[2] == "Required value: must be specified when `operator` is 'In' or 'NotIn'"
    assert messages[3] == "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    assert messages[4] == 'Invalid value: "Equals": not a valid selector operator'
    assert messages[5] == f'Invalid value: "not ok": {value_error}'
    assert messages[6].startswith('Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of')


def test_node_selector_keys_and_values_are_labels() -> None:
    assert causes(nodeSelector={"topology.kubernetes.io/zone": "eu-1a"}) == []
    got = causes(nodeSelector={"bad key": "v", "ok": "-x"})
    assert [(r, f) for r, f, _ in got] == [("FieldValueInvalid", "spec.nodeSelector")] * 2
    assert got[0][2].startswith('Invalid value: "bad key": name part must consist of')
    assert got[1][2].startswith('Invalid value: "-x": a valid label must be an empty string')


NODE_REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
NODE_PREFERRED = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def node_affinity(
    required: list[dict[str, Any]] | None, preferred: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"nodeAffinity": out}


def test_node_affinity_terms_are_valid_node_selectors() -> None:
    good = [
        {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                {"key": "gpu-count", "operator": "Gt", "values": ["3"]},
                {"key": "spot", "operator": "DoesNotExist"},
            ],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}],
        }
    ]
    assert causes(affinity=node_affinity(good, [{"weight": 5, "preference": good[0]}])) == []
    assert causes(affinity=node_affinity([])) == [
        (
            "FieldValueRequired",
            f"{NODE_REQUIRED}.nodeSelectorTerms",
            "Required value: must have at least one node selector term",
        )
    ]
    bad = [
        {
            "matchExpressions": [
                {"key": "a", "operator": "Lt", "values": ["1", "2"]},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Near"},
                {"key": "d", "operator": "In", "values": ["bad value"]},
            ],
            "matchFields": [{"key": "metadata.uid", "operator": "Exists"}],
        }
    ]
    term = f"{NODE_REQUIRED}.nodeSelectorTerms[0]"
    label_value = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
        "'12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
    assert causes(affinity=node_affinity(bad)) == [
        (
            "FieldValueRequired",
            f"{term}.matchExpressions[0].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            "FieldValueForbidden",
            f"{term}.matchExpressions[1].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            "FieldValueInvalid",
            f"{term}.matchExpressions[2].operator",
            'Invalid value: "Near": not a valid selector operator',
        ),
        (
            "FieldValueInvalid",
            f"{term}.matchExpressions[3].values[0]",
            f'Invalid value: "bad value": {label_value}',
        ),
        (
            "FieldValueInvalid",
            f"{term}.matchFields[0].operator",
            'Invalid value: "Exists": not a valid selector operator',
        ),
        (
            "FieldValueInvalid",
            f"{term}.matchFields[0].key",
            'Invalid value: "metadata.uid": not a valid field selector key',
        ),
    ]
    # a preferred term's values are not label-checked (upstream allows them); its weight is
    loose = {"matchExpressions": [{"key": "d", "operator": "In", "values": ["bad value"]}]}
    assert causes(affinity=node_affinity(None, [{"weight": 101, "preference": loose}])) == [
        ("FieldValueInvalid", f"{NODE_PREFERRED}[0].weight", "Invalid value: 101: must be in the range 1-100")
    ]
