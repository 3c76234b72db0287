"""POST pods/{name}/eviction honouring PodDisruptionBudgets, as kube-apiserver's EvictionREST does
(pkg/registry/core/pod/storage/eviction.go `EvictionREST.Create`), in upstream's order:

1. A pod that is Succeeded, Failed, Pending or already being deleted (`canIgnorePDB`) is deleted
   at once (with a resourceVersion precondition unless it is terminal or being deleted,
   `shouldEnforceResourceVersion`).
2. The budgets whose selector picks the pod (`getPodDisruptionBudgets`): none → the pod is
   deleted; more than one → a 500 Status "This pod has more than one PodDisruptionBudget, which
   the eviction subresource does not support." (returned as the response, nothing deleted).
3. A pod that is not Ready is deleted without using the budget when the budget's
   unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the default) when
   currentHealthy >= desiredHealthy > 0 — with a resourceVersion precondition, a conflict on
   which is a 429 for the client to retry.
4. Otherwise `checkAndDecrement`: a status older than the spec (observedGeneration <
   generation) → 429 "...is still being processed by the server."; a negative
   disruptionsAllowed or more than 2000 disruptedPods → 403; disruptionsAllowed 0 → 429
   TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget." with a
   `DisruptionBudget` cause "The disruption budget <name> needs <desired> healthy pods and has
   <current> currently"; else disruptionsAllowed is decremented and the pod recorded in
   `status.disruptedPods` (not on a dry run) in one status write, then the pod is deleted.
5. Before the delete (`addConditionAndDeletePod`, not on a dry run) the pod gets the condition
   DisruptionTarget=True, reason EvictionByEvictionAPI, message "Eviction API: evicting"
   (PodDisruptionConditions, GA), written as a status update.

The webhooks saw the request before (subresources.py: a CREATE of pods/eviction); the deletion
here is not admitted again as a DELETE.

The disruption controller (controllers/disruption.py) keeps the budgets' status up to date.
Upstream retries a conflicting budget write up to 20 times; here a write and the check before it
happen without yielding, so they cannot conflict.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource, Obj
from kubetrain.devcluster.apiserver.kinds import meta, podconditions, podgeneration
from kubetrain.devcluster.apiserver.kinds.pdbs import (
    PDBS_KEY,
    disruption_allowed_condition,
    is_pod_ready,
    pdb_selects_pod,
)
from kubetrain.devcluster.apiserver.verbs import deletion
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Target

MAX_DISRUPTED_POD_SIZE = 2000
MORE_THAN_ONE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)
WOULD_VIOLATE = "Cannot evict pod as it would violate the pod's disruption budget."
_PDB_RESOURCE = "poddisruptionbudget"  # policy.Resource("poddisruptionbudget") in the 403s


def too_many_requests(cause: str, retry_after: int) -> errors.ApiError:
    """apimachinery `NewTooManyRequests` with a `DisruptionBudget` cause."""
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    headers = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return errors.ApiError(429, "TooManyRequests", WOULD_VIOLATE, details, headers)


def still_processing(name: str) -> errors.ApiError:
    """`createTooManyRequestsError`."""
    return too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)


def _pdb_forbidden(name: str, why: str) -> errors.ApiError:
    return errors.ApiError(
        403,
        "Forbidden",
        f'{_PDB_RESOURCE}.policy "{name}" is forbidden: {why}',
        {"name": name, "group": "policy", "kind": _PDB_RESOURCE},
    )


def can_ignore_pdb(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _enforce_resource_version(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _with_resource_version(options: Obj, rv: str) -> Obj:
    out = copy.deepcopy(options)
    out.setdefault("preconditions", {})
    out["preconditions"] = {**(out["preconditions"] or {}), "resourceVersion": rv}
    return out


def _rv_unset(options: Obj) -> bool:
    return not (options.get("preconditions") or {}).get("resourceVersion")


def check_and_decrement(api: ApiServer, pdb: Obj, pod_name: str, dry_run: bool) -> None:
    """`checkAndDecrement`: refuse, or take one disruption from the budget (one status write)."""
    status = copy.deepcopy(pdb.get("status") or {})
    name = pdb["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise still_processing(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _pdb_forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise _pdb_forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if allowed == 0:
        raise too_many_requests(
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
            f"and has {int(status.get('currentHealthy') or 0)} currently",
            0,
        )
    status["disruptionsAllowed"] = allowed - 1
    now = api.clock()
    if allowed - 1 == 0:
        disruption_allowed_condition(status, now)
    if dry_run:
        return
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: meta.timestamp(now)}
    new = copy.deepcopy(pdb)
    new["status"] = status
    rt = api.registry.by_key(PDBS_KEY)
    assert rt is not None
    api.commit(rt, new, pdb["metadata"]["resourceVersion"])


def _disruption_target(pod: Obj, now: str) -> Obj:
    """The pod with `addConditionAndDeletePod`'s DisruptionTarget condition, set by
    `UpdatePodCondition` (kinds/podconditions.py) with no observedGeneration (eviction.go sets
    none), written through the pods/status strategy as upstream's status store does: a
    DisruptionTarget condition that had an observedGeneration keeps it
    (`preserveOldObservedGeneration`)."""
    new = copy.deepcopy(pod)
    condition = podconditions.pod_condition(
        "DisruptionTarget", "True", reason="EvictionByEvictionAPI", message="Eviction API: evicting"
    )
    new["status"], _ = podconditions.update_pod_condition(new.get("status"), condition, now)
    podgeneration.preserve_observed_generation(new, pod)
    return new


async def add_condition_and_delete(api: ApiServer, t: Target, options: Obj) -> None:
    """`addConditionAndDeletePod`: the preconditions checked against the newest pod, the condition
    written, the preconditions' resourceVersion moved to that write, then the delete."""
    if not t.dry_run:
        pod = api.current(t)
        pre = options.get("preconditions") or {}
        by_kind = GroupResource("", "Pod")
        if pre.get("uid") and pre["uid"] != pod["metadata"].get("uid"):
            raise errors.conflict(
                by_kind,
                t.name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({pod['metadata'].get('uid')}). The object might have been deleted and then recreated",
            )
        rv = pod["metadata"]["resourceVersion"]
        if pre.get("resourceVersion") and pre["resourceVersion"] != rv:
            raise errors.conflict(
                by_kind,
                t.name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match "
                f"the ResourceVersion in record ({rv}). The object might have been modified",
            )
        rt = t.rt
        updated = api.commit(rt, _disruption_target(pod, meta.timestamp(api.clock())), rv)
        if not _rv_unset(options):
            options = _with_resource_version(options, updated["metadata"]["resourceVersion"])
    target = Target(t.rt, t.version, t.namespace, t.name, dry_run=t.dry_run, user=t.user)
    await deletion.delete(api, target, options, admission=False)


