"""DELETE: preconditions, propagation policy finalizers, pod graceful deletion, finalizers.

As in kube-apiserver's generic registry:
- Foreground adds the `foregroundDeletion` finalizer, Orphan the `orphan` finalizer (the garbage
  collector in `controllers/gc.py` does the rest); Background (the default) deletes at once and lets the
  collector remove dependents afterwards.
- An object with finalizers gets metadata.deletionTimestamp (and its generation bumped) and stays
  until the finalizers are removed.
- A pod bound to a node is deleted gracefully: deletionTimestamp = now + grace period,
  deletionGracePeriodSeconds = grace; the kubelet finishes it with a grace-period-0 delete. A pod
  without a node, or in a terminal phase, is deleted at once.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource, Obj
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.request.selectors import Predicate
from kubetrain.devcluster.apiserver.verbs import priority
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Result, Target

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Foreground", "Background", "Orphan")


def _options_error(message: str) -> errors.ApiError:
    return errors.ApiError(
        422,
        "Invalid",
        f'DeleteOptions.meta.k8s.io "" is invalid: {message}',
        {"group": "meta.k8s.io", "kind": "DeleteOptions"},
    )


def _grace(t: Target, obj: Obj, options: dict[str, Any]) -> int:
    if t.rt.key != "pods":
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    grace = int(grace)
    if grace < 0:
        grace = 1
    return grace


async def delete(api: ApiServer, t: Target, options: dict[str, Any] | None, admission: bool = True) -> Result:
    """DELETE one object. `admission` false: a delete another verb makes, which the validating
    webhooks do not see as a DELETE (pods/eviction, whose CREATE they saw instead; eviction.go
    deletes with `rest.ValidateAllObjectFunc`)."""
    options = dict(options or {})
    priority.check_delete(t)
    old = api.current(t)
    md = old["metadata"]
    pre = options.get("preconditions") or {}
    # registry/rest/delete.go BeforeDelete: the conflict names the object's Kind, not its resource
    by_kind = GroupResource(t.rt.group, t.rt.kind)
    if pre.get("uid") and pre["uid"] != md.get("uid"):
        raise errors.conflict(
            by_kind,
            t.name,
            f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
            f"({md.get('uid')}). The object might have been deleted and then recreated",
        )
    if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
        raise errors.conflict(
            by_kind,
            t.name,
            f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match the "
            f"ResourceVersion in record ({md.get('resourceVersion')}). The object might have been modified",
        )
    policy = options.get("propagationPolicy")
    orphan = options.get("orphanDependents")
    if policy is not None and orphan is not None:
        raise _options_error(
            '[]: Invalid value: "": orphanDependents and deletionPropagation cannot be both set'
        )
    if policy is not None and policy not in POLICIES:
        raise _options_error(
            f'propagationPolicy: Unsupported value: "{policy}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    if orphan is not None:
        policy = "Orphan" if orphan else "Background"
    if admission:
        await api.admit(
            "validating",
            t,
            "DELETE",
            None,
            old,
            {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **options},
        )
    grace = _grace(t, old, options)
    finalizers = list(md.get("finalizers") or [])
    if policy == "Foreground" and FOREGROUND not in finalizers:
        finalizers.append(FOREGROUND)
        finalizers = [f for f in finalizers if f != ORPHAN]
    elif policy == "Orphan" and ORPHAN not in finalizers:
        finalizers.append(ORPHAN)
        finalizers = [f for f in finalizers if f != FOREGROUND]
    elif policy == "Background":
        finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)] + [
            f for f in finalizers if f in (FOREGROUND, ORPHAN) and md.get("deletionTimestamp")
        ]
    already = bool(md.get("deletionTimestamp"))
    if not finalizers and grace == 0 and not _namespace_pending(t, old):
        if t.dry_run:
            return Result(200, _deleted_result(t, old))
        try:
            gone = api.store.remove(t.rt.key, t.namespace, t.name)
        except LookupError:
            raise errors.not_found(t.rt.gr, t.name) from None
        return Result(200, _deleted_result(t, gone))
    new = copy.deepcopy(old)
    nmd = new["metadata"]
    now = api.clock()
    if finalizers:
        nmd["finalizers"] = finalizers
    else:
        nmd.pop("finalizers", None)
    if not already:
        nmd["deletionTimestamp"] = meta.timestamp(now + timedelta(seconds=grace))
        nmd["deletionGracePeriodSeconds"] = grace
        if nmd.get("generation"):
            nmd["generation"] = int(nmd["generation"]) + 1
    elif t.rt.key == "pods" and grace < int(nmd.get("deletionGracePeriodSeconds") or 0):
        nmd["deletionTimestamp"] = meta.timestamp(now + timedelta(seconds=grace))
        nmd["deletionGracePeriodSeconds"] = grace
    if t.rt.key == "namespaces":
        new.setdefault("status", {})["phase"] = "Terminating"
    if meta.same_object(new, old):
        return Result(200, api.out(t, old))
    if t.dry_run:
        return Result(200, api.out(t, new))
    stored = api.commit(t.rt, new, None)
    return Result(202 if orphan is False else 200, api.out(t, stored))


def _namespace_pending(t: Target, obj: Obj) -> bool:
    """A namespace with spec.finalizers waits for the namespace controller to empty it."""
    return t.rt.key == "namespaces" and bool((obj.get("spec") or {}).get("finalizers"))


def _deleted_result(t: Target, obj: Obj) -> Obj:
    if t.rt.return_deleted_object:
        return {**obj, "apiVersion": t.api_version, "kind": t.rt.kind}
    details: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if t.rt.group:
        details["group"] = t.rt.group
    details["kind"] = t.rt.resource
    details["uid"] = obj["metadata"].get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


async def delete_collection(
    api: ApiServer, t: Target, options: dict[str, Any] | None, predicate: Predicate
) -> list[Obj]:
    ns = t.namespace if t.rt.namespaced else None
    victims = [o for o in api.store.items(t.rt.key, ns) if predicate(o)]
    out = []
    for obj in victims:
        md = obj["metadata"]
        target = Target(t.rt, t.version, md.get("namespace", ""), md["name"], dry_run=t.dry_run, user=t.user)
        try:
            result = await delete(api, target, options)
        except errors.ApiError as exc:
            if exc.code == 404:
                continue
            raise
        out.append(result.obj if result.obj.get("kind") != "Status" else api.out(target, obj))
    return out
