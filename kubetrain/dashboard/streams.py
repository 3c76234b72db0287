"""Live updates over Server-Sent Events: job changes from the shared informers (each checked
against the user's RBAC, cached), and a pod's log followed through the pod log API as the user."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import web

from kubetrain.dashboard.pages import job_ref, resolve_kind
from kubetrain.dashboard.views.podhistory import owner_uid
from kubetrain.dashboard.web import creds, dashboard, user_api
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import PODS

STREAMS = web.AppKey("kubetrain.dashboard.streams", set[asyncio.Task[Any]])


async def close_streams(app: web.Application) -> None:
    """On shutdown (before the server waits for its handlers): end every open stream, so a
    stopping dashboard does not wait for browsers to go away."""
    for task in list(app.get(STREAMS, ())):
        task.cancel()


async def _open(request: web.Request) -> web.StreamResponse:
    task = asyncio.current_task()
    streams = request.app.get(STREAMS)
    if task is not None and streams is not None:
        streams.add(task)
        task.add_done_callback(streams.discard)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    return response


def _event(name: str, data: object, position: str = "") -> bytes:
    """One Server-Sent Event; `position` as its `id:`, which a reconnecting browser sends back
    as `Last-Event-ID`."""
    head = f"id: {position}\n" if position else ""
    return f"{head}event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def job_changes(request: web.Request) -> web.StreamResponse:
    """`/stream?namespace=NS&job=RESOURCE/NAME`: an `event: job` per change of a job this user may
    list (of that namespace, of that job); `event: resync` when changes were missed. `since`
    (the position the page was rendered at, `Hub.position`) or a reconnect's `Last-Event-ID`:
    the changes after it are sent first, so none made between the page's render and the
    stream's start (or while it was down) is lost."""
    dash = dashboard(request)
    user, api = creds(request), user_api(request)
    namespace = request.query.get("namespace", "")
    only = request.query.get("job", "")
    resource, _, job_name = only.partition("/")
    hub = dash.watch.hub
    # From where the page was rendered (`since`), or where a reconnecting browser's last event
    # was (`Last-Event-ID`): the changes it missed are replayed first.
    since = hub.parse_position(request.headers.get("Last-Event-ID") or request.query.get("since"))
    with hub.subscribe(since) as queue:
        response = await _open(request)
        await response.write(b": connected\n\n")
        while True:
            try:
                seq, change = await asyncio.wait_for(queue.get(), dash.config.sse_heartbeat)
            except TimeoutError:
                await response.write(b": heartbeat\n\n")
                continue
            if change.resync:
                await response.write(_event("resync", {}, hub.position(seq)))
                continue
            if namespace and change.namespace != namespace:
                continue
            qualified = f"{change.plural}.{change.group}"
            if only and (job_name != change.name or resource not in (qualified, change.plural)):
                continue
            try:
                if not await dash.access.allowed(
                    api, user, "list", change.group, change.plural, change.namespace
                ):
                    continue
            except ApiError:
                break  # the token expired or was revoked: the browser reconnects and signs in again
            await response.write(
                _event(
                    "job",
                    {
                        "resource": qualified,
                        "namespace": change.namespace,
                        "name": change.name,
                        "state": change.state,
                    },
                    hub.position(seq),
                )
            )
    return response


async def follow_log(request: web.Request) -> web.StreamResponse:
    """`.../logs/<pod>/follow?container=C`: the pod's log as it is written, one `data:` per line."""
    kind = resolve_kind(request)
    ns, name, pod_name = (
        request.match_info["namespace"],
        request.match_info["name"],
        request.match_info["pod"],
    )
    api = user_api(request)
    try:
        job = await api.get(job_ref(kind), ns, name)
        pod = await api.get(PODS, ns, pod_name)
    except ApiError as err:
        raise (
            web.HTTPForbidden(text=err.message) if err.status == 403 else web.HTTPNotFound(text=err.message)
        ) from err
    if owner_uid(pod) != (job.get("metadata") or {}).get("uid"):
        raise web.HTTPNotFound(text=f"pod {pod_name} is not a pod of {kind.kind} {ns}/{name}")
    response = await _open(request)
    pending = ""
    with contextlib.suppress(ConnectionResetError):
        try:
            async for chunk in api.follow_pod_log(ns, pod_name, container=request.query.get("container", "")):
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    await response.write(_event("line", line))
            if pending:
                await response.write(_event("line", pending))
            await response.write(_event("end", "the container's log ended"))
        except ApiError as err:
            await response.write(_event("end", err.message))
    return response
