"""HTTP: kube-apiserver's REST paths on an aiohttp app, request accounting, faults, watch streams.
Who is asking is authn.py; what the request asks for (target, verb, query, body) is
requestparse.py; this module routes and answers."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from aiohttp import web

from kubetrain.devcluster.apiserver.auth import accessreviews, impersonation, rbac
from kubetrain.devcluster.apiserver.auth.authn import ADMIN, Authentication
from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.endpoints import discovery, openapi
from kubetrain.devcluster.apiserver.endpoints import requestparse as rp
from kubetrain.devcluster.apiserver.harness.accounting import RequestLog, RequestRecord
from kubetrain.devcluster.apiserver.harness.faults import FaultInjector
from kubetrain.devcluster.apiserver.kinds.meta import timestamp
from kubetrain.devcluster.apiserver.request import decoding, duplicates
from kubetrain.devcluster.apiserver.request.patch import EMPTY, JSON_WHITESPACE, check_media_type
from kubetrain.devcluster.apiserver.storage.store import dumps
from kubetrain.devcluster.apiserver.verbs import (
    conversion,
    deletion,
    eventviews,
    podlogs,
    subresources,
    tables,
    watchstream,
)
from kubetrain.devcluster.apiserver.verbs.core import ADMIN_USER, ApiServer, Result, Target
from kubetrain.devcluster.apiserver.verbs.reads import ListQuery, Reader, predicate

JSON = "application/json"
USER_KEY = web.RequestKey("devcluster.user", rbac.UserInfo)  # who the request authenticated as


def _json(obj: Any, code: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=code, content_type=JSON, headers=headers)


def _error(exc: ApiError) -> web.Response:
    return web.Response(body=exc.body(), status=exc.code, content_type=JSON, headers=exc.headers or None)


class Handlers:
    def __init__(
        self,
        api: ApiServer,
        faults: FaultInjector,
        requests: RequestLog,
        token: str | None,
        bookmark_interval: float,
        server_address: str = "",
    ) -> None:
        self.api = api
        self.reader = Reader(api)
        self.converter = conversion.Converter(api.admission.client)
        api.convert = self.converter.convert
        self.faults = faults
        self.requests = requests
        self.auth = Authentication(api.store, api.clock, token)
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.streams: set[web.StreamResponse] = set()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        return app

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            auth = self.auth
            user = impersonation.impersonated(
                request.headers, auth.authenticate(request.headers), auth.authorizer, auth.denied
            )
            request[USER_KEY] = user
            auth.authorize(
                user,
                request.method,
                request.path,
                request.query,
                request.headers.get("User-Agent", ""),
                self.requests,
            )
            parts = [p for p in request.path.split("/") if p]
            if not parts or parts[0] not in ("api", "apis"):
                return self._misc(request, parts)
            if parts[0] == "api":
                if len(parts) == 1:
                    return _json(discovery.api_versions(self.server_address or request.host))
                group, version, rest = "", parts[1], parts[2:]
            else:
                if len(parts) == 1:
                    return _json(discovery.api_group_list(self.api.registry))
                if len(parts) == 2:
                    doc = discovery.api_group(self.api.registry, parts[1])
                    if doc is None:
                        raise rp.not_found()
                    return _json(doc)
                group, version, rest = parts[1], parts[2], parts[3:]
            if not rest:
                doc = discovery.resource_list(self.api.registry, group, version)
                if doc is None:
                    raise rp.not_found()
                return _json(doc)
            return await self._resource(request, group, version, rest)
        except ApiError as exc:
            return _error(exc)

    def _misc(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        path = "/".join(parts)
        if path == "version":
            return _json(discovery.VERSION)
        if path in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if path == "openapi/v3":
            return _json(openapi.index(self.api.registry))
        if path.startswith("openapi/v3/"):
            gv = parts[2:]
            doc = None
            if len(gv) == 2 and gv[0] == "api":
                doc = openapi.group_version_document(self.api.registry, "", gv[1])
            elif len(gv) == 3 and gv[0] == "apis":
                doc = openapi.group_version_document(self.api.registry, gv[1], gv[2])
            if doc is not None:
                return _json(doc)
        raise rp.not_found()

    # ---- resource requests -------------------------------------------------------------------
    def _target(self, request: web.Request, group: str, version: str, rest: list[str]) -> Target:
        identity = request.get(USER_KEY, ADMIN)
        user = dict(ADMIN_USER) if identity is ADMIN else identity.to_dict()
        return rp.target(
            rest,
            group,
            version,
            self.api.registry,
            request.query,
            user,
            request.headers.get("User-Agent", ""),
        )

    async def _review(self, request: web.Request, t: Target, kind: tuple[str, str, str]) -> Result:
        """Create a review or a TokenRequest: nothing is stored, but the body is decoded first as
        create.go `createHandler` decodes every body (unknown and duplicate fields reported or
        refused per fieldValidation, unknown ones dropped from the answer)."""
        body = await self._body(request)
        warnings = decoding.unknown_fields(t, body, kind=kind) if isinstance(body, dict) else []
        key = t.rt.key
        if key == accessreviews.TOKEN_REVIEWS_KEY:
            result = accessreviews.token_review(t, body, self.auth.review_token)
        elif key == accessreviews.SUBJECT_ACCESS_REVIEWS_KEY:
            result = accessreviews.subject_access_review(t, body, self.auth.authorizer)
        elif key == accessreviews.SELF_SUBJECT_ACCESS_REVIEWS_KEY:
            result = accessreviews.self_subject_access_review(
                t, body, request[USER_KEY], self.auth.authorizer
            )
        elif key == accessreviews.SELF_SUBJECT_REVIEWS_KEY:
            now = timestamp(self.api.clock())
            result = accessreviews.self_subject_review(t, body, request[USER_KEY], now)
        else:
            result = Result(201, self.auth.tokens.token_request(t.namespace, t.name, body))
        result.warnings = [*warnings, *result.warnings]
        return result

    async def _body(self, request: web.Request) -> Any:
        return rp.decode_body(await request.read(), request.headers.get("Content-Type", ""))

    async def _patch_body(self, request: web.Request) -> Any:
        """A PATCH body, `patch.EMPTY` when there is no JSON value in it."""
        raw = await request.read()
        return EMPTY if not raw.strip(JSON_WHITESPACE) else await self._body(request)

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = self._target(request, group, version, rest)
        verb = rp.verb(request.method, t, request.query)
        resource = t.rt.resource + (f"/{t.subresource}" if t.subresource else "")
        identity = request.get(USER_KEY, ADMIN)
        record = RequestRecord(  # repeated strings interned: the log keeps many records
            verb,
            sys.intern(resource),
            sys.intern(group),
            sys.intern(t.namespace),
            t.name,
            sys.intern(request.headers.get("User-Agent", "")),
            user=sys.intern(identity.username),
        )
        self.requests.add(record)
        await self.faults.check(verb, resource, group, t.namespace, t.name)
        if t.subresource == "log":
            if verb != "get":
                raise errors.method_not_allowed(verb)
            return await podlogs.serve(request, self.api, t)
        if verb not in t.rt.verbs and not t.subresource:
            raise errors.method_not_allowed(verb)
        if verb == "patch":
            check_media_type(request.headers.get("Content-Type", ""), custom=t.rt.custom)
        if eventviews.serves(t):
            return await eventviews.serve(
                self,
                request,
                t,
                verb,
                lambda: self._list_query(request),
                lambda body: self._delete_options(request, body),
                lambda obj, code, warnings: _json(obj, code, rp.warning_header(warnings)),
            )
        if conversion.converts(t.rt, t.version) and t.subresource in ("", "status"):
            return await conversion.serve(
                self,
                self.converter,
                request,
                t,
                verb,
                lambda: self._list_query(request),
                lambda body: self._delete_options(request, body),
                lambda obj, code, warnings: _json(obj, code, rp.warning_header(warnings)),
            )
        if verb == "watch":
            q = self._list_query(request)
            return await watchstream.serve(
                request, self.api, self.reader, t, q, self.bookmark_interval, self.streams
            )
        if verb == "list":
            q = self._list_query(request)
            listed = self.reader.list_page(t, q)
            if tables.wants_table(request.headers.get("Accept", "")):
                return _json(
                    tables.table(t, listed["items"], listed["metadata"], request.query.get("includeObject"))
                )
            return _json(listed)
        result = await self._single(request, t, verb)
        headers = rp.warning_header(result.warnings)
        if verb == "get" and not t.subresource and tables.wants_table(request.headers.get("Accept", "")):
            return _json(
                tables.table(
                    t,
                    [result.obj],
                    {"resourceVersion": result.obj["metadata"].get("resourceVersion", "")},
                    request.query.get("includeObject"),
                ),
                headers=headers,
            )
        return _json(result.obj, result.code, headers)

    async def _single(self, request: web.Request, t: Target, verb: str) -> Result:
        api = self.api
        if verb in ("create", "update", "patch") and t.field_validation != "Ignore":
            t = dataclasses.replace(
                t,
                duplicates=duplicates.of_body(await request.read(), request.headers.get("Content-Type", "")),
            )
        sub = t.subresource
        if sub == "binding" and verb == "create":
            return await subresources.bind(api, t, await self._body(request))
        review = accessreviews.body_kind(t) if verb == "create" else None
        if review is not None:
            return await self._review(request, t, review)
        if t.rt.key == "bindings" and verb == "create":
            body = await self._body(request)
            pods = api.registry.by_key("pods")
            assert pods is not None
            name = ((body or {}).get("metadata") or {}).get("name", "")
            pod_target = Target(
                pods,
                "v1",
                t.namespace,
                name,
                "binding",
                t.dry_run,
                t.user,
                t.field_validation,
                duplicates=t.duplicates,
            )
            return await subresources.bind(api, pod_target, body, admitted_as=t)
        if sub == "eviction" and verb == "create":
            return await subresources.evict(api, t, await self._body(request))
        if sub == "scale":
            return await subresources.scale(
                api,
                t,
                request.method,
                request.headers.get("Content-Type", ""),
                await (self._patch_body if request.method == "PATCH" else self._body)(request),
            )
        if sub in ("binding", "eviction") or (sub and verb in ("create", "delete")):
            raise errors.method_not_allowed(verb)
        if verb == "get":
            return Result(200, api.out(t, api.current(t)))
        if verb == "create":
            return await api.create(t, await self._body(request))
        if verb == "update":
            return await api.update(t, await self._body(request))
        if verb == "patch":
            body = await self._patch_body(request)
            return await api.patch(t, request.headers.get("Content-Type", ""), body)
        if verb == "delete":
            return await deletion.delete(api, t, self._delete_options(request, await self._body(request)))
        if verb == "deletecollection":
            q = self._list_query(request)
            items = await deletion.delete_collection(
                api, t, self._delete_options(request, await self._body(request)), predicate(t, q)
            )
            return Result(
                200,
                {
                    "kind": t.rt.list_kind,
                    "apiVersion": t.api_version,
                    "metadata": {"resourceVersion": str(api.store.rv)},
                    "items": items,
                },
            )
        raise errors.method_not_allowed(verb)

    @staticmethod
    def _list_query(request: web.Request) -> ListQuery:
        return rp.list_query(request.query)

    @staticmethod
    def _delete_options(request: web.Request, body: Any) -> dict[str, Any]:
        return rp.delete_options(request.query, body)
