"""The write path of the emulated kube-apiserver, independent of HTTP.

A request is a `Target` (target.py: resource type, version, namespace, name, subresource).
Creates, updates and patches go through the same steps as in kube-apiserver: decoding of the
body (decoding.py: apiVersion/kind checks, unknown fields per fieldValidation), metadata
preparation, defaulting (structural-schema defaults and pruning for custom resources), mutating
admission (admitting.py), validation, validating admission, then an optimistic-concurrency write
to the store. Deletes live in `deletion.py`, reads (list/watch) in `reads.py`.
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.admission.chain import AdmissionChain
from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds import builtins, meta, namerules, objectmeta, podgeneration, schema
from kubetrain.devcluster.apiserver.kinds.crds import celeval, listtype
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote
from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.request import decoding
from kubetrain.devcluster.apiserver.request.patch import APPLY, apply_patch
from kubetrain.devcluster.apiserver.request.target import ADMIN_USER, Result, Target
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.devcluster.apiserver.verbs import admitting, applying, managing, priority, tolerationseconds
from kubetrain.devcluster.apiserver.verbs.serviceips import SERVICES_KEY, ServiceAllocator

PATCH_RETRIES = 8

__all__ = ["ADMIN_USER", "PATCH_RETRIES", "ApiServer", "Result", "Target"]


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
        self.services = ServiceAllocator(store, self.rng)
        # CRDs' conversion webhooks (verbs/conversion.py), for the managedFields of their writes
        self.convert: managing.Convert | None = None

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

    def _default(self, t: Target, obj: Obj, old: Obj | None) -> Obj:
        """Defaults, and the pruning of custom resources (of what a mutating webhook added)."""
        if t.rt.custom:
            sch = t.rt.schemas.get(t.version)
            if sch is not None:
                schema.prune(obj, sch)
                schema.prune_nulls(obj, sch)
                schema.apply_defaults(obj, sch)
        else:
            builtins.default_builtin(t.rt.resource, obj, old)
        return obj

    def _allocating(self, t: Target, obj: Obj, old: Obj | None) -> contextlib.AbstractContextManager[None]:
        """A Service's cluster IPs and node ports (servicealloc.py), held while the write is on."""
        if t.rt.key == SERVICES_KEY and not t.subresource:
            return self.services.allocating(obj, old, t.dry_run)
        return contextlib.nullcontext()

    def _validate(self, t: Target, obj: Obj, old: Obj | None) -> None:
        name = obj["metadata"].get("name", "")
        causes: list[Cause] = []
        if old is None:
            causes += namerules.create_name_causes(t.rt.resource, obj)
        else:
            causes += meta.immutable_causes(obj, old)
        causes += objectmeta.metadata_causes(
            obj["metadata"], namerules.core_object_meta(t.rt.resource, t.rt.custom)
        )
        if t.rt.custom:
            sch = t.rt.schemas.get(t.version)
            if sch is not None:
                schema_causes = schema.validate(obj, sch)
                causes += schema_causes
                causes += listtype.write_causes(sch, obj, old)
                if (compiled := t.rt.cel.get(t.version)) is not None:
                    causes += celeval.object_causes(compiled, obj, old, schema_causes)
        else:
            causes += builtins.validate_builtin(t.rt.resource, obj, old, t.via)
        if causes:
            raise errors.invalid(t.rt.kind, t.rt.group, name, causes)

    async def admit(
        self,
        phase: str,
        t: Target,
        operation: str,
        obj: Obj | None,
        old: Obj | None,
        options: Obj | None = None,
        kind: tuple[str, str, str] | None = None,
    ) -> tuple[Obj | None, list[str]]:
        """The mutating or validating webhooks (admitting.py); raises the client's error on a denial."""
        return await admitting.admit(self.store, self.admission, phase, t, operation, obj, old, options, kind)

    # ---- create ------------------------------------------------------------------------------
    async def create(self, t: Target, body: Any, applied: bool = False) -> Result:
        """`applied`: the body is an apply's result, its managedFields already decided."""
        obj = decoding.decode(t, body)
        decode_warnings = decoding.unknown_fields(t, obj)
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
        admitting.check_namespace(self.store, t, md.get("name") or md.get("generateName", ""))
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
        # the Priority plugin sees the name the request gave (none for a generateName)
        priority.admit_pod(self.store, t, obj, None, "" if generated else md["name"])
        tolerationseconds.admit_pod(t, obj)
        self._default(t, obj, None)
        if not applied:
            managing.record(t, None, obj, self.clock(), await managing.views(t, self.convert, None, obj))
        mutated, warnings = await self.admit("mutating", t, "CREATE", obj, None)
        warnings = decode_warnings + warnings
        assert mutated is not None
        obj = self._default(t, mutated, None)
        if not t.rt.custom:
            builtins.prepare_builtin_create(t.rt.resource, obj)
        with self._allocating(t, obj, None):
            self._validate(t, obj, None)
            warnings += _strategy_warnings(t, obj, None)
            priority.validate_priority_class(self.store, t, obj, creating=True)
            _, more = await self.admit("validating", t, "CREATE", obj, None)
            if t.dry_run:
                return Result(201, obj, warnings + more)
            try:
                stored = self.store.create(t.rt.key, obj)
            except KeyError:
                raise errors.already_exists(t.rt.gr, md["name"]) from None
        return Result(201, stored, warnings + more)

    # ---- update / patch ----------------------------------------------------------------------
    async def update(self, t: Target, body: Any, patched: bool = False) -> Result:
        """A PUT, or (`patched`) a patch's result: only a PUT's body uid is a precondition."""
        obj = decoding.decode(t, body)
        decode_warnings = decoding.unknown_fields(t, obj)
        name = obj["metadata"].get("name")
        if name != t.name:
            raise errors.bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({t.name})"
            )
        old = self.current(t)
        uid, stored_uid = obj["metadata"].get("uid"), old["metadata"].get("uid", "")
        if uid and uid != stored_uid and not patched:
            raise meta.uid_precondition_failed(t.rt, t.namespace, t.name, str(uid), stored_uid)
        rv = obj["metadata"].get("resourceVersion") or None
        if rv is None and t.rt.custom:
            raise meta.unconditional_update_refused(t.rt, t.name)
        return await self._write(t, old, obj, rv, decode_warnings)

    async def patch(self, t: Target, content_type: str, body: Any) -> Result:
        if content_type.split(";")[0].strip() == APPLY:
            return await self._apply(t, body)
        applying.check_options(t, is_apply=False)
        for _attempt in range(PATCH_RETRIES):
            old = self.current(t)
            base = self.out(t, old)
            decoding.check_json_patch(t, content_type, body)
            patched = apply_patch(content_type, base, body, custom=t.rt.custom)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            obj = decoding.decode(t, patched)
            decode_warnings = decoding.unknown_fields(t, obj, patch=(content_type, body))
            if obj["metadata"].get("name") != t.name:
                raise errors.bad_request(
                    "metadata.name: Invalid value: the name of the object may not be patched"
                )
            rv = obj["metadata"].get("resourceVersion") or None
            if rv is not None and rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(t.rt.gr, t.name, errors.STALE)
            try:
                rv = old["metadata"]["resourceVersion"]
                return await self._write(t, old, obj, rv, decode_warnings, retryable=True)
            except _Retry:
                continue
        raise errors.conflict(t.rt.gr, t.name, errors.STALE)

    async def _apply(self, t: Target, body: Any) -> Result:
        """Server-side apply (verbs/applying.py): an apply to a missing object creates it, else
        the merged object is written as a patch's is, re-applied when the object changed."""
        applying.check_options(t, is_apply=True)
        config = applying.config_of(applying.config_target(t, self.convert), body)
        for _attempt in range(PATCH_RETRIES):
            old = self.store.get(t.rt.key, t.namespace if t.rt.namespaced else "", t.name)
            if old is None:
                if t.subresource:
                    raise errors.not_found(t.rt.gr, t.name)
                made = await applying.applied_converted(self.convert, t, None, config, self.clock())
                return await self.create(t, made, applied=True)
            obj = decoding.decode(
                t, await applying.applied_converted(self.convert, t, self.out(t, old), config, self.clock())
            )
            warnings = decoding.unknown_fields(t, obj)
            try:
                rv = old["metadata"]["resourceVersion"]
                return await self._write(t, old, obj, rv, warnings, retryable=True, applied=True)
            except _Retry:
                continue
        raise errors.conflict(t.rt.gr, t.name, errors.STALE)

    async def _write(
        self,
        t: Target,
        old: Obj,
        obj: Obj,
        expected_rv: str | None,
        decode_warnings: list[str],
        retryable: bool = False,
        applied: bool = False,
    ) -> Result:
        if expected_rv and expected_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(t.rt.gr, t.name, errors.STALE)
        if t.subresource == "status":
            new = copy.deepcopy(self.out(t, old))
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            if t.rt.key == "pods":
                podgeneration.preserve_observed_generation(new, old)
            if applied:
                new["metadata"]["managedFields"] = obj["metadata"].get("managedFields") or []
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
                found = ", ".join(go_quote(str(f)) for f in sorted(set(map(str, added))))  # Go's %#v
                raise errors.invalid(
                    t.rt.kind,
                    t.rt.group,
                    t.name,
                    [
                        Cause(
                            "FieldValueForbidden",
                            "Forbidden: no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers []string{{{found}}}",
                            "metadata.finalizers",
                        )
                    ],
                )
        self._default(t, new, old)
        if not applied:
            seen = await managing.views(t, self.convert, self.out(t, old), new)
            managing.record(t, old, new, self.clock(), seen)
        priority.admit_pod(self.store, t, new, old, t.name)
        tolerationseconds.admit_pod(t, new)
        mutated, warnings = await self.admit("mutating", t, "UPDATE", new, old)
        warnings = decode_warnings + warnings
        assert mutated is not None
        new = self._default(t, mutated, old)
        meta.bump_generation(new, old, t.rt)
        with self._allocating(t, new, old):
            self._validate(t, new, old)
            warnings += _strategy_warnings(t, new, old)
            priority.validate_priority_class(self.store, t, new, creating=False)
            _, more = await self.admit("validating", t, "UPDATE", new, old)
            warnings += more
            if meta.same_object(new, self.out(t, old)):
                return Result(200, old, warnings)  # a no-op update is not written (no new resourceVersion)
            if t.dry_run:
                return Result(200, new, warnings)
            rv = old["metadata"]["resourceVersion"] if retryable else expected_rv
            return Result(200, self.commit(t.rt, new, rv, retryable), warnings)

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


def _strategy_warnings(t: Target, obj: Obj, old: Obj | None) -> list[str]:
    """The kind's WarningsOnCreate/WarningsOnUpdate, after validation: a custom resource's
    newly added finalizers (objectmeta.finalizer_warnings)."""
    if not t.rt.custom or t.subresource:
        return []
    return objectmeta.finalizer_warnings(obj["metadata"], None if old is None else old["metadata"])


class _Retry(Exception):
    """The object changed between read and write of a patch: re-apply the patch."""


def _graceful_pending(rt: ResourceType, obj: Obj) -> bool:
    if rt.key == "namespaces":
        return bool((obj.get("spec") or {}).get("finalizers"))
    return rt.key == "pods" and bool(obj["metadata"].get("deletionGracePeriodSeconds"))
