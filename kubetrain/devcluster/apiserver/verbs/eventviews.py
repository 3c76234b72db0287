"""events.k8s.io/v1 Events served as the view of the core Events they are (kinds/eventsv1.py):
every request through events.k8s.io/v1 is the same request on the core/v1 Events' storage, with
the body converted to core/v1 on the way in and the answer converted back, as kube-apiserver's
events.k8s.io REST storage is the core event registry behind a conversion.

- Reads: get, list (tables included: `kubectl get events.v1.events.k8s.io`) and watch read the
  core Events and convert each; a watch is the core Events' watch, so one write is one event on
  both views at one resourceVersion. Field selectors are mapped to the core labels
  (`eventsv1.core_field_selector`, unknown labels refused).
- Writes: the body is decoded as an events.k8s.io/v1 Event first (its apiVersion, kind and
  namespace checked; fields events.k8s.io/v1 does not have dropped and reported per
  fieldValidation), then written as core/v1 with events.k8s.io/v1's validation (`Target.via`;
  eventrules.py). A patch applies to the events.k8s.io/v1 form of the stored Event and is
  written back with the resourceVersion it was read at (again on a conflict, as a patch is).
- Errors name the resource as the request did (`events.events.k8s.io "x" not found`); a
  refused Event is `Event "x" is invalid` as upstream's (the stored kind's group is core).

**Limits:** admission webhooks see the core/v1 Event (`requestKind` too), not the
events.k8s.io/v1 one a webhook matching events.k8s.io would be sent; server-side apply through
events.k8s.io/v1 records its managedFields against the core/v1 fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import eventsv1
from kubetrain.devcluster.apiserver.request import decoding, duplicates
from kubetrain.devcluster.apiserver.request.patch import APPLY, apply_patch
from kubetrain.devcluster.apiserver.verbs import deletion, tables, watchstream
from kubetrain.devcluster.apiserver.verbs.conversion import HandlerContext
from kubetrain.devcluster.apiserver.verbs.core import PATCH_RETRIES, ApiServer, Result, Target
from kubetrain.devcluster.apiserver.verbs.reads import EVENTS_KEY, ListQuery, predicate

VIEW_KEY = "events.events.k8s.io"
_NAMED = ("NotFound", "AlreadyExists", "Conflict")


def serves(t: Target) -> bool:
    """Whether the request is one on the events.k8s.io/v1 view."""
    return t.rt.key == VIEW_KEY and not t.subresource


def stored(api: ApiServer, t: Target) -> Target:
    """The core/v1 request an events.k8s.io/v1 request is."""
    core = api.registry.by_key(EVENTS_KEY)
    assert core is not None
    return dataclasses.replace(
        t, rt=core, version=eventsv1.CORE_V1, field_validation="Ignore", via=t.api_version
    )


async def serve(
    h: HandlerContext,
    request: web.Request,
    t: Target,
    verb: str,
    q: Callable[[], ListQuery],
    delete_options: Callable[[Any], dict[str, Any]],
    respond: Callable[[Obj, int, list[str]], web.StreamResponse],
) -> web.StreamResponse:
    try:
        return await _serve(h, request, t, verb, q, delete_options, respond)
    except ApiError as err:
        raise as_view(err, t) from None


def as_view(err: ApiError, t: Target) -> ApiError:
    """An error about the stored Event as one about the events.k8s.io/v1 Event it was asked as."""
    details = err.details or {}
    if err.reason not in _NAMED or details.get("kind") != EVENTS_KEY or details.get("group"):
        return err
    name = str(details.get("name") or "")
    message = err.message.replace(f'{EVENTS_KEY} "{name}"', f'{t.rt.key} "{name}"', 1)
    return dataclasses.replace(err, message=message, details={**details, "group": t.rt.group})


def _view_query(query: ListQuery) -> ListQuery:
    return dataclasses.replace(query, field_selector=eventsv1.core_field_selector(query.field_selector))


async def _serve(
    h: HandlerContext,
    request: web.Request,
    t: Target,
    verb: str,
    q: Callable[[], ListQuery],
    delete_options: Callable[[Any], dict[str, Any]],
    respond: Callable[[Obj, int, list[str]], web.StreamResponse],
) -> web.StreamResponse:
    api, store = h.api, stored(h.api, t)
    accept = request.headers.get("Accept", "")

    async def convert(objs: list[Obj]) -> list[Obj]:
        return [eventsv1.to_v1(o) for o in objs]

    if verb == "watch":
        query = _view_query(q())
        return await watchstream.serve(
            request, api, h.reader, store, query, h.bookmark_interval, h.streams, convert=convert, view=t
        )
    if verb == "list":
        listed = h.reader.list_page(store, _view_query(q()))
        listed.update(apiVersion=t.api_version, kind=t.rt.list_kind)
        listed["items"] = [eventsv1.to_v1(o) for o in listed["items"]]
        if tables.wants_table(accept):
            return respond(
                tables.table(t, listed["items"], listed["metadata"], request.query.get("includeObject")),
                200,
                [],
            )
        return respond(listed, 200, [])
    if verb == "get":
        obj = eventsv1.to_v1(api.current(store))
        if tables.wants_table(accept):
            md = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return respond(tables.table(t, [obj], md, request.query.get("includeObject")), 200, [])
        return respond(obj, 200, [])
    if verb in ("create", "update", "patch") and t.field_validation != "Ignore":
        t = dataclasses.replace(
            t, duplicates=duplicates.of_body(await request.read(), request.headers.get("Content-Type", ""))
        )
    result: Result
    if verb in ("create", "update"):
        obj, warnings = _decoded(t, await h._body(request))
        write = api.create if verb == "create" else api.update
        result = await write(store, eventsv1.to_core(obj))
        result.warnings = warnings + result.warnings
    elif verb == "patch":
        result = await _patch(
            api, t, store, request.headers.get("Content-Type", ""), await h._patch_body(request)
        )
    elif verb == "delete":
        result = await deletion.delete(api, store, delete_options(await h._body(request)))
    elif verb == "deletecollection":
        query = _view_query(q())
        items = await deletion.delete_collection(
            api, store, delete_options(await h._body(request)), predicate(store, query)
        )
        body = {
            "kind": t.rt.list_kind,
            "apiVersion": t.api_version,
            "metadata": {"resourceVersion": str(api.store.rv)},
            "items": [eventsv1.to_v1(o) for o in items],
        }
        result = Result(200, body)
    else:
        raise errors.method_not_allowed(verb)
    return respond(_answer(t, result.obj), result.code, result.warnings)


def _decoded(t: Target, body: Any, patch: tuple[str, Any] | None = None) -> tuple[Obj, list[str]]:
    """The body as an events.k8s.io/v1 Event, its unknown fields dropped, and the warnings."""
    obj = decoding.decode(t, body)
    return obj, decoding.unknown_fields(t, obj, patch=patch)


def _answer(t: Target, obj: Obj) -> Obj:
    """A write's answer: the Event at events.k8s.io/v1, or a Status naming the view's group."""
    if obj.get("kind") == eventsv1.KIND:
        return eventsv1.to_v1(obj)
    details = obj.get("details")
    if obj.get("kind") == "Status" and isinstance(details, dict) and details.get("kind") == EVENTS_KEY:
        return {**obj, "details": {**details, "group": t.rt.group}}
    return obj


async def _patch(api: ApiServer, t: Target, store: Target, content_type: str, body: Any) -> Result:
    """Apply the patch to the events.k8s.io/v1 form of the stored Event and write it as core/v1
    with the resourceVersion it was read at (again from the newer Event on a conflict)."""
    if content_type.split(";")[0].strip() == APPLY:
        config, warnings = _decoded(t, body)
        result = await api.patch(store, APPLY, eventsv1.to_core(config))
        result.warnings = warnings + result.warnings
        return result
    for _attempt in range(PATCH_RETRIES):
        old = api.current(store)
        decoding.check_json_patch(t, content_type, body)
        patched = apply_patch(content_type, eventsv1.to_v1(old), body, custom=False)
        obj, warnings = _decoded(t, patched, patch=(content_type, body))
        if obj["metadata"].get("name") != t.name:
            raise errors.bad_request(
                "metadata.name: Invalid value: the name of the object may not be patched"
            )
        rv = obj["metadata"].get("resourceVersion") or None
        current = old["metadata"]["resourceVersion"]
        if rv is not None and rv != current:
            raise errors.conflict(store.rt.gr, t.name, errors.STALE)
        new = eventsv1.to_core(obj)
        new["metadata"]["resourceVersion"] = current
        try:
            result = await api.update(store, new, patched=True)
        except ApiError as err:
            if err.code != 409 or err.reason != "Conflict":
                raise
            continue  # changed since it was read: the patch again, on the newer Event
        result.warnings = warnings + result.warnings
        return result
    raise errors.conflict(store.rt.gr, t.name, errors.STALE)
