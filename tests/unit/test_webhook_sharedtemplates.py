"""Byte-identical pod templates decoded once (kubetrain.webhook.sharedtemplates): the result is
orjson's, value for value and key for key, or orjson's error; the replica types' copies are one
object; and the webhook's answers are the same as when every copy is decoded."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import big_tf_job

from kubetrain.webhook import decider as decider_module
from kubetrain.webhook.decider import SHAPE_CHECK_BYTES, Decider
from kubetrain.webhook.review import request_review
from kubetrain.webhook.sharedtemplates import (
    DECODED_TEMPLATE_COST_PER_BYTE,
    DECODED_TEMPLATE_ENTRY_BYTES,
    DECODED_TEMPLATES,
    PLACEHOLDER,
    _groups,
    loads_sharing_templates,
)

TYPES = ("Chief", "PS", "Worker", "Evaluator")


def same_as_orjson(body: bytes) -> Any:
    """loads_sharing_templates(body), checked against orjson.loads: equal, with the same key
    order everywhere (orjson writes keys in order), or the same error."""
    try:
        expected = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        with pytest.raises(orjson.JSONDecodeError) as raised:
            loads_sharing_templates(body)
        assert str(raised.value) == str(exc)
        return None
    got = loads_sharing_templates(body)
    assert got == expected and orjson.dumps(got) == orjson.dumps(expected)
    return got


def templates(decoded: Any, field: str = "object") -> list[Any]:
    specs = decoded["request"][field]["spec"]["tfReplicaSpecs"]
    return [specs[t]["template"] for t in TYPES if t in specs]


def xlarge_review(**kw: Any) -> dict[str, Any]:
    return request_review(big_tf_job("big", 16), **kw)


@pytest.mark.parametrize("dumps", [orjson.dumps, lambda v: json.dumps(v).encode()])
def test_the_four_copies_of_a_template_are_one_object(dumps: Any) -> None:
    decoded = same_as_orjson(dumps(xlarge_review()))
    first, *rest = templates(decoded)
    assert all(t is first for t in rest)


def test_an_update_shares_the_template_of_the_object_and_the_old_object() -> None:
    job = big_tf_job("big", 16)
    decoded = same_as_orjson(orjson.dumps(request_review(job, operation="UPDATE", old=copy.deepcopy(job))))
    assert len({id(t) for t in templates(decoded) + templates(decoded, "oldObject")}) == 1


def test_templates_that_differ_are_not_shared_and_equal_ones_are() -> None:
    review = xlarge_review()
    specs = review["request"]["object"]["spec"]["tfReplicaSpecs"]
    specs["PS"]["template"] = copy.deepcopy(specs["PS"]["template"])
    specs["PS"]["template"]["spec"]["containers"][3]["image"] = "other:1"
    chief, ps, worker, evaluator = templates(same_as_orjson(orjson.dumps(review)))
    assert chief is worker is evaluator and ps is not chief
    assert ps["spec"]["containers"][3]["image"] == "other:1"


def test_a_body_holding_the_placeholders_digits_is_decoded_whole() -> None:
    review = xlarge_review()
    review["request"]["object"]["metadata"]["annotations"] = {"n": str(PLACEHOLDER - 10)}
    chief, ps, *_ = templates(same_as_orjson(orjson.dumps(review)))
    assert chief is not ps


# Arbitrary values around and inside the templates: strings holding `"template":`, brackets,
# quotes, backslashes and the placeholder's digits; templates that are not objects; spacing.

_STRING = st.lists(
    st.sampled_from(['"template":', "{", "}", "[", "]", '"', "\\", ":", ",", "a", "\u00e9", " "]),
    max_size=6,
).map("".join) | st.sampled_from([str(PLACEHOLDER - 10), "template"])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | _STRING,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_STRING | st.just("template"), children, max_size=3)
    ),
    max_leaves=12,
)


@st.composite
def reviews(draw: st.DrawFn) -> dict[str, Any]:
    shared = draw(st.dictionaries(_STRING, _VALUES, max_size=3))
    replicas: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(TYPES), max_size=4, unique=True)):
        template = draw(st.sampled_from([shared, shared, {"other": draw(_VALUES)}, draw(_VALUES)]))
        extra = draw(st.dictionaries(st.sampled_from(["replicas", "zz", "template"]), _VALUES, max_size=2))
        replicas[name] = (
            {**extra, "template": template} if draw(st.booleans()) else {"template": template, **extra}
        )
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"}}
    job["spec"] = {"tfReplicaSpecs": replicas, "note": draw(_VALUES)}
    return request_review(job, old=job if draw(st.booleans()) else None)


@settings(max_examples=300, deadline=None)
@given(reviews())
def test_the_result_is_orjsons_for_any_review(review: dict[str, Any]) -> None:
    for body in (
        orjson.dumps(review),
        json.dumps(review).encode(),
        json.dumps(review, ensure_ascii=True, indent=1).encode(),
        json.dumps(review, ensure_ascii=False).replace("/", "\\/").encode(),
    ):
        same_as_orjson(body)


@settings(max_examples=300, deadline=None)
@given(reviews(), st.data())
def test_a_damaged_body_gets_orjsons_result_or_error(review: dict[str, Any], data: st.DataObject) -> None:
    body = orjson.dumps(review)
    at = data.draw(st.integers(min_value=0, max_value=len(body)))
    cut = data.draw(st.integers(min_value=0, max_value=3))
    insert = data.draw(st.sampled_from([b"", b"}", b"{", b'"', b"\\", b",", b"1", b" ", b"\xff"]))
    same_as_orjson(body[:at] + insert + body[at + cut :])


# Through the decider: a review over SHAPE_CHECK_BYTES whose shape is proven is decoded with its
# templates shared; answers must be those of a decode that builds every copy.


def answers(body: bytes) -> list[bytes]:
    out = [Decider(gang_scheduling=True).answer(body, w)[1] for w in ("mutate", "validate")]
    with mock.patch.object(decider_module, "loads_sharing_templates", orjson.loads):
        plain = [Decider(gang_scheduling=True).answer(body, w)[1] for w in ("mutate", "validate")]
    assert out == plain
    # The template objects kept for later reviews were only read: each is its text's decode.
    kept = [(text, DECODED_TEMPLATES.get(text)) for text, _ in _groups(body)]
    assert all(value is not None and value == orjson.loads(text) for text, value in kept)
    return out


_CHANGES = st.sampled_from(
    [
        ("image", None),
        ("image", "other:2"),
        ("name", "tensorflow"),
        ("imagePullPolicy", "Sometimes"),
        ("unknownField", 1),
        ("ports", []),
        ("env", [{"name": "TF_CONFIG", "value": "x"}]),
    ]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 15), _CHANGES), max_size=3),
    st.booleans(),
    st.sampled_from(["kubeflow.org/v1", "training.kubedl.io/v1alpha1"]),
)
def test_answers_are_those_of_a_whole_decode(
    changes: list[tuple[str, int, tuple[str, Any]]], update: bool, api_version: str
) -> None:
    job = {**big_tf_job("big", 16), "apiVersion": api_version}
    for replica, index, (field, value) in changes:
        template = job["spec"]["tfReplicaSpecs"][replica]["template"] = copy.deepcopy(
            job["spec"]["tfReplicaSpecs"][replica]["template"]
        )
        template["spec"]["containers"][index][field] = value
    old = {**big_tf_job("big", 16), "apiVersion": api_version} if update else None
    body = orjson.dumps(request_review(job, operation="UPDATE" if update else "CREATE", old=old))
    assert len(body) > SHAPE_CHECK_BYTES
    answers(body)


@pytest.mark.parametrize("copies, shared", [(64, True), (65, False)])
def test_a_body_with_more_template_members_than_a_job_has_is_decoded_whole(copies: int, shared: bool) -> None:
    template = big_tf_job("big", 1)["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    replicas = {f"R{i}": {"replicas": 1, "template": template} for i in range(copies)}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": replicas}}
    decoded = same_as_orjson(orjson.dumps(request_review(job)))
    objects = {id(r["template"]) for r in decoded["request"]["object"]["spec"]["tfReplicaSpecs"].values()}
    assert len(objects) == (1 if shared else copies)


@pytest.mark.parametrize("update", [False, True])
def test_a_review_under_the_shape_check_size_shares_its_templates_with_the_same_answers(update: bool) -> None:
    job = big_tf_job("big", 4)  # the 20 KB review: no shape proof is made for it
    body = orjson.dumps(
        request_review(job, operation="UPDATE" if update else "CREATE", old=job if update else None)
    )
    assert len(body) < SHAPE_CHECK_BYTES
    first, *rest = templates(same_as_orjson(body))
    assert rest and all(t is first for t in rest)
    answers(body)


def nested_template(depth: int) -> bytes:
    """A pod template's text whose value is nested `depth` levels deep (itself the first)."""
    return b'{"spec":{"containers":' + b"[" * (depth - 3) + b"{}" + b"]" * (depth - 3) + b"}}"


