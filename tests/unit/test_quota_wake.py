"""Which ResourceQuota change wakes which held-back job (kubetrain.operator.quotawake)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.kube.cache import Cache
from kubetrain.kube.resources import job_resource
from kubetrain.operator.draft import CreateFailure
from kubetrain.operator.quotawake import QuotaWake, quota_refused, room_grew
from kubetrain.operator.status import REASON_FAILED_CREATE_POD, REASON_POD_NAME_CONFLICT

QUOTA = (
    'could not create pod j-worker-0: pods "j-worker-0" is forbidden: exceeded quota: q, requested: pods=1'
)


def quota(
    hard: dict[str, str] | None, used: dict[str, str] | None = None, spec: dict[str, str] | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if hard is not None:
        status["hard"] = hard
    if used is not None:
        status["used"] = used
    return {
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"hard": spec or hard or {}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("old", "new", "grew"),
    [
        (quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "2"}, {"pods": "1"}), True),  # used lowered
        (quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "3"}, {"pods": "2"}), True),  # hard raised
        (quota({"cpu": "2"}, {"cpu": "1500m"}), quota({"cpu": "2"}, {"cpu": "1"}), True),  # quantities
        (quota({"memory": "1Gi"}, {"memory": "1Gi"}), quota({"memory": "2048Mi"}, {"memory": "1Gi"}), True),
        (quota({"pods": "2", "cpu": "1"}, {}), quota({"cpu": "1"}, {}), True),  # a limit dropped
        (quota({"pods": "2"}, {"pods": "1"}), quota({"pods": "2"}, {"pods": "2"}), False),  # more used
        (quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "2"}, {"pods": "2"}), False),  # no change
        (quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "1"}, {"pods": "0"}), True),  # room 0 -> 1
        (quota({"cpu": "2"}, {"cpu": "1"}), quota({"cpu": "3"}, {"cpu": "2"}), False),  # same room
        # a new quota: its pods refused ("status unknown for quota") until the controller's first status
        (quota(None, spec={"pods": "2"}), quota({"pods": "2"}, {"pods": "0"}), True),
        (quota(None, spec={"pods": "2"}), quota(None, spec={"pods": "3"}), False),
        # spec.hard raised: the admission still checks status.hard, until the controller copies it
        (quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "2"}, {"pods": "2"}, spec={"pods": "4"}), False),
    ],
)
def test_room_grew(old: dict[str, Any], new: dict[str, Any], grew: bool) -> None:
    assert room_grew(old, new) is grew


def test_only_a_quotas_refusal_counts() -> None:
    assert quota_refused(CreateFailure(REASON_FAILED_CREATE_POD, QUOTA))
    assert quota_refused(
        CreateFailure(REASON_FAILED_CREATE_POD, "forbidden: failed quota: q: must specify cpu")
    )
    assert not quota_refused(
        CreateFailure(REASON_FAILED_CREATE_POD, 'admission webhook "x" denied the request')
    )
    assert not quota_refused(CreateFailure(REASON_POD_NAME_CONFLICT, QUOTA))
    assert not quota_refused(None)


def job(name: str, namespace: str, uid: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": "1"}
    return {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "metadata": meta}


def test_only_the_quota_refused_jobs_of_the_namespace_are_woken() -> None:
    ref = job_resource("PyTorchJob")
    cache = Cache()
    store = cache.store(ref)
    for name, ns in (("held", "ns"), ("denied", "ns"), ("running", "ns"), ("elsewhere", "other")):
        store.upsert(job(name, ns, f"{ns}-{name}"))
    failures = {
        "ns-held": CreateFailure(REASON_FAILED_CREATE_POD, QUOTA),
        "ns-denied": CreateFailure(REASON_FAILED_CREATE_POD, "admission webhook denied the request"),
        "other-elsewhere": CreateFailure(REASON_FAILED_CREATE_POD, QUOTA),
    }
    woken: list[str] = []
    wake = QuotaWake(cache, lambda: [ref], failures, woken.append)
    wake.quota_updated(quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "2"}, {"pods": "3"}))
    assert woken == []
    wake.quota_updated(quota({"pods": "2"}, {"pods": "2"}), quota({"pods": "2"}, {"pods": "1"}))
    assert woken == ["PyTorchJob/ns/held"]
    wake.quota_deleted(quota({"pods": "2"}))
    assert woken == ["PyTorchJob/ns/held", "PyTorchJob/ns/held"]
