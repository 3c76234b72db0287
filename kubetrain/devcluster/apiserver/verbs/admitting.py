"""Admission of a write, as kube-apiserver's admission chain runs it: the NamespaceLifecycle
plugin (no new objects in a missing or terminating namespace) and the mutating and validating
webhooks (devcluster/admission/chain.py), with the request described as the webhooks see it
(`<plural>/scale` requests of custom resources as autoscaling/v1 Scales)."""

from __future__ import annotations

from kubetrain.devcluster.admission.chain import AdmissionAttributes, AdmissionChain, AdmissionOutcome
from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import GroupResource, Obj
from kubetrain.devcluster.apiserver.kinds import builtinschema, scalefields, scales
from kubetrain.devcluster.apiserver.kinds.resources import NAMESPACES_KEY, WEBHOOK_KEYS
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.storage.store import Store


def namespace_labels(store: Store, namespace: str) -> dict[str, str] | None:
    ns = store.get(NAMESPACES_KEY, "", namespace)
    return dict(ns["metadata"].get("labels") or {}) if ns is not None else None


def check_namespace(store: Store, t: Target, name: str) -> None:
    """NamespaceLifecycle: 404 for a missing namespace, 403 for one being terminated."""
    if not t.rt.namespaced:
        return
    ns = store.get(NAMESPACES_KEY, "", t.namespace)
    if ns is None:
        raise errors.not_found(GroupResource("", "namespaces"), t.namespace)
    if ns["metadata"].get("deletionTimestamp"):
        # kube-apiserver's NamespaceLifecycle admission: 403 Forbidden with this cause.
        err = errors.forbidden(
            t.rt.gr,
            name,
            f"unable to create new content in namespace {t.namespace} because it is being terminated",
        )
        assert err.details is not None
        err.details["causes"] = [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {t.namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ]
        raise err


async def admit(
    store: Store,
    chain: AdmissionChain,
    phase: str,
    t: Target,
    operation: str,
    obj: Obj | None,
    old: Obj | None,
    options: Obj | None = None,
    kind: tuple[str, str, str] | None = None,
) -> tuple[Obj | None, list[str]]:
    """Run the mutating or validating webhooks; raise the client's error on a denial. `kind` is
    the object's when it is not the resource's own (a subresource's, e.g. pods/eviction's
    policy/v1 Eviction)."""
    if t.rt.key in WEBHOOK_KEYS:
        return obj, []
    configs = list(store.items(WEBHOOK_KEYS[0] if phase == "mutating" else WEBHOOK_KEYS[1]))
    if not configs:
        return obj, []
    subject = obj if obj is not None else old
    scale = t.subresource == "scale" and t.rt.custom  # admitted as autoscaling/v1 Scales
    view = (lambda o: scales.scale_of(t.rt, o) if o is not None else None) if scale else (lambda o: o)
    attrs = AdmissionAttributes(
        operation=operation,
        group=t.rt.group,
        version=t.version,
        resource=t.rt.resource,
        subresource=t.subresource,
        kind=scales.SCALE_KIND if scale else kind or (t.rt.group, t.version, t.rt.kind),
        namespace=t.namespace,
        name=(subject or {}).get("metadata", {}).get("name", t.name),
        obj=view(obj),
        old_obj=(scalefields.old_scale(t.rt, old) if old is not None else None) if scale else old,
        dry_run=t.dry_run,
        user_info=t.user,
        namespace_labels=namespace_labels(store, t.namespace) if t.rt.namespaced else None,
        options=options,
        request_version="" if scale else t.request_version,
    )
    outcome: AdmissionOutcome
    if phase == "mutating":
        outcome = await chain.mutate(attrs, configs)
    else:
        outcome = await chain.validate(attrs, configs)
    if not outcome.allowed:
        status = outcome.status or {}
        raise ApiError(
            outcome.status_code,
            status.get("reason", outcome.reason),
            status.get("message", outcome.message),
            status.get("details"),
            {"Warning": ", ".join(_warning(w) for w in outcome.warnings)} if outcome.warnings else {},
        )
    if scale and obj is not None:
        return scales.with_mutated_replicas(t.rt, obj, outcome.obj), outcome.warnings
    if phase == "mutating" and outcome.obj is not None and not t.rt.custom:
        # The patched object is decoded into the Go type without strictness (k8s.io/apiserver
        # admission/plugin/webhook/mutating dispatcher.go `callAttrMutatingHook`): what a
        # webhook added that the kind does not have is dropped silently.
        builtinschema.unknown_fields(*(kind or (t.rt.group, t.version, t.rt.kind)), outcome.obj)
    return (outcome.obj if obj is not None else obj), outcome.warnings


def _warning(text: str) -> str:
    return '299 - "' + text.replace('"', '\\"') + '"'
