"""HTTP: kube-apiserver's REST paths on an aiohttp app, request accounting, faults, watch streams."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubetrain.devcluster.apiserver import (
    accessreviews,
    conversion,
    deletion,
    discovery,
    errors,
    impersonation,
    openapi,
    podlogs,
    rbac,
    subresources,
    tables,
    tokens,
    watchstream,
)
from kubetrain.devcluster.apiserver.accounting import RequestLog, RequestRecord
from kubetrain.devcluster.apiserver.core import ADMIN_USER, ApiServer, Result, Target
from kubetrain.devcluster.apiserver.errors import ApiError
from kubetrain.devcluster.apiserver.faults import FaultInjector
from kubetrain.devcluster.apiserver.meta import timestamp
from kubetrain.devcluster.apiserver.reads import ListQuery, Reader, predicate
from kubetrain.devcluster.apiserver.store import dumps

JSON = "application/json"
ADMIN = rbac.UserInfo(str(ADMIN_USER["username"]), tuple(ADMIN_USER["groups"]))
USER_KEY = web.RequestKey("devcluster.user", rbac.UserInfo)  # who the request authenticated as


def _json(obj: Any, code: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=code, content_type=JSON, headers=headers)


def _error(exc: ApiError) -> web.Response:
    return web.Response(body=exc.body(), status=exc.code, content_type=JSON, headers=exc.headers or None)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


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
        self.faults = faults
        self.requests = requests
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.streams: set[web.StreamResponse] = set()
        # Bearer tokens besides the admin token -> who they authenticate as (ServiceAccount tokens).
        self.identities: dict[str, rbac.UserInfo] = {}
        self.authorizer: rbac.Authorizer | None = None  # None: every request is allowed
        self.denials: list[rbac.Denial] = []
        self.tokens = tokens.TokenIssuer(api.store, api.clock)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        return app

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            user = impersonation.impersonated(
                request.headers, self._authenticate(request), self.authorizer, self._denied
            )
            request[USER_KEY] = user
            if self.authorizer is not None:
                self._authorize(request, user)
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
                        raise errors.ApiError(
                            404, "NotFound", "the server could not find the requested resource"
                        )
                    return _json(doc)
                group, version, rest = parts[1], parts[2], parts[3:]
            if not rest:
                doc = discovery.resource_list(self.api.registry, group, version)
                if doc is None:
                    raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(doc)
            return await self._resource(request, group, version, rest)
        except ApiError as exc:
            return _error(exc)

    def _authenticate(self, request: web.Request) -> rbac.UserInfo:
        header = request.headers.get("Authorization", "")
        if not header:
            return rbac.ANONYMOUS
        if not header.startswith("Bearer ") or not self.token or header[7:] == self.token:
            return ADMIN
        if tokens.looks_like_jwt(header[7:]):
            bound = self.tokens.authenticate(header[7:], [])
            if isinstance(bound, str):
                raise ApiError(401, "Unauthorized", "Unauthorized")
            return bound.user
        user = self.identities.get(header[7:])
        if user is None or not self._account_exists(user):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return user

    def review_token(self, token: str, audiences: list[str]) -> tokens.Authenticated | str:
        """A TokenReview's answer: who `token` is for `audiences`, or why it does not authenticate."""
        if tokens.looks_like_jwt(token):
            return self.tokens.authenticate(token, audiences)
        user = ADMIN if self.token and token == self.token else self.identities.get(token)
        if user is None or not self._account_exists(user):
            return "unknown token"
        if audiences and accessreviews.API_AUDIENCE not in audiences:
            return (
                f'token audiences ["{accessreviews.API_AUDIENCE}"] is invalid for the target audiences '
                + json.dumps(audiences)
            )
        return tokens.Authenticated(user, (accessreviews.API_AUDIENCE,))

    def _account_exists(self, user: rbac.UserInfo) -> bool:
        """A ServiceAccount token authenticates only while its ServiceAccount exists (as in kube)."""
        if not user.username.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
            return True
        namespace, _, name = user.username[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")
        return self.api.store.get("serviceaccounts", namespace, name) is not None

    def _denied(self, user: rbac.UserInfo, info: rbac.RequestInfo, error: ApiError) -> None:
        self.denials.append(rbac.denial(user, info, error))

    def _authorize(self, request: web.Request, user: rbac.UserInfo) -> None:
        assert self.authorizer is not None
        info = rbac.request_info(request.method, request.path, request.query)
        decision = self.authorizer.authorize(user, info)
        if decision.allowed:
            return
        error = rbac.forbidden(user, info, decision.reason)
        self.denials.append(rbac.denial(user, info, error))
        if info.resource_request:
            resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
            self.requests.add(
                RequestRecord(
                    info.verb,
                    resource,
                    info.api_group,
                    info.namespace,
                    info.name,
                    request.headers.get("User-Agent", ""),
                    403,
                    user.username,
                )
            )
        raise error

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
        raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")

    # ---- resource requests -------------------------------------------------------------------
    def _target(self, request: web.Request, group: str, version: str, rest: list[str]) -> Target:
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = self.api.registry.lookup(group, version, rest[0])
        if rt is None:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in rt.subresources:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace and not rt.namespaced:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        if rt.namespaced and name and not namespace:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        dry = request.query.getall("dryRun", [])
        if any(d != "All" for d in dry):
            raise errors.bad_request(f'Invalid dry run value: {dry!r}: supported values: "All"')
        identity = request.get(USER_KEY, ADMIN)
        user = dict(ADMIN_USER) if identity is ADMIN else identity.to_dict()
        validation = request.query.get("fieldValidation", "Warn")
        if validation not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(f"fieldValidation parameter unsupported: {validation}")
        return Target(
            rt, version, namespace, name, sub, dry_run=bool(dry), user=user, field_validation=validation
        )

    @staticmethod
    def _verb(method: str, t: Target, query: Any) -> str:
        if method == "GET":
            if t.name:
                return "get"
            return "watch" if _truthy(query.get("watch")) else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if t.name else "deletecollection"
        raise errors.method_not_allowed(method)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            ctype = request.headers.get("Content-Type", "")
            if "yaml" in ctype:
                import yaml

                from kubetrain.api.manifests import load

                try:
                    return load(raw)
                except yaml.YAMLError as exc:
                    raise errors.bad_request(f"error decoding YAML: {exc}") from None
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {raw[:80]!r}") from None

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        t = self._target(request, group, version, rest)
        verb = self._verb(request.method, t, request.query)
        resource = t.rt.resource + (f"/{t.subresource}" if t.subresource else "")
        identity = request.get(USER_KEY, ADMIN)
        record = RequestRecord(
            verb,
            resource,
            group,
            t.namespace,
            t.name,
            request.headers.get("User-Agent", ""),
            user=identity.username,
        )
        self.requests.add(record)
        await self.faults.check(verb, resource, group, t.namespace, t.name)
        if t.subresource == "log":
            if verb != "get":
                raise errors.method_not_allowed(verb)
            return await podlogs.serve(request, self.api, t)
        if verb not in t.rt.verbs and not t.subresource:
            raise errors.method_not_allowed(verb)
        if conversion.converts(t.rt, t.version) and t.subresource in ("", "status"):
            return await conversion.serve(
                self,
                self.converter,
                request,
                t,
                verb,
                lambda: self._list_query(request),
                lambda body: self._delete_options(request, body),
                lambda obj, code, warnings: _json(
                    obj, code, {"Warning": ", ".join(_warning(w) for w in warnings)} if warnings else None
                ),
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
        headers = {"Warning": ", ".join(_warning(w) for w in result.warnings)} if result.warnings else None
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
        sub = t.subresource
        if sub == "binding" and verb == "create":
            return await subresources.bind(api, t, await self._body(request))
        if t.rt.key == accessreviews.TOKEN_REVIEWS_KEY and verb == "create":
            return accessreviews.token_review(t, await self._body(request), self.review_token)
        if t.rt.key == "serviceaccounts" and sub == "token" and verb == "create":
            body = await self._body(request)
            return Result(201, self.tokens.token_request(t.namespace, t.name, body))
        if t.rt.key == accessreviews.SUBJECT_ACCESS_REVIEWS_KEY and verb == "create":
            return accessreviews.subject_access_review(t, await self._body(request), self.authorizer)
        if t.rt.key == accessreviews.SELF_SUBJECT_ACCESS_REVIEWS_KEY and verb == "create":
            return accessreviews.self_subject_access_review(
                t, await self._body(request), request[USER_KEY], self.authorizer
            )
        if t.rt.key == accessreviews.SELF_SUBJECT_REVIEWS_KEY and verb == "create":
            return accessreviews.self_subject_review(
                t, await self._body(request), request[USER_KEY], timestamp(api.clock())
            )
        if t.rt.key == "bindings" and verb == "create":
            body = await self._body(request)
            pods = api.registry.by_key("pods")
            assert pods is not None
            name = ((body or {}).get("metadata") or {}).get("name", "")
            pod_target = Target(pods, "v1", t.namespace, name, "binding", t.dry_run, t.user)
            return await subresources.bind(api, pod_target, body)
        if sub == "eviction" and verb == "create":
            return await subresources.evict(api, t, await self._body(request))
        if sub == "scale":
            return await subresources.scale(
                api, t, request.method, request.headers.get("Content-Type", ""), await self._body(request)
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
            return await api.patch(t, request.headers.get("Content-Type", ""), await self._body(request))
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
        q = request.query
        try:
            limit = int(q.get("limit", "0") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {q.get('limit')}") from None
        return ListQuery(
            q.get("labelSelector", ""),
            q.get("fieldSelector", ""),
            limit,
            q.get("continue", ""),
            q.get("resourceVersion", ""),
            q.get("resourceVersionMatch", ""),
        )

    @staticmethod
    def _delete_options(request: web.Request, body: Any) -> dict[str, Any]:
        options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
        q = request.query
        if "gracePeriodSeconds" in q:
            options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
        if "propagationPolicy" in q:
            options["propagationPolicy"] = q["propagationPolicy"]
        if "orphanDependents" in q:
            options["orphanDependents"] = _truthy(q["orphanDependents"])
        return options


def _warning(text: str) -> str:
    return '299 - "' + text.replace('"', '\\"') + '"'
