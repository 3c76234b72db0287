"""The byte-level proof that a review is within the shape limits (kubetrain.webhook.shapebound)
is sound: it never lets through a body the exact walk would refuse, at each limit and one past
it, with brackets, quotes, colons and backslashes inside strings. A review over 48 KiB the
proof cannot vouch for is walked, and refused with the walk's message."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.decider import SHAPE_CHECK_BYTES, Decider, shape_check_needed
from kubetrain.webhook.review import request_review
from kubetrain.webhook.shapebound import (
    _outside_strings,
    _structural_brackets,
    structure_marks,
    within_shape_limits,
)
from kubetrain.webhook.shapelimits import MAX_NESTING_DEPTH, MAX_OBJECT_MEMBERS, shape_problem

DEPTH, MEMBERS = MAX_NESTING_DEPTH, MAX_OBJECT_MEMBERS


def nested(depth: int, *, inner: Any = "x", sibling: dict[str, Any] | None = None) -> Any:
    """`depth` maps, each holding the next as "a" (and `sibling`'s fields), `inner` innermost."""
    value: Any = inner
    for _ in range(depth):
        value = {**(sibling or {}), "a": value}
    return value


def text(value: Any) -> bytes:
    return orjson.dumps(value)


# Depth: the outermost value counts as 1, as in shape_problem (nested(64) passes, 65 does not).


@pytest.mark.parametrize("depth", [1, DEPTH - 1, DEPTH])
def test_a_body_nested_up_to_the_limit_is_proven(depth: int) -> None:
    assert within_shape_limits(text(nested(depth)), DEPTH, MEMBERS)
    assert shape_problem(nested(depth)) is None


def test_a_body_one_level_past_the_limit_is_not_proven() -> None:
    assert not within_shape_limits(text(nested(DEPTH + 1)), DEPTH, MEMBERS)
    assert shape_problem(nested(DEPTH + 1)) is not None


def test_lists_count_as_levels_like_maps() -> None:
    value: Any = "x"
    for i in range(DEPTH):
        value = [value] if i % 2 else {"a": value}
    assert within_shape_limits(text(value), DEPTH, MEMBERS)
    assert not within_shape_limits(text([value]), DEPTH, MEMBERS)
    assert not within_shape_limits(text({"a": [{}], "b": value}), DEPTH, MEMBERS)  # [] inside {}


def test_closing_brackets_inside_strings_do_not_hide_depth() -> None:
    # Counted naively, each level's "]]]}}}" would close the levels around it.
    deep = nested(DEPTH + 1, sibling={"s": "]]]}}}", "t": "x"})
    assert not within_shape_limits(text(deep), DEPTH, MEMBERS)
    assert not within_shape_limits(json.dumps(deep, indent=2).encode(), DEPTH, MEMBERS)


def test_opening_brackets_inside_strings_do_not_count_as_depth() -> None:
    shallow = {"a": "[" * 1000 + "{" * 1000, "b": ["[[{{", {"c": "{"}]}
    assert _structural_brackets(text(shallow)) == b"{{{}}}"
    assert within_shape_limits(text(shallow), DEPTH, MEMBERS)


@pytest.mark.parametrize(
    "string",
    ['\\"', '"', "\\", "\\\\", '\\\\"', 'x\\"{"', "\u00e9]", "\n}", "a/b]", '\\u005c"]'],
)
def test_escaped_quotes_and_backslashes_keep_strings_apart_from_structure(string: str) -> None:
    deep = nested(DEPTH + 1, sibling={"s": string})
    shallow = {"s": string, "a": {"t": string + "[" * 70}}
    for dump in (orjson.dumps, lambda v: json.dumps(v, ensure_ascii=True).encode()):
        assert not within_shape_limits(dump(deep), DEPTH, MEMBERS)
        assert _structural_brackets(dump(shallow)) == b"{{}}"
    # JSON's other spelling of a quote and a backslash: \u0022 and \u005c.
    spelled = b'{"s":"\\u0022[\\u005c","a":{"t":"\\/]\\\\"}}'
    assert _structural_brackets(spelled) == b"{{}}"


# Members: a map of N fields needs N colons in the text.


def test_a_map_at_the_field_limit_is_proven_and_one_past_is_not() -> None:
    at_limit = {f"f{i}": i for i in range(MEMBERS)}
    assert within_shape_limits(text(at_limit), DEPTH, MEMBERS)
    over = {**at_limit, "one-more": 0}
    assert not within_shape_limits(text(over), DEPTH, MEMBERS)
    assert shape_problem(over) is not None


def test_colons_inside_strings_make_the_proof_give_up_never_pass_wrongly() -> None:
    small_map = {"url": ":" * (MEMBERS + 1)}
    assert not within_shape_limits(text(small_map), DEPTH, MEMBERS)  # the walk decides
    assert shape_problem(small_map) is None


# Soundness on arbitrary JSON: the structure read from the bytes is exactly the decoded one,
# so a proof never passes a value the walk refuses.

_STRING = st.text(alphabet=st.sampled_from('ab{}[]":,\\/\n\u00e9\u2028 '), max_size=8)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | _STRING,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_STRING, children, max_size=4),
    max_leaves=40,
)


def structure(value: Any) -> bytes:
    if isinstance(value, dict | list):
        inner = value.values() if isinstance(value, dict) else value
        return b"{" + b"".join(structure(v) for v in inner) + b"}"
    return b""


def depth_of(value: Any) -> int:
    if isinstance(value, dict | list):
        inner = value.values() if isinstance(value, dict) else value
        return 1 + max((depth_of(v) for v in inner), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=6), st.integers(min_value=0, max_value=5))
