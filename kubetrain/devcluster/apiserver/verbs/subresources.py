"""Subresources besides status: pods/binding, pods/eviction, {custom}/scale."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource, Obj
from kubetrain.devcluster.apiserver.kinds import meta, podconditions, scalefields
from kubetrain.devcluster.apiserver.kinds.scales import SCALE_KIND, scale_of, set_path, spec_replicas_path
from kubetrain.devcluster.apiserver.request import decoding
from kubetrain.devcluster.apiserver.request.patch import APPLY, EMPTY, apply_patch, check_media_type
from kubetrain.devcluster.apiserver.verbs import applying, eviction
from kubetrain.devcluster.apiserver.verbs.core import PATCH_RETRIES, ApiServer, Result, Target

BINDING_KIND = ("", "v1", "Binding")
EVICTION_KIND = ("policy", "v1", "Eviction")


def _success(code: int) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


async def bind(api: ApiServer, t: Target, body: Any, admitted_as: Target | None = None) -> Result:
    """POST pods/{name}/binding (or `bindings`, admitted as `admitted_as`): set spec.nodeName of an
    unbound pod, as kube-apiserver's handler and `BindingREST.Create` do, in that order: the
    mutating webhooks see the Binding (a CREATE of pods/binding); its `metadata.name` must be the
    pod's; `target.name` is required; the validating webhooks see it; then `setPodNodeAndMetadata`
    under the Binding's `metadata.uid`/`resourceVersion` preconditions (what kube-scheduler sends:
    a pod deleted and recreated under the same name is not bound for the old one): a pod being
    deleted, already bound or with scheduling gates is a 409 on `pods/binding`; the Binding's
    annotations are merged into the pod's; `PodScheduled` becomes True (its transition time now);
    the pod's generation stays (kinds/podgeneration.py)."""
    warnings = _decoded(t, BINDING_KIND, body)
    admission = admitted_as or t
    obj = _subresource_object(t, body, "v1", "Binding")
    mutated, admitted = await api.admit("mutating", admission, "CREATE", obj, None, kind=BINDING_KIND)
    binding = mutated if mutated is not None else obj
    if (binding.get("metadata") or {}).get("name") != t.name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    target = binding.get("target") or {}
    node = target.get("name")
    if not node:
        raise errors.invalid(
            "Binding", "", t.name, [errors.Cause("FieldValueRequired", "Required value", "target.name")]
        )
    _, more = await api.admit("validating", admission, "CREATE", binding, None, kind=BINDING_KIND)
    warnings = warnings + admitted + more
    pod = api.current(t)
    _check_preconditions(t, pod, binding.get("metadata") or {})
    pod_binding = GroupResource("", "pods/binding")
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            pod_binding, t.name, f"pod {t.name} is being deleted, cannot be assigned to a host"
        )
    if (pod.get("spec") or {}).get("nodeName"):
        raise errors.conflict(
            pod_binding, t.name, f'pod {t.name} is already assigned to node "{pod["spec"]["nodeName"]}"'
        )
    if (pod.get("spec") or {}).get("schedulingGates"):
        raise errors.conflict(pod_binding, t.name, f"pod {t.name} has non-empty .spec.schedulingGates")
    new = copy.deepcopy(pod)
    new["spec"]["nodeName"] = node
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    if annotations:
        new["metadata"]["annotations"] = {**(new["metadata"].get("annotations") or {}), **annotations}
    _set_scheduled(new, meta.timestamp(api.clock()))
    if not t.dry_run:
        api.commit(t.rt, new, pod["metadata"]["resourceVersion"])
    return Result(201, _success(201), warnings)


def _check_preconditions(t: Target, pod: Obj, binding_meta: Obj) -> None:
    """The storage layer's `Preconditions.Check` on the Binding's uid and resourceVersion, its
    error made a 409 on `pods` (`assignPod`: storeerr.InterpretUpdateError)."""
    md = pod["metadata"]
    for field, name in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        wanted = binding_meta.get(field)
        if wanted and wanted != md.get(field):
            raise errors.conflict(
                GroupResource("", "pods"),
                t.name,
                f"StorageError: invalid object, Code: 4, Key: /registry/pods/{t.namespace}/{t.name}, "
                f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {name} in precondition: "
                f"{wanted}, {name} in object meta: {md.get(field, '')}",
            )


def _set_scheduled(pod: Obj, now: str) -> None:
    """`setPodNodeAndMetadata`'s PodScheduled=True, set by `UpdatePodCondition`
    (kinds/podconditions.py): the transition time moves only when the status changes; the
    condition is replaced whole, so the reason, message and observedGeneration kube-scheduler's
    Unschedulable condition had go (the binding sets no observedGeneration: it writes storage
    around the pod strategy)."""
    condition = podconditions.pod_condition("PodScheduled", "True")
    pod["status"], _ = podconditions.update_pod_condition(pod.get("status"), condition, now)


