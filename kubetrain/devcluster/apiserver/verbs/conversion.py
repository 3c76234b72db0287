"""CRD conversion webhooks, called as kube-apiserver calls them (apiextensions-apiserver's
webhookConverter): a custom resource whose CRD has `conversion.strategy: Webhook` is stored at
its storage version, and a request at another served version is converted at the boundary.

- Reads (get, list, watch, a write's response) convert the stored objects to the requested
  version: one ConversionReview (apiextensions.k8s.io/v1) per request or watch batch carrying
  every object not already at that version, in order.
- Writes (create, update, patch, and the status subresource) convert the body to the storage
  version before anything else; admission then sees the storage version (as with
  matchPolicy Equivalent and a webhook rule for the storage version — devcluster's one
  deviation: a rule naming only the requested version is not matched) with `requestKind` /
  `requestResource` naming the version the client used. A patch is applied to the object as
  the client sees it (converted to its version), then converted back; an apply is made at the
  client's version (verbs/managing.py `apply_converted`). managedFields are recorded at the
  client's version, each manager compared at its own (`managing.views`, with this converter).
- The answer is checked as kube-apiserver checks it: the response present, its uid the
  request's, `result.status` Success, as many objects as sent, each at the desired apiVersion
  and kind, and metadata unchanged but labels and annotations. Any failure — transport, a
  Failure result, a malformed answer — is a 500 InternalError `conversion webhook for
  <group/version, Kind=kind> failed: …`.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from kubetrain.devcluster.admission.client import WebhookClient
from kubetrain.devcluster.admission.review import CallError
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote
from kubetrain.devcluster.apiserver.request import decoding, duplicates
from kubetrain.devcluster.apiserver.request.patch import APPLY, apply_patch
from kubetrain.devcluster.apiserver.verbs import deletion, tables, watchstream
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Result, Target
from kubetrain.devcluster.apiserver.verbs.reads import ListQuery, Reader

TIMEOUT_SECONDS = 30
PATCH_RETRIES = 5


def converts(rt: ResourceType, version: str) -> bool:
    """Whether a request at `version` goes through the resource's conversion webhook."""
    return rt.conversion is not None and bool(rt.storage_version) and version != rt.storage_version


def _failed(rt: ResourceType, version: str, why: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"conversion webhook for {rt.api_version(version)}, Kind={rt.kind} failed: {why}",
    )


class Converter:
    def __init__(self, client: WebhookClient) -> None:
        self.client = client

    async def convert(self, rt: ResourceType, objs: list[Obj], version: str) -> list[Obj]:
        """`objs` at `version` (objects already there are not sent)."""
        desired = rt.api_version(version)
        todo = [i for i, o in enumerate(objs) if o.get("apiVersion") != desired]
        if not todo:
            return objs
        source = str(objs[todo[0]].get("apiVersion", "")).rpartition("/")[2]
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [objs[i] for i in todo]},
        }
        webhook = (rt.conversion or {}).get("webhook") or {}
        try:
            endpoint = self.client.endpoint(webhook.get("clientConfig") or {}, TIMEOUT_SECONDS)
            answer = await self.client.post(endpoint, review, TIMEOUT_SECONDS)
        except CallError as err:
            raise _failed(rt, source, str(err)) from None
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise _failed(rt, source, "conversion webhook response was absent")
        if response.get("uid") != uid:
            got = response.get("uid")
            raise _failed(
                rt,
                source,
                f"expected response.uid={go_quote(uid)}, got {go_quote(got if isinstance(got, str) else '')}",
            )
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise _failed(rt, source, str(result.get("message") or "conversion failed"))
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(todo):
            count = len(converted) if isinstance(converted, list) else 0
            raise _failed(rt, source, f"expected {len(todo)} converted objects, got {count}")
        out = list(objs)
        for i, new in zip(todo, converted, strict=True):
            _check(rt, source, objs[i], new, desired)
            out[i] = new
        return out

    async def one(self, rt: ResourceType, obj: Obj, version: str) -> Obj:
        return (await self.convert(rt, [obj], version))[0]


def _check(rt: ResourceType, source: str, old: Obj, new: Any, desired: str) -> None:
    if not isinstance(new, dict):
        raise _failed(rt, source, "a converted object is not an object")
    if new.get("apiVersion") != desired or new.get("kind") != rt.kind:
        raise _failed(
            rt,
            source,
            f"invalid converted object: expected {desired}, Kind={rt.kind}, "
            f"got {new.get('apiVersion')}, Kind={new.get('kind')}",
        )
    strip = ("labels", "annotations")
    before = {k: v for k, v in (old.get("metadata") or {}).items() if k not in strip}
    after = {k: v for k, v in (new.get("metadata") or {}).items() if k not in strip}
    if before != after:
        raise _failed(rt, source, "invalid metadata: only labels and annotations may be changed")


