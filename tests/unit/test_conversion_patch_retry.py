"""A patch at a converted version that races another write is applied again to the newer object
(as kube-apiserver's guaranteed update does), unless the patch itself carries a resourceVersion:
then it is a precondition and the newer object fails it with 409 Conflict."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.verbs.conversion import Converter, _patch
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Result, Target

Obj = dict[str, Any]


class Api:
    """Storage of one object; the first update loses the race to another writer."""

    def __init__(self) -> None:
        self.obj: Obj = {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": "ns", "resourceVersion": "1", "labels": {}},
            "spec": {},
        }
        self.updates = 0

    def current(self, t: Any) -> Obj:
        return self.obj

    async def update(self, t: Any, new: Obj, patched: bool = False) -> Result:
        assert patched  # a patch's uid is an immutable field, not a PUT's precondition
        self.updates += 1
        if self.updates == 1:  # someone else wrote first (e.g. the controller's status write)
            self.obj = {**self.obj, "metadata": {**self.obj["metadata"], "resourceVersion": "2"}}
        if new["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        rv = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
        self.obj = {**new, "metadata": {**new["metadata"], "resourceVersion": rv}}
        return Result(200, self.obj, [])


class Convert:
    async def one(self, rt: Any, obj: Obj, version: str) -> Obj:
        return {**obj, "apiVersion": f"kubeflow.org/{version}"}


STORAGE = cast(
    Target,
    SimpleNamespace(rt=SimpleNamespace(key="mpijobs.kubeflow.org", storage_version="v2beta1"), name="pi"),
)
REQUEST = cast(Any, SimpleNamespace(headers={"Content-Type": "application/merge-patch+json"}))


async def test_a_patch_that_lost_a_race_is_applied_again() -> None:
    api = Api()
    body = {"metadata": {"labels": {"team": "hpc"}}}
    result = await _patch(cast(ApiServer, api), cast(Converter, Convert()), STORAGE, "v1", REQUEST, body)
    assert api.updates == 2
    assert result.obj["metadata"]["labels"] == {"team": "hpc"}
    assert result.obj["metadata"]["resourceVersion"] == "3"


async def test_a_patch_with_a_resource_version_is_a_precondition() -> None:
    api = Api()
    body = {"metadata": {"resourceVersion": "1", "labels": {"team": "hpc"}}}
    with pytest.raises(ApiError) as err:
        await _patch(cast(ApiServer, api), cast(Converter, Convert()), STORAGE, "v1", REQUEST, body)
    assert err.value.code == 409
    assert api.updates == 1  # not applied to the newer object
