"""Client-side apply's last-applied-configuration under a server-side apply by `kubectl`
(request/lastapplied.py, request/apply.py): k8s.io/apimachinery's `lastAppliedManager` (which
conflicts are taken over) and `lastAppliedUpdater` (the annotation kept in step)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.kinds import builtinschema
from kubetrain.devcluster.apiserver.kinds.fieldpaths import f
from kubetrain.devcluster.apiserver.kinds.managedfields import APPLY, UPDATE, Entry, key_for
from kubetrain.devcluster.apiserver.kinds.smdschema import resolve
from kubetrain.devcluster.apiserver.request import apply as applying
from kubetrain.devcluster.apiserver.request import lastapplied
from kubetrain.devcluster.apiserver.request.lastapplied import LAST_APPLIED

CM = resolve(builtinschema._definitions()["io.k8s.api.core.v1.ConfigMap"])
CSA = key_for("kubectl-client-side-apply", UPDATE, "v1")
KUBECTL = key_for("kubectl", APPLY, "v1")
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def cm(annotation: dict[str, Any] | str | None = None, **data: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}
    if annotation is not None:
        text = annotation if isinstance(annotation, str) else json.dumps(annotation)
        obj["metadata"]["annotations"] = {LAST_APPLIED: text}
    return obj


def data(*keys: str) -> set[Any]:
    return {(f("data"), f(k)) for k in keys}


def test_allowed_are_the_last_applied_fields_the_live_object_still_has() -> None:
    live = cm(cm(k="v", n="1", gone="x"), k="v", n="2", extra="e")
    allowed = lastapplied.allowed_conflicts(live, "v1", CM)
    assert allowed is not None
    assert data("k") <= allowed and not (data("n", "gone", "extra") & allowed)


@pytest.mark.parametrize(
    "annotation",
    [
        "",
        "{not json",
        json.dumps({"apiVersion": "v1", "data": {"k": "v"}}),
        json.dumps(cm(k="v") | {"apiVersion": "v2"}),
    ],
)
def test_an_unusable_annotation_allows_nothing(annotation: str) -> None:
    assert lastapplied.allowed_conflicts(cm(annotation, k="v"), "v1", CM) is None
    assert lastapplied.allowed_conflicts(cm(k="v"), "v1", CM) is None


def apply(live: dict[str, Any], config: dict[str, Any], *, upgrade: bool) -> tuple[Any, Any]:
    managed = {CSA: Entry("v1", data("k", "n") | {(f("metadata"), f("annotations"), f(LAST_APPLIED))}, T0)}
    allowed = (lambda: lastapplied.allowed_conflicts(live, "v1", CM)) if upgrade else None
    return applying.apply(live, config, CM, managed, KUBECTL, "v1", force=False, now=T1, allowed=allowed)


def test_kubectl_takes_over_conflicts_on_unchanged_last_applied_fields() -> None:
    live = cm(cm(k="v", n="1"), k="v", n="1")
    with pytest.raises(ApiError) as refused:
        apply(live, cm(k="w"), upgrade=False)
    assert refused.value.code == 409
    merged, managed = apply(live, cm(k="w"), upgrade=True)
    assert merged["data"] == {"k": "w", "n": "1"}
    assert managed[KUBECTL].fields == data("k") and data("n") <= managed[CSA].fields
    assert not data("k") & managed[CSA].fields


def test_only_the_conflicts_the_annotation_does_not_cover_are_reported() -> None:
    live = cm(cm(k="v", n="1"), k="v", n="2")
    with pytest.raises(ApiError) as refused:
        apply(live, cm(k="w", n="3"), upgrade=True)
    assert refused.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.n'
    )


def test_the_annotation_is_rewritten_from_the_applied_configuration() -> None:
    config = cm(k="<w>")
    config["metadata"]["annotations"] = {LAST_APPLIED: "old", "team": "a&b"}
    merged = lastapplied.synced(cm("old", k="<w>"), config)
    text = merged["metadata"]["annotations"][LAST_APPLIED]
    assert text == (
        '{"apiVersion":"v1","data":{"k":"\\u003cw\\u003e"},"kind":"ConfigMap",'
        '"metadata":{"annotations":{"team":"a\\u0026b"},"name":"c"}}\n'
    )
    assert json.loads(text)["metadata"]["annotations"] == {"team": "a&b"}
    assert lastapplied.synced(cm(k="v"), cm(k="w")) == cm(k="v")  # no annotation: none is added


def test_an_annotation_past_the_annotations_limit_is_dropped() -> None:
    big = cm(k="x" * (256 * 1024))
    merged = lastapplied.synced(cm("old", k="v"), big)
    assert "annotations" not in merged["metadata"]
