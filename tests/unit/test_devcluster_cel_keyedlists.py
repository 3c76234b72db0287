"""CEL `==`, `!=` and `+` on `x-kubernetes-list-type: set` and `map` lists as devcluster evaluates
them in CRD rules (crds/celib/keyedlists.py). The cases are upstream's (k8s.io/apiserver
pkg/cel/common values_test.go `TestToValue` "listType=..." and the add-lists cases, with their
x, y, z, w objects), run through a CRD schema as kube-apiserver runs them; the cases using
`dyn()` are left out (devcluster's CEL has no `dyn`), as is the equality of map lists keyed by a
name CEL escapes (`if`), which upstream's own test leaves out for objects read from JSON."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.kinds.crds import celeval, celrules
from kubetrain.devcluster.apiserver.kinds.crds.celib.keyedlists import SCALARS_ONLY

ENTRY = {
    "type": "object",
    "properties": {"key1": {"type": "string"}, "key2": {"type": "string"}, "value": {"type": "integer"}},
}
IF_ENTRY = {"type": "object", "properties": {"if": {"type": "string"}, "value": {"type": "integer"}}}
WIDE_ENTRY = {
    "type": "object",
    "properties": {**{f"key{i}": {"type": "string"} for i in range(1, 5)}, "value": {"type": "integer"}},
}


def map_list(items: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }


LISTS = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "items": {"type": "array", "items": ENTRY},
        "mapList": map_list(ENTRY, "key1", "key2"),
        "ifList": map_list(IF_ENTRY, "if"),
        "wide": map_list(WIDE_ENTRY, "key1", "key2", "key3", "key4"),
        "tri": map_list(WIDE_ENTRY, "key1", "key2", "key3"),
        "setList": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"},
        "setOfLists": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}},
            "x-kubernetes-list-type": "set",
        },
    },
}


def entry(key1: str, key2: str, value: int) -> dict[str, Any]:
    return {"key1": key1, "key2": key2, "value": value}


def wide(k1: str, k2: str, k3: str, k4: str | None, value: int) -> dict[str, Any]:
    out = {"key1": k1, "key2": k2, "key3": k3, "value": value}
    return out if k4 is None else {**out, "key4": k4}


X = {
    "tags": ["a", "b", "c"],
    "items": [entry("k1v1", "k2v1", 1), entry("k1v2", "k2v2", 2)],
    "mapList": [entry("k1v1", "k2v1", 1), entry("k1v2", "k2v2", 2)],
    "ifList": [{"if": "a", "value": 1}, {"if": "b", "value": 2}],
    "wide": [wide("a b", "c", "d", "e", 1)],
    "tri": [wide("ta", "tb", "tc", None, 1), wide("td", "te", "tf", None, 2)],
    "setList": [1, 2, 3],
    "setOfLists": [["a b", "c"], ["x"]],
}
Y = {
    "tags": ["d", "e"],
    "items": [entry("yk1", "yk2", 7)],
    "mapList": [entry("k1v1", "k2v1", 10), entry("k1v3", "k2v3", 3)],
    "ifList": [{"if": "a", "value": 10}, {"if": "c", "value": 3}],
    "wide": [wide("a", "b c", "d", "e", 2)],  # key1/key2 split elsewhere: another key
    "tri": [wide("tg", "th", "ti", None, 3)],
    "setList": [3, 30],
    "setOfLists": [["a", "b c"], ["x"]],
}
Z = {  # the same entries as x + y (or x), in another order
    "mapList": [entry("k1v3", "k2v3", 3), entry("k1v1", "k2v1", 10), entry("k1v2", "k2v2", 2)],
    "ifList": [{"if": "b", "value": 2}, {"if": "a", "value": 1}],
    "wide": [wide("a", "b c", "d", "e", 2), wide("a b", "c", "d", "e", 1)],
    "tri": [wide("td", "te", "tf", None, 2), wide("ta", "tb", "tc", None, 1)],
    "setList": [30, 3, 2, 1],
    "setOfLists": [["x"], ["a b", "c"]],
}
W = {  # duplicate keys and elements: invalid data, but never equal to a valid list of its size
    "mapList": [entry("k1v1", "k2v1", 1), entry("k1v1", "k2v1", 1)],
    "setList": [1, 1, 1],
}


def evaluate(rule: str) -> list[str]:
    """The failure messages of `rule` evaluated at an object holding x, y, z and w."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {k: LISTS for k in "xyzw"},
                "x-kubernetes-validations": [{"rule": rule}],
            }
        },
    }
    compiled = celrules.compile_schema(schema)
    assert compiled.skipped == []
    return [c.message for c in celeval.validate(compiled, {"spec": {"x": X, "y": Y, "z": Z, "w": W}}, None)]


