"""The shape limits an admitted object is held to: at most MAX_NESTING_DEPTH objects or lists
deep, at most MAX_OBJECT_MEMBERS fields in one map, the first problem named by its path."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.webhook.shapelimits import MAX_NESTING_DEPTH, MAX_OBJECT_MEMBERS, shape_problem


def nested(depth: int, *, key: str = "a") -> Any:
    """`depth` maps, each the only field of the one around it, a string innermost."""
    value: Any = "x"
    for _ in range(depth):
        value = {key: value}
    return value


def test_an_ordinary_pod_template_is_within_the_limits() -> None:
    container = {"name": "c", "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}
    job = {"spec": {"replicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}}}
    assert shape_problem(job) is None


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH - 1, MAX_NESTING_DEPTH])
def test_objects_up_to_the_depth_limit_pass(depth: int) -> None:
    assert shape_problem(nested(depth)) is None


def test_one_level_past_the_limit_is_named_at_the_level_it_starts() -> None:
    problem = shape_problem(nested(MAX_NESTING_DEPTH + 1))
    assert problem == (
        ".".join(["a"] * MAX_NESTING_DEPTH),
        f"nested more than {MAX_NESTING_DEPTH} objects or lists deep",
    )


def test_lists_count_as_levels_and_appear_in_the_path() -> None:
    value: Any = "x"
    for _ in range(MAX_NESTING_DEPTH + 1):
        value = [value]
    path, what = shape_problem({"spec": value}) or ("", "")
    assert path == "spec" + "[0]" * (MAX_NESTING_DEPTH - 1)
    assert what.startswith("nested more than")


def test_a_map_over_the_field_limit_is_named_and_one_at_the_limit_passes() -> None:
    at_limit = {f"f{i}": i for i in range(MAX_OBJECT_MEMBERS)}
    assert shape_problem({"spec": {"containers": [at_limit]}}) is None
    over = {**at_limit, "one-more": 0}
    assert shape_problem({"spec": {"containers": [{"name": "c"}, over]}}) == (
        "spec.containers[1]",
        f"has {MAX_OBJECT_MEMBERS + 1} fields; at most {MAX_OBJECT_MEMBERS} are accepted",
    )


def test_nesting_far_past_what_recursion_allows_is_answered() -> None:
    assert shape_problem(nested(100_000)) is not None