def test_the_proof_agrees_with_the_decoded_value(value: Any, max_depth: int, max_members: int) -> None:
    for body in (
        orjson.dumps(value),
        json.dumps(value, ensure_ascii=True, indent=1).encode(),
        json.dumps(value, ensure_ascii=False).replace("/", "\\/").encode(),
    ):
        assert _structural_brackets(body) == structure(value)
        marks = structure_marks(body)
        # The marks the tier counts and the proof reads are the body's own bytes of each kind.
        assert marks.count(b"{") == body.count(b"{") + body.count(b"[")
        assert marks.count(b":") == body.count(b":")
        if b"\\" not in body:  # read from the marks alone
            assert _outside_strings(marks.translate(None, b":")) == structure(value)
        proven = within_shape_limits(body, max_depth, max_members)
        assert within_shape_limits(body, max_depth, max_members, marks) == proven
        if proven and isinstance(value, dict | list):
            assert shape_problem(value, max_depth, max_members) is None
        if body.count(b":") <= max_members:
            assert proven == (depth_of(value) <= max_depth)


# Through the decider: a review over SHAPE_CHECK_BYTES is refused with the walk's message
# whether or not its bytes look shallow.

PADDING = "x" * SHAPE_CHECK_BYTES
CONTAINER_PATH = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"
LEVEL_OF_CONTAINER_FIELDS = 8  # object 0, spec 1, ..., containers 6, the container 7


def review_of(container: dict[str, Any], *, pad: bool = True) -> bytes:
    job = default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": "big",
                "namespace": "team-a",
                "annotations": {"padding": PADDING} if pad else {},
            },
            "spec": {
                "pytorchReplicaSpecs": {
                    "Worker": {"replicas": 1, "template": {"spec": {"containers": [container]}}}
                }
            },
        }
    ).obj
    return orjson.dumps(request_review(job))


def decide(body: bytes) -> tuple[bool, str]:
    _, answer, _ = Decider().answer(body, "validate")
    response = orjson.loads(answer)["response"]
    return response["allowed"], response.get("status", {}).get("message", "")


@pytest.mark.parametrize("strings", ["", "]]]}}}"])
def test_a_review_one_level_too_deep_is_refused_naming_the_path(strings: str) -> None:
    deepest = DEPTH - LEVEL_OF_CONTAINER_FIELDS  # maps in the field: the last one at level 63
    sibling = {"s": strings} if strings else None
    at_limit = review_of({"name": "c", "image": "i", "deep": nested(deepest, sibling=sibling)})
    over = review_of({"name": "c", "image": "i", "deep": nested(deepest + 1, sibling=sibling)})
    assert len(over) > SHAPE_CHECK_BYTES and shape_check_needed(over) and shape_check_needed(at_limit)
    allowed, message = decide(over)
    path = f"{CONTAINER_PATH}.deep" + ".a" * deepest  # the map at level 64
    assert not allowed
    assert message == (
        f'PyTorchJob "big" is invalid: {path}: Invalid: nested more than {DEPTH} objects or lists '
        "deep (in the object)"
    )
    allowed, message = decide(at_limit)  # within the shape limits: the schema check answers
    assert not allowed and 'unknown field "deep"' in message and "nested more" not in message


def test_a_review_with_one_field_too_many_is_refused_naming_the_map() -> None:
    # Plus name, image and the defaulted ports: at the limit.
    fields = {f"f{i}": i for i in range(MEMBERS - 3)}
    at_limit = review_of({"name": "c", "image": "i", **fields}, pad=False)
    over = review_of({"name": "c", "image": "i", **fields, "one-more": 0}, pad=False)
    assert shape_check_needed(over) and shape_check_needed(at_limit)
    allowed, message = decide(over)
    assert not allowed
    assert message == (
        f'PyTorchJob "big" is invalid: {CONTAINER_PATH}: Invalid: has {MEMBERS + 1} fields; '
        f"at most {MEMBERS} are accepted (in the object)"
    )
    allowed, message = decide(at_limit)
    assert not allowed and 'unknown field "f0"' in message and "fields; at most" not in message


def test_a_big_ordinary_review_skips_the_walk_and_one_the_bytes_cannot_vouch_for_is_walked() -> None:
    ordinary = review_of({"name": "c", "image": "i", "args": ["[[[{{{"] * 10})
    assert len(ordinary) > SHAPE_CHECK_BYTES and not shape_check_needed(ordinary)
    assert decide(ordinary) == (True, "")
    colons = review_of({"name": "c", "image": "i", "args": [":" * (MEMBERS + 1)]})
    assert shape_check_needed(colons)
    assert decide(colons) == (True, "")
    small = review_of({"name": "c", "image": "i"}, pad=False)
    assert len(small) <= SHAPE_CHECK_BYTES and not shape_check_needed(small)


def test_a_trainjob_review_is_held_to_the_limits_before_its_runtime_is_read() -> None:
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "big", "namespace": "team-a"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "labels": {}},
    }
    trainjob["spec"]["labels"] = {f"l{i}": "v" for i in range(MEMBERS + 1)}
    _, answer, result = Decider().answer(orjson.dumps(request_review(trainjob)), "validate")
    response = orjson.loads(answer)["response"]
    assert result == "denied" and response["status"]["message"] == (
        f'TrainJob "big" is invalid: spec.labels: Invalid: has {MEMBERS + 1} fields; '
        f"at most {MEMBERS} are accepted (in the object)"
    )
    trainjob["spec"]["labels"] = {f"l{i}": "v" for i in range(MEMBERS)}
    _, answer, _ = Decider().answer(orjson.dumps(request_review(trainjob)), "validate")
    assert answer == b""  # within the limits: the runtime is read, then it is decided