TRUE = [
    # listType=map (TestToValue)
    "self.x.mapList == self.x.mapList",
    "self.x.mapList != self.y.mapList",
    "self.x.mapList + self.x.mapList == self.x.mapList",
    # list concatenation without a list type
    "(self.x.tags + ['d']) == ['a', 'b', 'c', 'd']",
    "(self.x.tags + self.y.tags) == ['a', 'b', 'c', 'd', 'e']",
    "(self.x.tags + ['d'] + self.y.tags) == ['a', 'b', 'c', 'd', 'd', 'e']",
    "(self.x.items + [{'key1': 'lk1', 'key2': 'lk2', 'value': 100}])[2].value == 100",
    "([{'key1': 'lk1'}] + self.x.items)[0].key1 == 'lk1' "
    "&& ([{'key1': 'lk1'}] + self.x.items)[1].key1 == 'k1v1'",
    "(self.x.items + self.y.items)[2].key1 == 'yk1'",
    # x-kubernetes-list-type=map
    "(self.x.mapList + self.y.mapList)[0].value == 10 && size(self.x.mapList + self.y.mapList) == 3",
    "(self.x.mapList + self.y.mapList)[2].key1 == 'k1v3'",
    "(self.x.mapList + [{'key1': 'k1v1', 'key2': 'k2v1', 'value': 99}])[0].value == 99 "
    "&& size(self.x.mapList + [{'key1': 'k1v1', 'key2': 'k2v1', 'value': 99}]) == 2",
    "(self.x.mapList + [{'key1': 'k1v9', 'key2': 'k2v9', 'value': 9}])[2].value == 9",
    "(self.x.mapList + self.y.mapList + [{'key1': 'k1v3', 'key2': 'k2v3', 'value': 33}])[2].value == 33",
    "(self.x.mapList + self.y.mapList) == self.z.mapList",
    "(self.x.ifList + self.y.ifList)[0].value == 10 && size(self.x.ifList + self.y.ifList) == 3",
    "size(self.x.wide + self.y.wide) == 2 && (self.x.wide + self.y.wide)[0].value == 1",
    "(self.x.wide + self.y.wide) == self.z.wide && self.z.wide == (self.x.wide + self.y.wide)",
    "size(self.x.tri + self.y.tri) == 3 && self.x.tri == self.z.tri",
    "(self.x.mapList + self.y.mapList) != self.x.mapList "
    "&& self.x.mapList != (self.x.mapList + self.y.mapList)",
    "(self.x.mapList + [{'key1': 'A', 'key2': 'B', 'value': 9}]) "
    "!= (self.x.mapList + [{'key1': 'C', 'key2': 'D', 'value': 9}])",
    "(self.x.mapList + [{'key1': 'A', 'key2': 'B', 'value': 1}]) "
    "!= (self.x.mapList + [{'key1': 'A', 'key2': 'B', 'value': 2}])",
    "self.x.mapList != self.w.mapList && self.w.mapList != self.x.mapList",
    "(self.x.mapList + self.w.mapList) != self.w.mapList",
    # x-kubernetes-list-type=set
    "(self.x.setList + [3, 4]) == [1, 2, 3, 4]",
    "(self.x.setList + self.y.setList) == [1, 2, 3, 30]",
    "(self.x.setList + [4]) == [4, 3, 2, 1]",
    "(self.x.setList + [4] + [4, 5]) == [1, 2, 3, 4, 5]",
    "(self.x.setList + self.y.setList) == self.z.setList "
    "&& self.z.setList == (self.x.setList + self.y.setList)",
    "self.x.setList != self.y.setList",
    "(self.x.setList + self.y.setList) != self.x.setList "
    "&& self.x.setList != (self.x.setList + self.y.setList)",
    "(self.x.setList + [4]) == (self.x.setList + [4])",
    "[self.x.setList].all(s, (s + self.y.setList) == (s + self.y.setList))",
    "(self.x.setList + [4]) != (self.x.setList + [5])",
    "self.x.setList != self.w.setList && self.w.setList != self.x.setList",
    "self.x.setList != [1, 1, 3]",
    "(self.x.setList + [4]) != [1, 1, 3, 4]",
    # the left operand decides: an atomic (literal) list on the left compares in order
    "[3, 2, 1] != self.x.setList && self.x.setList == [3, 2, 1]",
    "self.x.setList != null && self.x.mapList != null",
]


@pytest.mark.parametrize("rule", TRUE)
def test_upstream_cases_hold(rule: str) -> None:
    assert evaluate(rule) == []


@pytest.mark.parametrize(
    "rule",
    [
        "self.x.setOfLists == self.z.setOfLists",
        "self.x.setOfLists == [['a b', 'c'], ['x']]",
        "size(self.x.setOfLists + self.y.setOfLists) == 3",
        "size(self.x.setOfLists + [['x']]) == 2",
    ],
)
def test_a_set_of_lists_is_an_evaluation_error(rule: str) -> None:
    assert evaluate(rule) == [f'Invalid value: "object": {SCALARS_ONLY} evaluating rule: {rule}']


def test_an_element_type_counts_in_a_set() -> None:
    """`setElementKey` keys by the Go value: the int 1 is not the double 1.0 (in-order `==` of an
    atomic list holds them equal, as cel-go's heterogeneous equality does)."""
    assert evaluate("self.x.setList != [1.0, 2.0, 3.0]") == []


def test_a_rule_on_a_map_list_without_rules_below_it_sees_its_list_type() -> None:
    """The nodes of set and map lists are kept even where nothing below them has a rule, so an
    enclosing `self == oldSelf` compares them as the API server does."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"deps": map_list(ENTRY, "key1")},
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
            }
        },
    }
    compiled = celrules.compile_schema(schema)
    old = {"spec": {"deps": [entry("a", "", 1), entry("b", "", 2)]}}
    reordered = {"spec": {"deps": old["spec"]["deps"][::-1]}}
    changed = {"spec": {"deps": [entry("a", "", 1), entry("b", "", 3)]}}
    assert celeval.validate(compiled, reordered, old) == []
    assert [c.message for c in celeval.validate(compiled, changed, old)] == ["Invalid value: immutable"]