# A template put back stands 6 levels down; orjson decodes at most 1,024 levels. One 1,018 deep
# fits in place and is shared; one 1,019 deep decodes alone but not in place: the body's error.
@pytest.mark.parametrize("depth, shared", [(1018, True), (1019, False), (1024, False)])
def test_a_template_too_deep_for_its_place_is_not_decoded_alone(depth: int, shared: bool) -> None:
    text = nested_template(depth)
    orjson.loads(text)  # alone, within orjson's limit
    replicas = {t: {"replicas": 1, "template": "TEXT"} for t in TYPES}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": replicas}}
    body = orjson.dumps(request_review(job)).replace(b'"TEXT"', text)
    if not shared:
        assert same_as_orjson(body) is None  # orjson's own depth error, raised by both
        return
    decoded, expected = loads_sharing_templates(body), orjson.loads(body)
    first, *rest = templates(decoded)
    assert len(rest) == 3 and all(t is first for t in rest)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 2 * depth)  # `==` recurses once per level
    try:
        assert decoded == expected
    finally:
        sys.setrecursionlimit(limit)


# Decoded template texts kept between reviews.


def test_a_later_review_with_the_same_template_text_takes_the_kept_object() -> None:
    job = big_tf_job("kept", 4)
    first = templates(same_as_orjson(orjson.dumps(request_review(job, uid="1"))))
    renamed = {**job, "metadata": {**job["metadata"], "name": "other"}}
    second = templates(same_as_orjson(orjson.dumps(request_review(renamed, uid="2"))))
    assert second[0] is first[0]
    changed = copy.deepcopy(job)
    for replica in changed["spec"]["tfReplicaSpecs"].values():
        replica["template"]["metadata"]["labels"]["team"] = "other"
    third = templates(same_as_orjson(orjson.dumps(request_review(changed, uid="3"))))
    assert third[0] is not first[0] and third[0]["metadata"]["labels"]["team"] == "other"


def test_a_template_text_costing_over_the_entry_bound_is_decoded_each_time() -> None:
    template = big_tf_job("big", 1)["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    template = {**template, "metadata": {"annotations": {"pad": "x" * 200_000}}}
    text = orjson.dumps(template)
    assert len(text) * DECODED_TEMPLATE_COST_PER_BYTE > DECODED_TEMPLATE_ENTRY_BYTES
    replicas = {t: {"replicas": 1, "template": template} for t in TYPES}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": replicas}}
    body = orjson.dumps(request_review(job))
    one, two = templates(same_as_orjson(body)), templates(same_as_orjson(body))
    assert all(t is one[0] for t in one) and two[0] is not one[0]
    assert DECODED_TEMPLATES.get(text) is None
