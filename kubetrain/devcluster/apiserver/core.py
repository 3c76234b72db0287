"""The write and read paths of the emulated kube-apiserver, independent of HTTP.

A request is a `Target` (resource type, version, namespace, name, subresource). Creates, updates
and patches go through the same steps as in kube-apiserver: metadata preparation, defaulting
(structural-schema defaults and pruning for custom resources), mutating admission, validation,
validating admission, then an optimistic-concurrency write to the store. Deletes live in
`deletion.py`, reads (list/watch) in `reads.py`.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.devcluster.admission.chain import AdmissionAttributes, AdmissionChain, AdmissionOutcome
from kubetrain.devcluster.apiserver import builtins, errors, meta, objectmeta, scales, schema
from kubetrain.devcluster.apiserver.errors import ApiError, Cause
from kubetrain.devcluster.apiserver.patch import apply_patch
from kubetrain.devcluster.apiserver.resources import NAMESPACES_KEY, WEBHOOK_KEYS, Registry
from kubetrain.devcluster.apiserver.store import Store
from kubetrain.devcluster.apiserver.types import GroupResource, Obj, ResourceType

ADMIN_USER = {"username": "kubetrain-admin", "groups": ["system:masters", "system:authenticated"]}
PATCH_RETRIES = 8


@dataclass
class Target:
    rt: ResourceType
    version: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    user: dict[str, Any] = field(default_factory=lambda: dict(ADMIN_USER))
    field_validation: str = "Warn"  # Strict | Warn | Ignore (the fieldValidation query parameter)
    # Served through a conversion webhook: the version the client asked for (this target is the
    # storage version's); admission reports it as requestKind/requestResource.
    request_version: str = ""

    @property
    def api_version(self) -> str:
        return self.rt.api_version(self.version)


@dataclass
class Result:
    code: int
    obj: Obj
    warnings: list[str] = field(default_factory=list)


class ApiServer:
    def __init__(
        self,
        store: Store,
        registry: Registry,
        admission: AdmissionChain,
        clock: Callable[[], Any] = meta.utcnow,
        seed: int | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.admission = admission
        self.clock = clock
        self.rng = random.Random(seed)

    # ---- helpers -----------------------------------------------------------------------------
    def out(self, t: Target, obj: Obj) -> Obj:
        """The object as served at the request's version (storage is version-independent)."""
        want = t.api_version
        if obj.get("apiVersion") == want and obj.get("kind") == t.rt.kind:
            return obj
        return {**obj, "apiVersion": want, "kind": t.rt.kind}

    def current(self, t: Target) -> Obj:
        obj = self.store.get(t.rt.key, t.namespace, t.name)
        if obj is None:
            raise errors.not_found(t.rt.gr, t.name)
        return obj

    def _decode(self, t: Target, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the body of the request was in an unknown format - expected an object of kind {t.rt.kind}"
            )
        obj = copy.deepcopy(body)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version and api_version != t.api_version and t.subresource == "":
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({t.api_version})"
            )
        if kind and kind != t.rt.kind and t.subresource == "":
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({t.rt.kind})"
            )
        obj["apiVersion"], obj["kind"] = t.api_version, t.rt.kind
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        ns = obj["metadata"].get("namespace")
        if t.rt.namespaced and ns and ns != t.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        return obj

    def _default(self, t: Target, obj: Obj, old: Obj | None, warnings: list[str] | None = None) -> Obj:
        """Defaults (and pruning of custom resources). With `warnings`, this is the decoding of the
        client's body: unknown fields are rejected (fieldValidation=Strict) or warned about (Warn)."""
        if t.rt.custom:
            sch = t.rt.schemas.get(t.version)
            if sch is not None:
                dropped: list[str] = []
                schema.prune(obj, sch, dropped=dropped if warnings is not None else None)
                if dropped and warnings is not None and t.field_validation != "Ignore":
                    unknown = [f'unknown field "{d.lstrip(".")}"' for d in dropped]
                    if t.field_validation == "Strict":
                        kind, version = t.rt.kind, t.version
                        raise errors.bad_request(
                            f'{kind} in version "{version}" cannot be handled as a {kind}: '
                            f"strict decoding error: {', '.join(unknown)}"
                        )
                    warnings.extend(unknown)
                schema.apply_defaults(obj, sch)
        else:
            builtins.default_builtin(t.rt.resource, obj, old)
        return obj

    def _validate(self, t: Target, obj: Obj, old: Obj | None) -> None:
        name = obj["metadata"].get("name", "")
        causes: list[Cause] = []
        if old is None:
            causes += builtins.name_causes(t.rt.resource, name)
        causes += objectmeta.metadata_causes(obj["metadata"])
        if t.rt.custom:
            sch = t.rt.schemas.get(t.version)
            if sch is not None:
                causes += schema.validate(obj, sch)
        else:
            causes += builtins.validate_builtin(t.rt.resource, obj, old)
        if causes:
            raise errors.invalid(t.rt.kind, t.rt.group, name, causes)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        ns = self.store.get(NAMESPACES_KEY, "", namespace)
        return dict(ns["metadata"].get("labels") or {}) if ns is not None else None

    def _check_namespace(self, t: Target, name: str) -> None:
        if not t.rt.namespaced:
            return
        ns = self.store.get(NAMESPACES_KEY, "", t.namespace)
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

    # ---- admission (C's chain) ---------------------------------------------------------------
    def _configs(self) -> tuple[list[Obj], list[Obj]]:
        mutating = list(self.store.items(WEBHOOK_KEYS[0]))
        validating = list(self.store.items(WEBHOOK_KEYS[1]))
        return mutating, validating

    async def admit(
        self,
        phase: str,
        t: Target,
        operation: str,
        obj: Obj | None,
        old: Obj | None,
        options: Obj | None = None,
    ) -> tuple[Obj | None, list[str]]:
        """Run the mutating or validating webhooks; raise the client's error on a denial."""
        if t.rt.key in WEBHOOK_KEYS:
            return obj, []
        mutating, validating = self._configs()
        configs = mutating if phase == "mutating" else validating
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
            kind=scales.SCALE_KIND if scale else (t.rt.group, t.version, t.rt.kind),
            namespace=t.namespace,
            name=(subject or {}).get("metadata", {}).get("name", t.name),
            obj=view(obj),
            old_obj=view(old),
            dry_run=t.dry_run,
            user_info=t.user,
            namespace_labels=self.namespace_labels(t.namespace) if t.rt.namespaced else None,
            options=options,
            request_version="" if scale else t.request_version,
        )
        outcome: AdmissionOutcome
        if phase == "mutating":
            outcome = await self.admission.mutate(attrs, configs)
        else:
            outcome = await self.admission.validate(attrs, configs)
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
        return (outcome.obj if obj is not None else obj), outcome.warnings

    # ---- create ------------------------------------------------------------------------------
    async def create(self, t: Target, body: Any) -> Result:
        obj = self._decode(t, body)
        md = obj["metadata"]
        if not md.get("name") and not md.get("generateName"):
            raise errors.invalid(
                t.rt.kind,
                t.rt.group,
                "",
                [
                    Cause(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )
                ],
            )
        if t.name and md.get("name") and md["name"] != t.name:
            raise errors.bad_request(
                f"the name of the object ({md['name']}) does not match the name on the URL ({t.name})"
            )
        self._check_namespace(t, md.get("name") or md.get("generateName", ""))
        generated = not md.get("name")
        for _attempt in range(8):
            if generated:
                md["name"] = meta.generate_name(md["generateName"], self.rng)
            if self.store.get(t.rt.key, t.namespace if t.rt.namespaced else "", md["name"]) is None:
                break
            if not generated:
                raise errors.already_exists(t.rt.gr, md["name"])
        meta.prepare_create(obj, t.rt, t.namespace, self.clock())
        if t.rt.has_status and t.rt.custom:
            obj.pop("status", None)
        decode_warnings: list[str] = []
        self._default(t, obj, None, decode_warnings)
        mutated, warnings = await self.admit("mutating", t, "CREATE", obj, None)
        warnings = decode_warnings + warnings
        assert mutated is not None
        obj = self._default(t, mutated, None)
        self._validate(t, obj, None)
        _, more = await self.admit("validating", t, "CREATE", obj, None)
        if t.dry_run:
            return Result(201, obj, warnings + more)
        try:
            stored = self.store.create(t.rt.key, obj)
        except KeyError:
            raise errors.already_exists(t.rt.gr, md["name"]) from None
        return Result(201, stored, warnings + more)

    # ---- update / patch ----------------------------------------------------------------------
    async def update(self, t: Target, body: Any) -> Result:
        obj = self._decode(t, body)
        name = obj["metadata"].get("name")
        if name != t.name:
            raise errors.bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({t.name})"
            )
        old = self.current(t)
        rv = obj["metadata"].get("resourceVersion") or None
        if rv is None and t.rt.custom:
            raise meta.unconditional_update_refused(t.rt, t.name)
        return await self._write(t, old, obj, rv)

    async def patch(self, t: Target, content_type: str, body: Any) -> Result:
        for _attempt in range(PATCH_RETRIES):
            old = self.current(t)
            base = self.out(t, old)
            patched = apply_patch(content_type, base, body, custom=t.rt.custom)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            obj = self._decode(t, patched)
            if obj["metadata"].get("name") != t.name:
                raise errors.bad_request(
                    "metadata.name: Invalid value: the name of the object may not be patched"
                )
            rv = obj["metadata"].get("resourceVersion") or None
            if rv is not None and rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(t.rt.gr, t.name, errors.STALE)
            try:
                return await self._write(t, old, obj, old["metadata"]["resourceVersion"], retryable=True)
            except _Retry:
                continue
        raise errors.conflict(t.rt.gr, t.name, errors.STALE)

    async def _write(
        self, t: Target, old: Obj, obj: Obj, expected_rv: str | None, retryable: bool = False
    ) -> Result:
        if expected_rv and expected_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(t.rt.gr, t.name, errors.STALE)
        if t.subresource == "status":
            new = copy.deepcopy(self.out(t, old))
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            meta.carry_over(new, old)
            if t.rt.has_status:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
        old_finalizers = old["metadata"].get("finalizers") or []
        if old["metadata"].get("deletionTimestamp"):
            added = [f for f in new["metadata"].get("finalizers") or [] if f not in old_finalizers]
            if added:
                raise errors.invalid(
                    t.rt.kind,
                    t.rt.group,
                    t.name,
                    [
                        Cause(
                            "FieldValueForbidden",
                            "Forbidden: no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {added!r}",
                            "metadata.finalizers",
                        )
                    ],
                )
        decode_warnings: list[str] = []
        self._default(t, new, old, decode_warnings)
        mutated, warnings = await self.admit("mutating", t, "UPDATE", new, old)
        warnings = decode_warnings + warnings
        assert mutated is not None
        new = self._default(t, mutated, old)
        meta.bump_generation(new, old, t.rt)
        self._validate(t, new, old)
        _, more = await self.admit("validating", t, "UPDATE", new, old)
        warnings += more
        if meta.same_object(new, self.out(t, old)):
            return Result(200, old, warnings)  # a no-op update is not written (no new resourceVersion)
        if t.dry_run:
            return Result(200, new, warnings)
        return Result(
            200,
            self.commit(
                t.rt, new, old["metadata"]["resourceVersion"] if retryable else expected_rv, retryable
            ),
            warnings,
        )

    def commit(self, rt: ResourceType, new: Obj, expected_rv: str | None, retryable: bool = False) -> Obj:
        """Store an update; an object being deleted whose last finalizer went away is removed."""
        md = new["metadata"]
        try:
            if md.get("deletionTimestamp") and not md.get("finalizers") and not _graceful_pending(rt, new):
                return self.store.remove(rt.key, md.get("namespace", ""), md["name"], expected_rv)
            return self.store.update(rt.key, new, expected_rv)
        except LookupError:
            raise errors.not_found(rt.gr, md["name"]) from None
        except ValueError:
            if retryable:
                raise _Retry() from None
            raise errors.conflict(rt.gr, md["name"], errors.STALE) from None


class _Retry(Exception):
    """The object changed between read and write of a patch: re-apply the patch."""


def _graceful_pending(rt: ResourceType, obj: Obj) -> bool:
    if rt.key == "namespaces":
        return bool((obj.get("spec") or {}).get("finalizers"))
    return rt.key == "pods" and bool(obj["metadata"].get("deletionGracePeriodSeconds"))


def _warning(text: str) -> str:
    return '299 - "' + text.replace('"', '\\"') + '"'
