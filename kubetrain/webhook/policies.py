"""Platform policy in the admission webhooks (docs/behaviour.md §9).

Two parts:

- `PolicyAdmission`: what `/mutate` and `/validate` do with TrainingPolicies, answered from a
  `PolicyIndex` (no API call per review):
  * mutate, CREATE only, after the built-in defaults: `apply_defaults(request, obj)` fills the
    fields the user left unset from the matching policies (name order, first wins). Defaults are
    not applied on UPDATE: a policy added later must not rewrite live jobs (it could touch
    fields that are immutable while the job runs).
  * validate: `check(request)` applies every limit of every matching policy. On UPDATE only
    violations the old object did not already have are denied (the rest become warnings), so a
    policy tightened later never blocks e.g. suspending or relabelling an existing job.
  * `validate_policy_object(request)`: a TrainingPolicy itself is refused when invalid.
- `PolicyWatcher`: informers on TrainingPolicies and Namespaces that keep the index current
  (relabelling a namespace or editing a policy takes effect on the next review, no restart),
  and, when `write_status` is on, records `status.observedGeneration`/`valid` on each policy.

```python
index = PolicyIndex()
watcher = PolicyWatcher(client, index)       # client: kubetrain.kube.client.KubeClient
await watcher.start()                        # returns once both caches are synced
server = WebhookServer(..., policies=PolicyAdmission(index, gang_scheduling=True))
```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from kubetrain.api.labels import LABEL_TENANT
from kubetrain.api.policy import KIND as POLICY_KIND
from kubetrain.api.policy import TrainingPolicy
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import NAMESPACES, TRAINING_POLICIES, ResourceRef
from kubetrain.policy import (
    PolicyDefaulted,
    PolicyIndex,
    PolicyVerdict,
    apply_policy_defaults,
    check_policy_limits,
    policy_status,
    validate_policy,
)
from kubetrain.policy.tenantquota import check_tenant_quotas
from kubetrain.serving.metrics import forget_namespace
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

log = logging.getLogger(__name__)


def _namespace_of(request: AdmissionRequest, obj: dict[str, Any]) -> str:
    if request.namespace:
        return request.namespace
    metadata = obj.get("metadata")
    value = metadata.get("namespace") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else ""


class PolicyAdmission:
    """Policy decisions for the webhook, from an in-memory PolicyIndex."""

    def __init__(self, index: PolicyIndex, *, gang_scheduling: bool | None = None) -> None:
        self.index = index
        self.gang_scheduling = gang_scheduling

    def apply_defaults(self, request: AdmissionRequest, obj: dict[str, Any]) -> PolicyDefaulted:
        """`obj` (already built-in-defaulted) with the policy defaults of a CREATE applied."""
        if request.operation != "CREATE" or request.object is None:
            return PolicyDefaulted(obj=obj)
        policies = self.index.for_job(request.kind, _namespace_of(request, obj))
        if not policies:
            return PolicyDefaulted(obj=obj)
        result = apply_policy_defaults(obj, policies, user_job=request.object)
        for line in result.applied:
            log.debug("mutate %s %s/%s: %s", request.kind, request.namespace, request.name, line)
        return result

    def check(self, request: AdmissionRequest) -> PolicyVerdict:
        """The limits verdict for a job CREATE or UPDATE (ratcheted on UPDATE)."""
        obj = request.object
        if request.operation not in ("CREATE", "UPDATE") or obj is None:
            return PolicyVerdict()
        policies = self.index.for_job(request.kind, _namespace_of(request, obj))
        if not policies:
            return PolicyVerdict()
        verdict = self._verdict(obj, policies)
        old = request.old_object if request.operation == "UPDATE" else None
        if old is None or not verdict.denials:
            return verdict
        existing = set(self._verdict(old, policies).denials)
        new = [line for line in verdict.denials if line not in existing]
        kept = [line for line in verdict.denials if line in existing]
        return PolicyVerdict(denials=new, warnings=verdict.warnings + kept)

    def _verdict(self, obj: dict[str, Any], policies: list[TrainingPolicy]) -> PolicyVerdict:
        """The job's own limits, then the tenant quotas (kubetrain.policy.tenantquota)."""
        own = check_policy_limits(obj, policies, gang_scheduling=self.gang_scheduling)
        quota = check_tenant_quotas(obj, policies, self.index.tenant_jobs, self.index.namespace_labels)
        return PolicyVerdict(denials=own.denials + quota.denials, warnings=own.warnings + quota.warnings)


def deny_message(denials: list[str]) -> str:
    return "; ".join(denials)


def policy_denial(uid: str, verdict: PolicyVerdict, warnings: list[str]) -> AdmissionResponse:
    """A 403 Forbidden (like a ResourceQuota refusal) naming every violated policy limit."""
    return AdmissionResponse.deny(
        uid,
        deny_message(verdict.denials),
        code=403,
        reason="Forbidden",
        warnings=warnings + verdict.warnings,
    )


