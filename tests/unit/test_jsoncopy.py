"""json_copy: a deep copy as exact as copy.deepcopy, for JSON data and for anything else."""

from __future__ import annotations

import datetime
import math
from typing import Any

from kubetrain.api.jsoncopy import json_copy


def _containers(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [obj, *(c for v in obj.values() for c in _containers(v))]
    if isinstance(obj, list):
        return [obj, *(c for v in obj for c in _containers(v))]
    return []


def test_a_json_job_is_copied_equal_in_order_sharing_no_dict_or_list() -> None:
    job = {
        "kind": "TFJob",
        "spec": {"b": [1, 2.5, -0.0, True, None, "x"], "a": {"z": {}, "y": [[], {"k": "v"}]}},
    }
    copied = json_copy(job)
    assert copied == job and list(copied["spec"]) == ["b", "a"]
    assert [type(v) for v in copied["spec"]["b"]] == [int, float, float, bool, type(None), str]
    assert math.copysign(1, copied["spec"]["b"][2]) == -1
    original_ids = {id(c) for c in _containers(job)}
    assert not original_ids & {id(c) for c in _containers(copied)}


def test_values_json_would_change_or_cannot_hold_keep_their_type() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, 5)
    for value in (math.nan, math.inf, (1, 2), when, b"raw", 2**70, {1: "int key"}):
        obj = {"spec": {"value": value, "list": [value]}}
        copied = json_copy(obj)
        got = copied["spec"]["value"]
        assert type(got) is type(value)
        assert got is value or got == value or (isinstance(got, float) and math.isnan(got))
        assert copied["spec"] is not obj["spec"] and copied["spec"]["list"] is not obj["spec"]["list"]
