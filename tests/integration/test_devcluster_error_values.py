"""Values in devcluster's errors that stand in for kube-apiserver's are printed as Go prints them
there: a label selector's bad key as a field error (`key: Invalid value: "a_": …`), the token
after a requirement in single quotes, and the finalizers added to an object being deleted as
`%#v` of a sorted []string."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.client import RawApi

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a_", f'unable to parse requirement: key: Invalid value: "a_": {NAME_PART}'),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a x b", "unable to parse requirement: found 'x', expected: in, notin, =, ==, !=, gt, lt"),
    ],
)
async def test_a_bad_label_selector_is_refused_in_apimachinerys_words(
    raw: RawApi, selector: str, message: str
) -> None:
    code, body = await raw.request("GET", CONFIG_MAPS, query={"labelSelector": selector})
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", message)


async def test_finalizers_added_to_an_object_being_deleted_are_named_as_go_prints_them(raw: RawApi) -> None:
    held: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held-for-finalizers", "finalizers": ["example.com/hold"]},
    }
    code, body = await raw.request("POST", CONFIG_MAPS, body=held)
    assert code == 201, body
    path = f"{CONFIG_MAPS}/held-for-finalizers"
    try:
        code, body = await raw.request("DELETE", path)
        assert code == 200 and body["metadata"].get("deletionTimestamp"), body
        body["metadata"]["finalizers"] = ["example.com/hold", "example.com/z", "example.com/a"]
        code, refused = await raw.request("PUT", path, body=body)
        assert code == 422, refused
        assert refused["message"] == (
            'ConfigMap "held-for-finalizers" is invalid: metadata.finalizers: Forbidden: no new finalizers '
            'can be added if the object is being deleted, found new finalizers []string{"example.com/a", '
            '"example.com/z"}'
        )
    finally:
        code, current = await raw.request("GET", path)
        if code == 200:
            current["metadata"]["finalizers"] = []
            await raw.request("PUT", path, body=current)
