"""The dashboard's pages (GET): the job list and the job page, from the shared informers' cache
(filtered by the user's RBAC) and from API calls made with the user's credentials."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from markupsafe import Markup

from kubetrain.api.errors import QUOTE
from kubetrain.dashboard.access import visible_rows
from kubetrain.dashboard.views import (
    earlier,
    finishedindexes,
    ganttsvg,
    joblist,
    jobpage,
    podsummary,
    progress,
    timeline,
    trainjob,
)
from kubetrain.dashboard.views.kinds import JobKind, resolve
from kubetrain.dashboard.views.podhistory import merge_current
from kubetrain.dashboard.web import creds, dashboard, render, user_api
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import EVENTS, ResourceRef

LOG_TAIL_CHOICES = (50, 200, 1000, 5000)
POD_TABLE_MAX = 50  # the job page's pod table: at most this many rows, the not-working pods first
POD_SELECT_MAX = 100  # more pods than this: the log form names the pod in a text field with suggestions


def job_ref(kind: JobKind) -> ResourceRef:
    return ResourceRef(kind.group, kind.version, kind.plural, kind.kind, True)


async def job_list(request: web.Request) -> web.Response:
    dash = dashboard(request)
    since = dash.watch.hub.position()  # before reading: the stream replays every later change
    query, errors = joblist.parse_query(request.query, dash.kinds)
    visible = await dash.access.visible(user_api(request), creds(request), dash.watch.namespaces_by_kind())
    mine = visible_rows(dash.watch.rows.values(), visible)
    pod_namespaces = await dash.access.pod_namespaces(user_api(request), creds(request), mine)
    page = joblist.build_page(mine, query, pod_namespaces)
    return render(
        request,
        "list.html",
        status=400 if errors else 200,
        query=query,
        page=page,
        errors=errors,
        kinds=dash.kinds,
        states=joblist.STATES,
        replicas_title=joblist.REPLICAS_TITLE,
        per_page_choices=joblist.PER_PAGE_CHOICES,
        sort_keys=joblist.SORT_KEYS,
        pod_filters=joblist.POD_FILTERS,
        stream=f"/stream?namespace={query.namespace}&since={since}"
        if query.namespace
        else f"/stream?since={since}",
    )


async def _optional(coro: Any) -> tuple[Any, str]:
    """(answer, "") or (None, why it failed) — a part of the page the user may not read."""
    try:
        return await coro, ""
    except ApiError as err:
        if err.status == 401:
            raise
        return None, f"{err.status} {err.reason}: {err.message}" if err.status else err.message


def resolve_kind(request: web.Request) -> JobKind:
    dash = dashboard(request)
    kind = resolve(dash.kinds, request.match_info["resource"])
    if kind is None:
        served = ", ".join(k.resource for k in dash.kinds)
        raise web.HTTPNotFound(
            text=f"{QUOTE.encode(request.match_info['resource'])} is not a served job resource "
            f"(served: {served})"
        )
    return kind


async def job_page(request: web.Request) -> web.Response:
    dash = dashboard(request)
    since = dash.watch.hub.position()  # before reading: the stream replays every later change
    kind = resolve_kind(request)
    ns, name = request.match_info["namespace"], request.match_info["name"]
    api = user_api(request)
    try:
        job = await api.get(job_ref(kind), ns, name)
    except ApiError as err:
        if err.status in (403, 404):
            return render(
                request,
                "error.html",
                status=err.status,
                title=f"{kind.kind} {ns}/{name}",
                message=err.message,
            )
        raise
    uid = str((job.get("metadata") or {}).get("uid") or "")
    may_list_pods, (event_list, events_error) = await asyncio.gather(
        dash.access.allowed(api, creds(request), "list", "", "pods", ns),
        _optional(api.list(EVENTS, ns, field_selector=f"involvedObject.uid={uid}")),
    )
    # The pods come from the shared pod informer, shown to those who may list pods here.
    pods = dash.watch.pods_of(ns, name, uid) if may_list_pods else []
    pods_error = "" if may_list_pods else f'forbidden: you may not list pods in namespace "{ns}"'

    events = sorted(
        (event_list or {}).get("items") or (),
        key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""),
    )
    now = dash.now()
    lives = merge_current(dash.watch.history.lives(uid), pods, now) if not pods_error else []
    lives, gantt_notes = earlier.earlier_lives(lives, events, job) if lives else (lives, [])
    chart = timeline.gantt(lives, timeline.causes_from_events(events), now)
    dash.watch.progress.observe(job, now)
    samples = dash.watch.progress.samples(uid)
    log_text, log_error, log_pod, log_container, tail = await _log_part(request, api, ns, pods)
    table = podsummary.pod_table(pods, POD_TABLE_MAX)
    return render(
        request,
        "job.html",
        kind=kind,
        job=job,
        namespace=ns,
        name=name,
        state=joblist.job_state(job),
        summary=jobpage.summary(job),
        is_trainjob=trainjob.is_trainjob(job),
        steps=trainjob.steps(job, pods) if trainjob.is_trainjob(job) else (),
        conditions=timeline.condition_timeline(job),
        gantt=chart,
        gantt_notes=gantt_notes,
        gantt_html=Markup(ganttsvg.gantt_html(chart)),
        pods=pods,
        pods_error=pods_error,
        pod_table=table,
        # no pod listed (forbidden to list them) says nothing of which pods are gone
        finished_indexes=finishedindexes.finished(
            job, pods, 0 if pods_error else POD_TABLE_MAX - len(table.rows)
        ),
        events=events,
        events_error=events_error,
        plots=progress.plots(samples),
        remaining=progress.remaining_text(samples),
        tensorboard=jobpage.tensorboard(job),
        yaml=jobpage.job_yaml(job),
        suspended=trainjob.spec_suspended(job)
        if trainjob.is_trainjob(job)
        else bool(((job.get("spec") or {}).get("runPolicy") or {}).get("suspend")),
        finished=joblist.job_state(job) in joblist.TERMINAL,
        log_containers=next(
            (jobpage.pod_containers(p) for p in pods if p["metadata"]["name"] == log_pod), []
        ),
        log_text=log_text,
        log_error=log_error,
        log_pod=log_pod,
        log_container=log_container,
        tail=tail,
        tail_choices=LOG_TAIL_CHOICES,
        pod_select_max=POD_SELECT_MAX,
        stream=f"/stream?namespace={ns}&job={kind.resource}/{name}&since={since}",
    )


async def _log_part(
    request: web.Request, api: Any, ns: str, pods: list[dict[str, Any]]
) -> tuple[str, str, str, str, int]:
    """The log tail the page shows: of `?pod=` (one of the job's pods; default its first pod)."""
    names = [p["metadata"]["name"] for p in pods]
    pod = request.query.get("pod") or (names[0] if names else "")
    if not pod:
        return "", "", "", "", 200
    if pod not in names:
        return (
            "",
            f"pod {QUOTE.encode(pod)} is not one of this job's pods ({', '.join(names) or 'none'})",
            pod,
            "",
            200,
        )
    containers = jobpage.pod_containers(next(p for p in pods if p["metadata"]["name"] == pod))
    container = request.query.get("container") or (containers[0] if containers else "")
    if container and containers and container not in containers:
        return (
            "",
            f"container {QUOTE.encode(container)} is not in pod {pod} (valid: {', '.join(containers)})",
            pod,
            container,
            200,
        )
    try:
        tail = int(request.query.get("tail", "200"))
    except ValueError:
        tail = 200
    tail = tail if tail in LOG_TAIL_CHOICES else 200
    text, error = await _optional(api.pod_log(ns, pod, container=container, tail_lines=tail))
    return text or "", error, pod, container, tail