async def evict(api: ApiServer, t: Target, body: Any) -> Result:
    """POST pods/{name}/eviction: the pod deleted with the eviction's delete options when its
    PodDisruptionBudget allows it (eviction.py). As kube-apiserver's handler and
    `EvictionREST.Create` do, in that order: the mutating webhooks see the Eviction (a CREATE of
    pods/eviction); its `metadata.name` must be the pod's ("name in URL does not match name in
    Eviction object", also when it has none); the request's and the delete options' dry runs must
    agree; the validating webhooks see it; then the eviction. The pod's deletion that follows is
    not admitted again as a DELETE (eviction.go deletes with `rest.ValidateAllObjectFunc`)."""
    warnings = _decoded(t, EVICTION_KIND, body)
    obj = _subresource_object(t, body, "policy/v1", "Eviction")
    mutated, admitted = await api.admit("mutating", t, "CREATE", obj, None, kind=EVICTION_KIND)
    eviction_body = mutated if mutated is not None else obj
    if (eviction_body.get("metadata") or {}).get("name") != t.name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = dict(eviction_body.get("deleteOptions") or {})
    # eviction.go `propagateDryRun`: the request's dryRun and the delete options' must agree
    content = options.get("dryRun") or []
    if t.dry_run and content and content != ["All"]:
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: [All] and [{' '.join(map(str, content))}]"
        )
    t = dataclasses.replace(t, dry_run=t.dry_run or bool(content))
    _, more = await api.admit("validating", t, "CREATE", eviction_body, None, kind=EVICTION_KIND)
    warnings = warnings + admitted + more
    failure = await eviction.evict(api, t, options)
    if failure is not None:
        return Result(int(failure["code"]), failure, warnings)
    return Result(201, _success(201), warnings)


def _subresource_object(t: Target, body: Any, api_version: str, kind: str) -> Obj:
    """The object the webhooks see: the body as `api_version` (an Eviction's v1beta1 has the same
    fields), in the request's namespace."""
    obj = copy.deepcopy(body) if isinstance(body, dict) else {}
    obj["apiVersion"], obj["kind"] = api_version, kind
    metadata = obj.get("metadata")
    obj["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), "namespace": t.namespace}
    return obj


def _decoded(t: Target, kind: tuple[str, str, str], body: Any) -> list[str]:
    """The body decoded as its kind (unknown fields dropped, refused or warned about)."""
    return decoding.unknown_fields(t, body, kind=kind) if isinstance(body, dict) else []


async def scale(api: ApiServer, t: Target, method: str, content_type: str, body: Any) -> Result:
    """GET, PUT or PATCH `{custom}/scale`. Like kube-apiserver's GuaranteedUpdate, a write whose
    Scale names no resourceVersion is re-applied to the newest object when the job changed while
    the write was admitted; one that names a resourceVersion gets 409 when it is stale.
    managedFields: the writer gets no entry and the replicas path leaves every manager; an apply
    fails (kinds/scalefields.py)."""
    if method == "GET":
        return Result(200, scale_of(t.rt, api.current(t)))
    if method == "PATCH":
        is_apply = check_media_type(content_type, custom=True) == APPLY
        applying.check_options(t, is_apply=is_apply)
        if is_apply:
            api.current(t)  # 404 first: /scale never creates
            raise scalefields.apply_refusal(None if body is EMPTY else body)
    precondition = ((body if isinstance(body, dict) else {}).get("metadata") or {}).get("resourceVersion")
    for _attempt in range(PATCH_RETRIES):
        obj = api.current(t)
        current = scale_of(t.rt, obj)
        if method != "PUT":
            decoding.check_json_patch(t, content_type, body)
        wanted = body if method == "PUT" else apply_patch(content_type, current, body, custom=True)
        warnings: list[str] = []
        if isinstance(wanted, dict):  # decoded as an autoscaling/v1 Scale
            wanted = copy.deepcopy(wanted) if method == "PUT" else wanted
            patch = None if method == "PUT" else (content_type, body)
            warnings = decoding.unknown_fields(t, wanted, patch=patch, kind=SCALE_KIND)
        replicas = ((wanted or {}).get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                t.name,
                [
                    errors.Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                        "spec.replicas",
                    )
                ],
            )
        if precondition and precondition != obj["metadata"]["resourceVersion"]:
            raise errors.conflict(t.rt.gr, t.name, errors.STALE)
        new = copy.deepcopy(api.out(t, obj))
        set_path(new, spec_replicas_path(t.rt), replicas)
        # Admission sees a `<plural>/scale` request, as kube-apiserver sends it: webhooks registered
        # for the main resource only are not called (their rules must name `<plural>/scale`), and
        # they see autoscaling/v1 Scales (core.admit, scales.py).
        main = Target(
            t.rt,
            t.version,
            t.namespace,
            t.name,
            subresource="scale",
            dry_run=t.dry_run,
            user=t.user,
            field_manager=t.field_manager,  # recorded in managedFields with `subresource: scale`
            user_agent=t.user_agent,
        )
        try:
            result = await api.update(main, new)
        except errors.ApiError as e:
            if e.code == 409 and not precondition:
                continue  # the job changed during admission: re-apply to the newest object
            raise
        return Result(200, scale_of(t.rt, result.obj), warnings + result.warnings)
    raise errors.conflict(t.rt.gr, t.name, errors.STALE)