class HandlerContext(Protocol):
    api: ApiServer
    reader: Reader
    bookmark_interval: float
    streams: set[web.StreamResponse]

    async def _body(self, request: web.Request) -> Any: ...

    async def _patch_body(self, request: web.Request) -> Any: ...


async def serve(
    h: HandlerContext,
    converter: Converter,
    request: web.Request,
    t: Target,
    verb: str,
    q: Callable[[], ListQuery],
    delete_options: Callable[[Any], dict[str, Any]],
    respond: Callable[[Obj, int, list[str]], Awaitable[web.StreamResponse] | web.StreamResponse],
) -> web.StreamResponse:
    """A request at a version the resource converts to: the same request at the storage
    version, with the body and the answer converted."""
    rt, version = t.rt, t.version
    storage = Target(
        rt,
        rt.storage_version,
        t.namespace,
        t.name,
        t.subresource,
        t.dry_run,
        t.user,
        t.field_validation,
        version,
        field_manager=t.field_manager,
        user_agent=t.user_agent,
        force=t.force,
    )
    if verb in ("create", "update", "patch") and t.field_validation != "Ignore":
        storage.duplicates = duplicates.of_body(
            await request.read(), request.headers.get("Content-Type", "")
        )  # the body as the client sent it

    async def to_client(objs: list[Obj]) -> list[Obj]:
        return await converter.convert(rt, objs, version)

    async def to_storage(body: Any) -> Any:
        if not isinstance(body, dict):
            return body  # the API server's own decoding error follows
        obj = copy.deepcopy(body)
        obj.setdefault("apiVersion", t.api_version)
        obj.setdefault("kind", rt.kind)
        if obj["apiVersion"] != t.api_version or obj["kind"] != rt.kind:
            return obj  # refused by the decoding as at any version
        return await converter.one(rt, obj, rt.storage_version)

    if verb == "watch":
        return await watchstream.serve(
            request, h.api, h.reader, t, q(), h.bookmark_interval, h.streams, convert=to_client
        )
    if verb == "list":
        listed = h.reader.list_page(storage, q())
        listed["items"] = await to_client(listed["items"])
        listed["apiVersion"] = t.api_version
        if tables.wants_table(request.headers.get("Accept", "")):
            table = tables.table(t, listed["items"], listed["metadata"], request.query.get("includeObject"))
            return await _maybe(respond(table, 200, []))
        return await _maybe(respond(listed, 200, []))
    result: Result
    if verb == "get":
        obj = await converter.one(rt, h.api.current(storage), version)
        if tables.wants_table(request.headers.get("Accept", "")):
            md = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return await _maybe(
                respond(tables.table(t, [obj], md, request.query.get("includeObject")), 200, [])
            )
        return await _maybe(respond(obj, 200, []))
    if verb == "create":
        result = await h.api.create(storage, await to_storage(await h._body(request)))
    elif verb == "update":
        result = await h.api.update(storage, await to_storage(await h._body(request)))
    elif verb == "patch" and request.headers.get("Content-Type", "").split(";")[0].strip() == APPLY:
        # applied at the request's version, then converted (managing.apply_converted)
        result = await h.api.patch(storage, APPLY, await h._patch_body(request))
    elif verb == "patch":
        result = await _patch(h.api, converter, storage, version, request, await h._patch_body(request))
    elif verb == "delete":
        result = await deletion.delete(h.api, storage, delete_options(await h._body(request)))
    else:
        raise ApiError(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        )
    obj = result.obj
    if obj.get("kind") == rt.kind:
        obj = await converter.one(rt, obj, version)
    return await _maybe(respond(obj, result.code, result.warnings))


async def _patch(
    api: ApiServer, converter: Converter, storage: Target, version: str, request: web.Request, body: Any
) -> Result:
    """Apply the patch to the object as the client sees it, then write it at the storage
    version with the resourceVersion it was read at (retried when it changed meanwhile)."""
    content_type = request.headers.get("Content-Type", "")
    rt = storage.rt
    for _attempt in range(PATCH_RETRIES):
        old = api.current(storage)
        base = await converter.one(rt, old, version)
        decoding.check_json_patch(storage, content_type, body)
        patched = apply_patch(content_type, base, body, custom=True)
        if not isinstance(patched, dict):
            raise ApiError(400, "BadRequest", "the patch did not produce an object")
        rv = (patched.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {rt.key} "{storage.name}": '
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        new = await converter.one(rt, patched, rt.storage_version)
        new.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
        try:
            return await api.update(storage, new, patched=True)
        except ApiError as err:
            # Changed since it was read: apply the patch again to the newer object, as
            # kube-apiserver does. `rv` comes from `base` unless the patch set one, so it cannot
            # tell a precondition; one the client set is checked against the newer object above.
            if err.code != 409:
                raise
    raise ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.key} "{storage.name}": the object has been modified',
    )


async def _maybe(value: Any) -> web.StreamResponse:
    if isinstance(value, web.StreamResponse):
        return value
    result: web.StreamResponse = await value
    return result
