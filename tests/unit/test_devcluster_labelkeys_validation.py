"""devcluster refuses a pod's matchLabelKeys/mismatchLabelKeys as kube-apiserver does
(kinds/labelkeys.py; upstream pkg/apis/core/validation `validateMatchLabelKeysAndMismatchLabelKeys`,
run after the create-time merge into the selectors)."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds import builtins, labelkeys

TERM = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
SPREAD = "spec.topologySpreadConstraints[0]"


def created(labels: dict[str, str] | None = None, **spec: Any) -> list[tuple[str, str, str]]:
    """The causes a pod create gets: the keys merged first, then the spec validated."""
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    spec.setdefault("restartPolicy", "Never")
    pod: dict[str, Any] = {"metadata": {"name": "p", "labels": labels or {}}, "spec": spec}
    labelkeys.apply_label_keys(pod)
    return [(x.reason, x.field, x.message) for x in builtins.validate_pod(pod, None)]


def affinity(**term: Any) -> dict[str, Any]:
    term.setdefault("topologyKey", "zone")
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def spread(**constraint: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **constraint}]


def test_valid_label_keys_are_accepted_and_merged() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "a"}},
        "matchLabelKeys": ["gen"],
        "mismatchLabelKeys": ["team"],
    }
    assert created({"gen": "1", "team": "x"}, affinity=affinity(**term)) == []
    assert (
        created({"gen": "1"}, topologySpreadConstraints=spread(labelSelector={}, matchLabelKeys=["gen"]))
        == []
    )


def test_a_key_that_is_not_a_label_name_is_refused() -> None:
    term = {"labelSelector": {}, "mismatchLabelKeys": ["bad key"]}
    [(reason, field, message)] = created(affinity=affinity(**term))
    assert (reason, field) == ("FieldValueInvalid", f"{TERM}.mismatchLabelKeys[0]")
    assert message.startswith('Invalid value: "bad key": name part must consist of alphanumeric characters')


def test_keys_without_a_label_selector_are_forbidden() -> None:
    assert created(affinity=affinity(matchLabelKeys=["gen"])) == [
        (
            "FieldValueForbidden",
            f"{TERM}.matchLabelKeys",
            "Forbidden: must not be specified when labelSelector is not set",
        )
    ]
    assert created(topologySpreadConstraints=spread(matchLabelKeys=["gen"])) == [
        (
            "FieldValueForbidden",
            f"{SPREAD}.matchLabelKeys",
            "Forbidden: must not be specified when labelSelector is not set",
        )
    ]


def test_a_key_in_both_lists_is_refused() -> None:
    term = {"labelSelector": {}, "matchLabelKeys": ["a", "gen"], "mismatchLabelKeys": ["gen"]}
    assert created(affinity=affinity(**term)) == [
        (
            "FieldValueInvalid",
            f"{TERM}.matchLabelKeys[1]",
            'Invalid value: "gen": exists in both matchLabelKeys and mismatchLabelKeys',
        )
    ]


def test_a_match_label_key_the_selector_already_has_is_refused() -> None:
    term = {"labelSelector": {"matchLabels": {"gen": "1"}}, "matchLabelKeys": ["gen"]}
    expected = 'Invalid value: "gen": exists in both matchLabelKeys and labelSelector'
    assert created({"gen": "1"}, affinity=affinity(**term)) == [("FieldValueInvalid", f"{TERM}[0]", expected)]
    constraint = {
        "labelSelector": {"matchExpressions": [{"key": "gen", "operator": "Exists"}]},
        "matchLabelKeys": ["gen"],
    }
    assert created({"gen": "1"}, topologySpreadConstraints=spread(**constraint)) == [
        ("FieldValueInvalid", f"{SPREAD}[0]", expected)
    ]
    # The pod does not carry the key: nothing is merged, so nothing repeats (as upstream).
    fresh = {"labelSelector": {"matchLabels": {"gen": "1"}}, "matchLabelKeys": ["gen"]}
    assert created(affinity=affinity(**fresh)) == []
