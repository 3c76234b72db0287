"""The dashboard's actions (POST): suspend, resume, delete, submit from YAML, sign in and out.

Each is made with the user's credentials; each form carries the user's CSRF token (and a
cross-origin `Origin` is refused), so another site cannot make a signed-in browser act.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from kubetrain.dashboard.pages import job_ref, resolve_kind
from kubetrain.dashboard.views import trainjob
from kubetrain.dashboard.views.auth import SESSION_COOKIE, SESSION_SECONDS, TOKEN, Credentials, bearer_token
from kubetrain.dashboard.views.submit import FieldError, field_errors, parse_manifest
from kubetrain.dashboard.web import CREDS, creds, dashboard, posted_form, render, user_api
from kubetrain.kube.client import ApiError

LOGIN_NONCE_COOKIE = "kubetrain_login"


def same_origin(request: web.Request) -> bool:
    """A browser's `Origin` (when sent) must be this dashboard's own."""
    origin = request.headers.get("Origin")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.host


async def checked_form(request: web.Request) -> dict[str, str]:
    form = await posted_form(request)
    if not same_origin(request):
        raise web.HTTPForbidden(text="cross-origin form refused")
    if not dashboard(request).sessions.csrf_ok(creds(request), form.get("csrf", "")):
        raise web.HTTPForbidden(text="missing or wrong CSRF token: reload the page and try again")
    return form


async def _set_suspend(request: web.Request, suspend: bool) -> web.StreamResponse:
    await checked_form(request)
    kind = resolve_kind(request)
    ns, name = request.match_info["namespace"], request.match_info["name"]
    try:
        patch = (
            trainjob.suspend_patch(suspend)
            if trainjob.is_trainjob_kind(kind.group, kind.kind)
            else {"spec": {"runPolicy": {"suspend": suspend}}}
        )
        await user_api(request).patch(job_ref(kind), ns, name, patch)
    except ApiError as err:
        if err.status == 401:
            raise
        return render(
            request,
            "error.html",
            status=err.status or 502,
            title=f"{'Suspend' if suspend else 'Resume'} {ns}/{name}",
            message=err.message,
        )
    raise web.HTTPSeeOther(dashboard(request).job_url(kind, ns, name))


async def suspend(request: web.Request) -> web.StreamResponse:
    return await _set_suspend(request, True)


async def resume(request: web.Request) -> web.StreamResponse:
    return await _set_suspend(request, False)


async def confirm_delete(request: web.Request) -> web.Response:
    kind = resolve_kind(request)
    ns, name = request.match_info["namespace"], request.match_info["name"]
    try:
        job = await user_api(request).get(job_ref(kind), ns, name)
    except ApiError as err:
        if err.status == 401:
            raise
        return render(
            request, "error.html", status=err.status or 502, title=f"Delete {ns}/{name}", message=err.message
        )
    return render(
        request, "confirm.html", kind=kind, namespace=ns, name=name, uid=job["metadata"].get("uid", "")
    )


async def delete(request: web.Request) -> web.StreamResponse:
    form = await checked_form(request)
    kind = resolve_kind(request)
    ns, name = request.match_info["namespace"], request.match_info["name"]
    if form.get("confirm") != name:
        return render(
            request,
            "confirm.html",
            status=400,
            kind=kind,
            namespace=ns,
            name=name,
            uid=form.get("uid", ""),
            error=f"type the job's name, {name}, to confirm",
        )
    try:
        await user_api(request).delete(
            job_ref(kind),
            ns,
            name,
            propagation_policy="Background",
            preconditions={"uid": form["uid"]} if form.get("uid") else None,
        )
    except ApiError as err:
        if err.status == 401:
            raise
        return render(
            request, "error.html", status=err.status or 502, title=f"Delete {ns}/{name}", message=err.message
        )
    raise web.HTTPSeeOther(f"/?namespace={ns}")


async def submit_form(request: web.Request) -> web.Response:
    return render(
        request,
        "submit.html",
        text="",
        namespace=request.query.get("namespace", "default"),
        errors=[],
        warnings=[],
        checked=False,
    )


async def submit(request: web.Request) -> web.StreamResponse:
    form = await checked_form(request)
    dash = dashboard(request)
    text = form.get("manifest", "")
    namespace = form.get("namespace", "").strip() or "default"
    doc, kind, errors = parse_manifest(text, dash.kinds)
    warnings: list[str] = []
    context: dict[str, Any] = {"text": text, "namespace": namespace, "warnings": warnings, "checked": False}
    if doc is None or kind is None:
        return render(request, "submit.html", status=422, errors=errors, **context)
    meta = doc["metadata"]
    namespace = str(meta.get("namespace") or namespace)
    meta["namespace"] = namespace
    context["namespace"] = namespace
    api = user_api(request)
    path = job_ref(kind).path(namespace)
    try:
        await api.request(
            "create",
            "POST",
            path,
            query={"dryRun": "All", "fieldValidation": "Strict"},
            body=doc,
            warnings=warnings,
        )
        if form.get("action") != "create":
            return render(request, "submit.html", errors=[], **{**context, "checked": True})
        created = await api.request("create", "POST", path, query={"fieldValidation": "Strict"}, body=doc)
    except ApiError as err:
        if err.status == 401:
            raise
        errors = field_errors(err.body, err.message) or [FieldError("", str(err))]
        return render(request, "submit.html", status=422, errors=errors, **context)
    raise web.HTTPSeeOther(dash.job_url(kind, namespace, str(created["metadata"]["name"])))


async def login_form(request: web.Request, error: str = "", status: int = 200) -> web.Response:
    dash = dashboard(request)
    if dash.config.auth_mode != TOKEN:
        return render(
            request,
            "error.html",
            status=401,
            title="Not signed in",
            message="Users sign in through the authenticating proxy; it forwarded no identity.",
        )
    nonce = request.cookies.get(LOGIN_NONCE_COOKIE) or secrets.token_urlsafe(16)
    response = render(
        request, "login.html", status=status, error=error, login_csrf=dash.sessions.login_csrf_token(nonce)
    )
    response.set_cookie(
        LOGIN_NONCE_COOKIE, nonce, httponly=True, samesite="Strict", secure=dash.config.tls, path="/login"
    )
    return response


async def login(request: web.Request) -> web.StreamResponse:
    dash = dashboard(request)
    form = await posted_form(request)
    if dash.config.auth_mode != TOKEN:
        raise web.HTTPNotFound()
    if not same_origin(request) or not dash.sessions.login_csrf_ok(
        request.cookies.get(LOGIN_NONCE_COOKIE, ""), form.get("csrf", "")
    ):
        return await login_form(request, "The form expired or came from another site; sign in again.", 403)
    token = bearer_token("Bearer " + form.get("token", "").strip())
    if not token:
        return await login_form(
            request, "Paste a bearer token (a ServiceAccount token, an OIDC id-token…).", 400
        )
    request[CREDS] = Credentials(token=token)
    try:
        await user_api(request).can(verb="list", group="", resource="namespaces")
    except ApiError as err:
        if err.status == 401:
            return await login_form(request, "The API server did not accept this token.", 401)
        return await login_form(request, f"The API server could not check the token: {err.message}", 502)
    response = web.HTTPSeeOther("/")
    response.set_cookie(
        SESSION_COOKIE,
        dash.sessions.seal(token),
        httponly=True,
        samesite="Strict",
        secure=dash.config.tls,
        max_age=SESSION_SECONDS,
        path="/",
    )
    response.del_cookie(LOGIN_NONCE_COOKIE, path="/login")
    raise response


async def logout(request: web.Request) -> web.StreamResponse:
    await checked_form(request)
    response = web.HTTPSeeOther("/login")
    response.del_cookie(SESSION_COOKIE, path="/")
    raise response