def is_policy_kind(kind: str) -> bool:
    return kind == POLICY_KIND


def validate_policy_object(request: AdmissionRequest) -> AdmissionResponse:
    """Refuse an invalid TrainingPolicy (CREATE/UPDATE), naming every problem."""
    obj = request.object
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource or obj is None:
        return AdmissionResponse.allow(request.uid)
    errors = validate_policy(obj)
    if not errors:
        return AdmissionResponse.allow(request.uid)
    name = request.name or str((obj.get("metadata") or {}).get("name") or "")
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return AdmissionResponse.deny(request.uid, f'{POLICY_KIND} "{name}" is invalid: {listed}')


def _forget_namespace_metrics(namespace: dict[str, Any]) -> None:
    forget_namespace(str((namespace.get("metadata") or {}).get("name") or ""))


class PolicyWatcher:
    """Feeds a PolicyIndex from watches on TrainingPolicies and Namespaces."""

    def __init__(
        self,
        client: KubeClient,
        index: PolicyIndex,
        *,
        write_status: bool = True,
        now: Callable[[], datetime] | None = None,
        job_resources: Iterable[ResourceRef] = (),
        namespaces: Iterable[str] = (),
    ) -> None:
        self.client = client
        self.index = index
        self.write_status = write_status
        self._now = now or (lambda: datetime.now(UTC))
        self.policies = Informer(client, TRAINING_POLICIES)
        self.namespaces = Informer(client, NAMESPACES)
        self.policies.add_handler(
            on_add=self._policy_changed,
            on_update=self._policy_updated,
            on_delete=index.on_policy_delete,
        )
        self.namespaces.add_handler(
            on_add=index.on_namespace_add,
            on_update=index.on_namespace_update,
            on_delete=index.on_namespace_delete,
        )
        # A deleted namespace's metric series would otherwise be exported forever.
        self.namespaces.add_handler(on_delete=_forget_namespace_metrics)
        # Tenant quotas: the jobs of the served kinds that carry a tenant label, in the watched
        # namespaces (every namespace when none are given; RBAC may allow no more).
        scope = list(namespaces) or None
        self.jobs = [
            Informer(client, ref, namespaces=scope, label_selector=LABEL_TENANT) for ref in job_resources
        ]
        for informer in self.jobs:
            jobs, kind = index.tenant_jobs, informer.ref.kind
            informer.add_handler(
                on_add=partial(jobs.on_job, kind),
                on_update=partial(jobs.on_job_update, kind),
                on_delete=partial(jobs.on_job_delete, kind),
            )
        self._status_queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._status_task: asyncio.Task[None] | None = None

    @property
    def has_synced(self) -> bool:
        return (
            self.policies.has_synced
            and self.namespaces.has_synced
            and all(informer.has_synced for informer in self.jobs)
        )

    async def start(self, *, wait: bool = True) -> None:
        self.policies.start()
        self.namespaces.start()
        for informer in self.jobs:
            informer.start()
        if self.write_status and self._status_task is None:
            self._status_task = asyncio.get_running_loop().create_task(
                self._status_worker(), name="trainingpolicy status"
            )
        if wait:
            await self.policies.wait_synced()
            await self.namespaces.wait_synced()
            for informer in self.jobs:
                await informer.wait_synced()

    async def stop(self) -> None:
        await self.policies.stop()
        await self.namespaces.stop()
        for informer in self.jobs:
            await informer.stop()
        task, self._status_task = self._status_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- handlers (synchronous, called by the informer) -----------------------------------------
    def _policy_changed(self, obj: dict[str, Any]) -> None:
        self.index.on_policy_add(obj)
        if self.write_status:
            self._status_queue.put_nowait(obj)

    def _policy_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.index.on_policy_update(old, new)
        if self.write_status:
            self._status_queue.put_nowait(new)

    # --- status -----------------------------------------------------------------------------
    async def _status_worker(self) -> None:
        while True:
            obj = await self._status_queue.get()
            try:
                await self.sync_status(obj)
            except ApiError as exc:
                name = (obj.get("metadata") or {}).get("name")
                if not exc.is_not_found:
                    log.warning("cannot record the status of TrainingPolicy %s: %s", name, exc)
            except Exception:
                log.exception("recording a TrainingPolicy status failed")

    async def sync_status(self, obj: dict[str, Any]) -> bool:
        """Write the policy's status when it does not reflect the current generation and
        validity (one merge patch; nothing when it already does). True when written."""
        desired = policy_status(obj, validate_policy(obj), self._now())
        current = obj.get("status") or {}
        if all(current.get(k) == desired.get(k) for k in ("observedGeneration", "valid", "message")):
            return False
        name = str((obj.get("metadata") or {}).get("name") or "")
        await self.client.patch_status(TRAINING_POLICIES, None, name, {"status": desired})
        return True