def pdbs_for(api: ApiServer, pod: Obj) -> list[Obj]:
    ns = str(pod["metadata"].get("namespace", ""))
    return [pdb for pdb in api.store.items(PDBS_KEY, ns) if pdb_selects_pod(pdb, pod)]


async def evict(api: ApiServer, t: Target, options: Obj) -> Obj | None:
    """Evict the pod; None on success, else the failure Status to return (the 500 for more than
    one budget). Refusals are raised as `ApiError`s."""
    pod = api.current(t)
    if can_ignore_pdb(pod):
        if _enforce_resource_version(pod) and _rv_unset(options):
            options = _with_resource_version(options, pod["metadata"]["resourceVersion"])
        await add_condition_and_delete(api, t, options)
        return None
    budgets = pdbs_for(api, pod)
    if len(budgets) > 1:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": MORE_THAN_ONE,
            "code": 500,
        }
    unhealthy_delete = False
    pdb_name = ""
    if budgets:
        pdb = budgets[0]
        pdb_name = pdb["metadata"]["name"]
        status = pdb.get("status") or {}
        if not is_pod_ready(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            desired = int(status.get("desiredHealthy") or 0)
            if policy == "AlwaysAllow" or int(status.get("currentHealthy") or 0) >= desired > 0:
                unhealthy_delete = True
        if not unhealthy_delete:
            check_and_decrement(api, pdb, t.name, t.dry_run)
    delete_options = options
    if unhealthy_delete:
        delete_options = _with_resource_version(options, pod["metadata"]["resourceVersion"])
    try:
        await add_condition_and_delete(api, t, delete_options)
    except errors.ApiError as exc:
        if exc.code == 409 and unhealthy_delete and _rv_unset(options):
            raise still_processing(pdb_name) from None
        raise
    return None
