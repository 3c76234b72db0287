"""managedFields across the versions of a resource converted by its CRD's conversion webhook
(kinds/managedfields.py `Others`, request/apply.py, verbs/managing.py `views`): each manager is
compared at the apiVersion it was recorded at, as structured-merge-diff's `Updater` does with
kube-apiserver's version converter; a version the object cannot be had at drops its managers."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import ResourceType
from kubetrain.devcluster.apiserver.kinds.fieldpaths import f
from kubetrain.devcluster.apiserver.kinds.managedfields import APPLY, UPDATE, Entry, key_for, record_update
from kubetrain.devcluster.apiserver.kinds.smdschema import DEDUCED
from kubetrain.devcluster.apiserver.request import apply as applying
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.verbs import managing

V1, V2 = "example.com/v1", "example.com/v2"
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
OLD_NAME = (f("spec"), f("workers"))  # what v1 calls v2's spec.replicas
NEW_NAME = (f("spec"), f("replicas"))


def test_an_update_takes_from_a_manager_of_another_version_what_that_version_shows() -> None:
    managed = {
        key_for("old", UPDATE, V1): Entry(V1, {OLD_NAME, (f("spec"), f("image"))}, T0),
        key_for("gone", UPDATE, "example.com/v0"): Entry("example.com/v0", {(f("spec"), f("x"))}, T0),
    }
    me = key_for("new", UPDATE, V2)
    out = record_update(
        managed,
        {"spec": {"replicas": 1}},
        {"spec": {"replicas": 2}},
        DEDUCED,
        me,
        V2,
        T1,
        others={V1: ({OLD_NAME}, set())},
    )
    assert out[me].fields == {NEW_NAME} and out[me].api_version == V2
    assert out[key_for("old", UPDATE, V1)].fields == {(f("spec"), f("image"))}
    assert key_for("gone", UPDATE, "example.com/v0") not in out  # no object at v0: dropped


def test_an_apply_conflicts_with_another_versions_manager_at_its_own_path() -> None:
    managed = {key_for("old", UPDATE, V1): Entry(V1, {OLD_NAME}, T0)}
    me = key_for("ci", APPLY, V2)
    live: dict[str, Any] = {"spec": {"replicas": 1}}
    config = {"spec": {"replicas": 2}}
    others = {V1: ({OLD_NAME}, set[Any]())}
    with pytest.raises(ApiError) as clash:
        applying.apply(live, config, DEDUCED, managed, me, V2, force=False, now=T1, others=others)
    assert (
        clash.value.message
        == 'Apply failed with 1 conflict: conflict with "old" using example.com/v1: .spec.workers'
    )
    _, forced = applying.apply(live, config, DEDUCED, managed, me, V2, force=True, now=T1, others=others)
    assert set(forced) == {me}
    # without the other version's view, v1's entry is compared as if it were v2's: no conflict
    applying.apply(live, config, DEDUCED, managed, me, V2, force=False, now=T1)


def crd(conversion: bool) -> ResourceType:
    rt = ResourceType("example.com", ["v2", "v1"], "things", "Thing", True, custom=True, storage_version="v2")
    rt.conversion = {"strategy": "Webhook"} if conversion else None
    return rt


async def test_views_convert_to_the_request_version_and_the_entries_versions() -> None:
    calls: list[tuple[list[str], str]] = []

    async def convert(rt: ResourceType, objs: list[Any], version: str) -> list[Any]:
        calls.append(([o["apiVersion"] for o in objs], version))
        return [{**o, "apiVersion": rt.api_version(version)} for o in objs]

    new = {"apiVersion": V2, "kind": "Thing", "metadata": {"name": "a"}}
    at_v1 = Target(crd(True), "v2", "ns", "a", request_version="v1")
    seen = await managing.views(at_v1, convert, None, new)
    assert seen is not None and seen["v1"] == (None, {**new, "apiVersion": V1}) and seen["v2"] == (None, new)
    assert calls == [([V2], "v1")]

    old = {**new, "metadata": {"name": "a", "managedFields": [{"manager": "m", "apiVersion": V1}]}}
    at_v2 = Target(crd(True), "v2", "ns", "a")
    seen = await managing.views(at_v2, convert, old, new)
    assert seen is not None and set(seen) == {"v1", "v2"}
    assert await managing.views(at_v2, convert, new, new) is None  # nothing at another version
    assert (
        await managing.views(Target(crd(False), "v2", "ns", "a", request_version="v1"), convert, old, new)
        is None
    )
