"""GET /api/v1/namespaces/{ns}/pods/{name}/log: the pods/log subresource.

kube-apiserver forwards this to the kubelet of the pod's node; devcluster's simulated kubelet
keeps no state of its own, so the log is built from the stored pod (`kubelet.logs`, pure). As in
kube-apiserver: a missing pod is 404 `pods "x" not found`, invalid options are 422
`PodLogOptions "x" is invalid`, the kubelet's refusals (which container, not started yet, no
previous instance) are 400 with its message, a pod not yet bound to a node has an empty log, and
the body is `text/plain`. With `follow=true` the stream stays open until the followed instance
of the container ends (or the pod is deleted, the client goes away, or the server stops).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from aiohttp import web

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.core import ApiServer, Target
from kubetrain.devcluster.kubelet import logs

TEXT = "text/plain"


def _refused(t: Target, message: str) -> errors.ApiError:
    return errors.ApiError(400, "BadRequest", message, {"name": t.name, "kind": "pods/log"})


def _options(t: Target, query: dict[str, str]) -> logs.LogOptions:
    try:
        options, problems = logs.parse_options(query)
    except logs.LogRefused as exc:
        raise errors.bad_request(str(exc)) from None
    if problems:
        causes = [
            errors.Cause("FieldValueInvalid", f"Invalid value: {value}: {msg}" if path else msg, path)
            for path, value, msg in problems
        ]
        raise errors.invalid("PodLogOptions", "", t.name, causes)
    return options


def _lines(t: Target, pod: Obj, options: logs.LogOptions) -> tuple[str, Obj, list[logs.Line]]:
    try:
        name = logs.choose_container(pod, options.container)
        if not (pod.get("spec") or {}).get("nodeName"):
            return name, {}, []
        ended = logs.instance(pod, name, options.previous)
    except logs.LogRefused as exc:
        raise _refused(t, str(exc)) from None
    return name, ended, logs.log_lines(pod, name, ended)


async def serve(request: web.Request, api: ApiServer, t: Target) -> web.StreamResponse:
    options = _options(t, dict(request.query))
    pod = api.current(t)
    name, ended, lines = _lines(t, pod, options)
    body = logs.render(lines, options, datetime.now(UTC))
    if not options.follow or not ended or "finishedAt" in ended:
        return web.Response(body=body, status=200, content_type=TEXT)
    return await _follow(request, api, t, options, name, ended, lines, body)


async def _follow(
    request: web.Request,
    api: ApiServer,
    t: Target,
    options: logs.LogOptions,
    name: str,
    followed: Obj,
    lines: list[logs.Line],
    first: bytes,
) -> web.StreamResponse:
    """Stream what is there, then the lines the followed instance adds until it ends."""
    store = api.store
    watcher = store.watch(t.rt.key, t.namespace, lambda o: o["metadata"]["name"] == t.name, None)
    resp = web.StreamResponse(status=200, headers={"Content-Type": TEXT, "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    budget = None if options.limit_bytes is None else options.limit_bytes - len(first)
    written = len(lines)
    try:
        await resp.write(first)
        done = budget is not None and budget <= 0
        while not done:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watcher.wake.wait(), timeout=5.0)
            transport = request.transport
            if transport is None or transport.is_closing():
                break  # the client went away
            for kind, pod in watcher.take(64):
                current = _instance_of(pod, name, str(followed.get("containerID", "")))
                if kind == "DELETED" or current is None:
                    done = True
                    break
                new = logs.log_lines(pod, name, current)[written:]
                written += len(new)
                chunk = logs.render(new, logs.LogOptions(timestamps=options.timestamps), datetime.now(UTC))
                if budget is not None:
                    chunk, budget = chunk[:budget], budget - len(chunk)
                await resp.write(chunk)
                if "finishedAt" in current or (budget is not None and budget <= 0):
                    done = True
                    break
            if watcher.closed and not watcher.items:
                done = True
        await resp.write_eof()
    except (ConnectionResetError, asyncio.CancelledError, RuntimeError):
        pass
    finally:
        with contextlib.suppress(Exception):
            store.unwatch(watcher)
    return resp


def _instance_of(pod: Obj, name: str, container_id: str) -> Obj | None:
    """The followed instance in the new pod state (running, or terminated now or before)."""
    for previous in (False, True):
        with contextlib.suppress(logs.LogRefused):
            found = logs.instance(pod, name, previous)
            if found.get("containerID") == container_id:
                return found
    return None
