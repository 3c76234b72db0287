"""Jobs held back by a ResourceQuota start as soon as the quota has room again.

A pod create the quota admission refuses (`exceeded quota: …`, `failed quota: …`, `status unknown
for quota: …`) leaves the job `Running=False`/`FailedCreatePod`, retried with back-off up to
1000 s. The operator watches the ResourceQuotas of its namespaces; when one of them has more room
than before — a `status.hard` raised or dropped (the quota controller copies a raised `spec.hard`
there, and the admission checks `status.hard`), a `status.used` lowered (pods finished or were
deleted: the quota controller's replenishment), or the quota deleted — every job of that namespace
whose last pod wave was refused by a quota is queued at once, its back-off reset (client-go's
`Forget`). Jobs refused for another reason (an admission webhook, Pod Security) are left to their
back-off: no quota change lets their pods in.

Decision: a pod of the namespace that finishes or is deleted queues only its own job, not the
held-back jobs of others: the room it frees is the quota's `status.used`, whose update (written
by the quota controller on that very pod event) is what wakes them — once per quota write, and
only when some resource's room grew.

Optional: without list/watch on resourcequotas (a chart from before this watch) one warning is
logged and held-back jobs wait for their back-off as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain.api.quantity import parse_resource_list
from kubetrain.kube.cache import Cache
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import Clock
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import RESOURCE_QUOTAS, ResourceRef
from kubetrain.operator.draft import CreateFailure
from kubetrain.operator.keys import key_of
from kubetrain.operator.status import REASON_FAILED_CREATE_POD

log = logging.getLogger(__name__)

Obj = dict[str, Any]
# What kube-apiserver's quota admission (plugin/pkg/admission/resourcequota) says when it refuses.
_UNLIMITED = Fraction(2**256)
QUOTA_REFUSALS = ("exceeded quota: ", "failed quota: ", "status unknown for quota: ")


def _amounts(values: object) -> dict[str, Fraction]:
    return parse_resource_list(values)[0]  # a non-quantity: the API server would not store it


def _room(quota: Mapping[str, Any]) -> dict[str, Fraction | None]:
    """Per resource the quota admission limits: status.hard - status.used; None for a resource of
    spec.hard not in status.hard yet (the admission refuses it: `status unknown for quota`)."""
    status = quota.get("status") or {}
    used = _amounts(status.get("used"))
    room: dict[str, Fraction | None] = dict.fromkeys(_amounts((quota.get("spec") or {}).get("hard")))
    room.update(
        {name: hard - used.get(name, Fraction(0)) for name, hard in _amounts(status.get("hard")).items()}
    )
    return room


def room_grew(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether quota `new` lets in something `old` refused: a resource's room grew, a resource
    limited before is no longer limited, or its status became known."""
    after = _room(new)
    for name, room in _room(old).items():
        now = after.get(name, _UNLIMITED)
        if now is not None and (room is None or now > room):
            return True
    return False


def quota_refused(failure: CreateFailure | None) -> bool:
    """Whether a job's last pod wave stopped at a quota's refusal."""
    return (
        failure is not None
        and failure.reason == REASON_FAILED_CREATE_POD
        and any(text in failure.message for text in QUOTA_REFUSALS)
    )


class QuotaWake:
    """The ResourceQuota informer's handlers: wake the quota-refused jobs of a namespace."""

    def __init__(
        self,
        cache: Cache,
        job_resources: Callable[[], Iterable[ResourceRef]],
        failures: Mapping[str, CreateFailure],
        wake: Callable[[str], None],
    ) -> None:
        self.cache, self.job_resources, self.failures, self.wake = cache, job_resources, failures, wake

    def informer(self, client: KubeClient, namespaces: list[str] | None, clock: Clock) -> Informer:
        quotas = Informer(
            client,
            RESOURCE_QUOTAS,
            cache=self.cache,
            namespaces=namespaces,
            clock=clock,
            on_forbidden=_forbidden,
        )
        quotas.add_handler(on_update=self.quota_updated, on_delete=self.quota_deleted)
        return quotas

    def quota_updated(self, old: Obj, new: Obj) -> None:
        if room_grew(old, new):
            self.wake_namespace(str((new.get("metadata") or {}).get("namespace", "")))

    def quota_deleted(self, quota: Obj) -> None:
        self.wake_namespace(str((quota.get("metadata") or {}).get("namespace", "")))

    def wake_namespace(self, namespace: str) -> list[str]:
        """Queue (back-off reset) every job of `namespace` held back by a quota; their keys."""
        keys = []
        for ref in self.job_resources():
            for job in self.cache.store(ref).list(namespace):
                if quota_refused(self.failures.get(str((job.get("metadata") or {}).get("uid", "")))):
                    keys.append(key_of(job))
        for key in keys:
            self.wake(key)
        return keys


def _forbidden(err: ApiError) -> None:
    log.warning(
        "no permission to list/watch resourcequotas (%s): a job whose pods a ResourceQuota "
        "refused is retried on its back-off only (up to 1000 s) after the quota is raised; grant "
        "list/watch on resourcequotas (the chart's current RBAC does) and restart the operator",
        err,
    )
