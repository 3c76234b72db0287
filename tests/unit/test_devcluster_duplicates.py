"""Duplicate keys of a request body (devcluster/apiserver/request/duplicates.py), with the paths and the
order sigs.k8s.io/json's strict decoder reports them in (kubernetes_patch_test.go
`TestDisallowDuplicateFields`)."""

from __future__ import annotations

from kubetrain.devcluster.apiserver.request.duplicates import (
    MAX_ERRORS,
    find,
    find_yaml,
    under,
    yaml_warnings,
)


def paths(raw: str) -> list[str]:
    found = find(raw)
    assert found is not None
    return [p for _, p in found.paths]


def test_upstream_untyped_map_case() -> None:
    raw = '{"a":"","b":"","a":"","b":"","c":{"c":"","c":""},"d":{"e":{"f":1,"f":1}},"e":[{"g":1,"g":1}]}'
    assert paths(raw) == ["a", "b", "c.c", "d.e.f", "e[0].g"]


def test_a_key_repeated_three_times_is_reported_once() -> None:
    assert paths('{"a":1,"a":2,"a":3,"b":{"x":[1,{"y":1,"y":2}]}}') == ["a", "b.x[1].y"]


def test_nested_lists_and_top_level_lists_get_index_paths() -> None:
    raw = '[{"op":"add","op":"remove","path":"/a"},{"value":{"k":[[{"z":1,"z":2}]]}}]'
    assert paths(raw) == ["[0].op", "[1].value.k[0][0].z"]


def test_duplicates_inside_the_first_value_of_a_repeated_key_are_found() -> None:
    """Go decodes both values; the first one's duplicates are not lost to `last wins`."""
    assert paths('{"s":{"x":1,"x":2},"s":{}}') == ["s.x", "s"]


def test_no_duplicate_or_not_json_is_none() -> None:
    assert find('{"a":{"a":1},"b":[{"a":1},{"a":2}]}') is None
    assert find("kind: Pod\nkind: Pod\n") is None
    assert find(b"") is None


def test_at_most_one_hundred_errors() -> None:
    raw = "{" + ",".join(f'"k{i}":1,"k{i}":2' for i in range(150)) + "}"
    assert paths(raw) == [f"k{i}" for i in range(MAX_ERRORS)]


def test_position_orders_unknown_fields_among_duplicates() -> None:
    found = find('{"metadata":{"name":"a","name":"b"},"spec":{"x":1}}')
    assert found is not None
    [(dup_at, _)] = found.paths
    assert found.position("metadata") < dup_at < found.position("spec.x")


def test_under_names_a_field_and_what_is_inside_it() -> None:
    assert under("spec.foo", ["spec.foo"]) and under("spec.foo.a", ["spec.foo"])
    assert under("spec.foo[0]", ["spec.foo"]) and not under("spec.foobar", ["spec.foo"])


def test_yaml_repeated_keys_are_go_yaml_strict_errors() -> None:
    """go-yaml v2 decode.go `setMapIndex`: each repeat (not deduplicated), after its value, at
    the line its value starts; keys printed as Go's %#v."""
    raw = "a:\n  x: 1\n  x: 2\na:\n  y: 1\na: 3\n1: one\n1: uno\ntrue: t\n'true': s\nn: [{k: 1, k: 2}]\n"
    found = find_yaml(raw)
    assert found is not None and not found.paths
    assert yaml_warnings(found.yaml) == [
        'line 3: key "x" already set in map',
        'line 5: key "a" already set in map',
        'line 6: key "a" already set in map',
        "line 8: key 1 already set in map",
        'line 11: key "k" already set in map',
    ]
    assert found.yaml.startswith('yaml: unmarshal errors:\n  line 3: key "x" already set in map\n  line 5')


def test_a_repeated_float_key_prints_as_go_prints_a_float64() -> None:
    """go-yaml v2 resolves `1000000.0` to a float64, and `%#v` prints it with strconv's 'g'
    shortest form (exponent from 1e6 and below 1e-4)."""
    raw = (
        "1000000.0: a\n1000000.0: b\n123456789.5: c\n123456789.5: d\n0.5: e\n0.5: f\n0.00001: g\n0.00001: h\n"
    )
    found = find_yaml(raw)
    assert found is not None
    assert yaml_warnings(found.yaml) == [
        "line 2: key 1e+06 already set in map",
        "line 4: key 1.234567895e+08 already set in map",
        "line 6: key 0.5 already set in map",
        "line 8: key 1e-05 already set in map",
    ]


def test_yaml_without_repeats_or_not_yaml_is_none() -> None:
    assert find_yaml("a: 1\nb: {a: 1}\nc: [{a: 1}, {a: 2}]\n") is None
    assert find_yaml("a: [\n") is None


def test_other_errors_are_single_warnings() -> None:
    assert yaml_warnings('unknown field "x"') == ['unknown field "x"']
