"""Pod logs as the simulated kubelet serves them (`GET .../pods/{name}/log`) — pure.

A simulated container runs nothing, so its log is what a user wants to see of the process they
would run: the command line, the environment the container gets (the operator's cluster env —
TF_CONFIG, MASTER_ADDR, RANK, PET_*, DMLC_* … — with `$(VAR)` references expanded and
`fieldRef`s resolved as the kubelet resolves them) and, once it ends, its exit code. Each line
carries the time it was "printed": the start lines the container's `startedAt`, the exit line its
`finishedAt` (so `timestamps`, `sinceSeconds` and `sinceTime` behave as on a real kubelet).

Which container and which instance, and the refusals, follow kube-apiserver's
`ValidateContainer` and the kubelet's `validateContainerLogStatus`:
- no `container` with several containers: 400 `a container name must be specified for pod P,
  choose one of: [a b]` (init containers included); an unknown name: 400 `container x is not
  valid for pod P`;
- a container not started yet: `container "x" in pod "P" is waiting to start: ContainerCreating`;
- `previous` without a terminated earlier instance: `previous terminated container "x" in pod
  "P" not found`.
Then the options: `sinceSeconds`/`sinceTime` filter, `tailLines` keeps the last lines,
`timestamps` prefixes each line with its RFC 3339 time, `limitBytes` cuts the output.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn

Obj = dict[str, Any]
Line = tuple[str, str]  # (RFC 3339 timestamp, text)

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")
_FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class LogRefused(Exception):
    """The request cannot be served (HTTP 400 with this message, as kube-apiserver answers)."""


@dataclass(frozen=True)
class LogOptions:
    """The PodLogOptions query parameters."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None
    since_time: datetime | None = None


def _int(query: Mapping[str, str], key: str) -> int | None:
    if key not in query:
        return None
    try:
        return int(query[key])
    except ValueError:
        raise LogRefused(f'{key}: Invalid value: "{query[key]}": must be an integer') from None


def _bool(query: Mapping[str, str], key: str) -> bool:
    value = query.get(key, "false").lower()
    if value in ("", "true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise LogRefused(f'{key}: Invalid value: "{query[key]}": must be true or false')


def parse_options(query: Mapping[str, str]) -> tuple[LogOptions, list[tuple[str, Any, str]]]:
    """The options and their validation errors as (field, value, message) — kube-apiserver's
    ValidatePodLogOptions, answered with 422 Invalid. Unparseable values raise LogRefused (400)."""
    since_time = None
    if "sinceTime" in query:
        try:
            since_time = datetime.fromisoformat(query["sinceTime"].replace("Z", "+00:00"))
        except ValueError:
            raise LogRefused(
                f'sinceTime: Invalid value: "{query["sinceTime"]}": must be an RFC 3339 time'
            ) from None
    options = LogOptions(
        container=query.get("container", ""),
        follow=_bool(query, "follow"),
        previous=_bool(query, "previous"),
        timestamps=_bool(query, "timestamps"),
        tail_lines=_int(query, "tailLines"),
        limit_bytes=_int(query, "limitBytes"),
        since_seconds=_int(query, "sinceSeconds"),
        since_time=since_time,
    )
    problems: list[tuple[str, Any, str]] = []
    if options.tail_lines is not None and options.tail_lines < 0:
        problems.append(("tailLines", options.tail_lines, "must be greater than or equal to 0"))
    if options.limit_bytes is not None and options.limit_bytes < 1:
        problems.append(("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        problems.append(("", None, "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif options.since_seconds is not None and options.since_seconds < 1:
        problems.append(("sinceSeconds", options.since_seconds, "must be greater than 0"))
    return options, problems


def _all_containers(pod: Obj) -> list[Obj]:
    spec = pod.get("spec") or {}
    return [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]


def choose_container(pod: Obj, name: str) -> str:
    """The container the request is about (kube-apiserver's ValidateContainer)."""
    pod_name = pod["metadata"]["name"]
    if name:
        if not any(c.get("name") == name for c in _all_containers(pod)):
            raise LogRefused(f"container {name} is not valid for pod {pod_name}")
        return name
    containers = (pod.get("spec") or {}).get("containers") or []
    if len(containers) == 1:
        return str(containers[0]["name"])
    if not containers:
        raise LogRefused(f"a container name must be specified for pod {pod_name}")
    names = " ".join(str(c.get("name")) for c in _all_containers(pod))
    raise LogRefused(f"a container name must be specified for pod {pod_name}, choose one of: [{names}]")


def _status(pod: Obj, name: str) -> Obj | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for s in status.get(key) or []:
            if s.get("name") == name:
                return dict(s)
    return None


def instance(pod: Obj, name: str, previous: bool) -> Obj:
    """The container instance whose log is asked for: {"containerID", "startedAt", and, once it
    ended, "finishedAt", "exitCode", "reason"} (the kubelet's validateContainerLogStatus)."""
    refer = f'container "{name}" in pod "{pod["metadata"]["name"]}"'
    status = _status(pod, name)
    if status is None:
        if previous:
            raise LogRefused(f"previous terminated {refer} not found")
        raise LogRefused(f"{refer} is waiting to start: ContainerCreating")
    state, last = status.get("state") or {}, status.get("lastState") or {}
    if previous:
        terminated = last.get("terminated")
        if not terminated or not terminated.get("containerID"):
            raise LogRefused(f"previous terminated {refer} not found")
        return dict(terminated)
    if "running" in state:
        return {"containerID": status.get("containerID", ""), **state["running"]}
    for ended in (state.get("terminated"), last.get("terminated")):
        if ended and ended.get("containerID"):
            return dict(ended)
    if state.get("terminated") or last.get("terminated"):
        raise LogRefused(f"{refer} is terminated")
    waiting = state.get("waiting")
    if waiting is not None:
        _refuse_waiting(refer, str(waiting.get("reason", "")))
    raise LogRefused(f"{refer} is waiting to start - no logs yet")


def _refuse_waiting(refer: str, reason: str) -> NoReturn:
    if reason == "ErrImagePull":
        raise LogRefused(f"{refer} is waiting to start: image can't be pulled")
    if reason == "ImagePullBackOff":
        raise LogRefused(f"{refer} is waiting to start: trying and failing to pull image")
    raise LogRefused(f"{refer} is waiting to start: {reason}")


def _field_value(pod: Obj, path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    m = _FIELD.match(path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    return ""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`,
    undefined references stay as written."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _REFERENCE.sub(one, text)


def environment(pod: Obj, container: Obj) -> list[tuple[str, str]]:
    """The variables the container sees from its spec, in order, as the kubelet builds them."""
    seen: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") or source.get("secretRef") or {}
        kind = "ConfigMap" if "configMapRef" in source else "Secret"
        out.append((f"{source.get('prefix', '')}*", f"<every key of {kind} {ref.get('name', '')}>"))
    for var in container.get("env") or []:
        name = str(var.get("name", ""))
        frm = var.get("valueFrom")
        if frm is None:
            value = expand(str(var.get("value", "")), seen)
        elif "fieldRef" in frm:
            value = _field_value(pod, str(frm["fieldRef"].get("fieldPath", "")))
        else:
            kind, ref = next(iter(frm.items()))
            detail = ref.get("key") or ref.get("resource") or ""
            value = f"<{kind} {ref.get('name', ref.get('containerName', ''))} {detail}>".replace("  ", " ")
        seen[name] = value
        out.append((name, value))
    return out


def command_line(container: Obj, env: Mapping[str, str]) -> str:
    words = [expand(str(w), env) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not container.get("command"):
        words.insert(0, f"<entrypoint of {container.get('image', '')}>")
    return shlex.join(words)


def log_lines(pod: Obj, name: str, ended: Obj) -> list[Line]:
    """What the container instance `ended` (from `instance`) printed, with timestamps."""
    container = next((c for c in _all_containers(pod) if c.get("name") == name), {})
    started = str(ended.get("startedAt", ""))
    env = environment(pod, container)
    lines: list[Line] = [
        (started, f'devcluster: container "{name}" (image {container.get("image", "")}) started'),
        (started, "$ " + command_line(container, dict(env))),
    ]
    lines += [(started, f"{key}={value}") for key, value in env]
    if "finishedAt" in ended:
        reason = ended.get("reason") or ("Completed" if ended.get("exitCode") == 0 else "Error")
        lines.append((str(ended["finishedAt"]), f"exited with code {ended.get('exitCode', 0)} ({reason})"))
    return lines


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def render(lines: list[Line], options: LogOptions, now: datetime) -> bytes:
    """The response body: since* filter, then tailLines, timestamps and limitBytes."""
    since = options.since_time
    if options.since_seconds is not None:
        since = now - timedelta(seconds=options.since_seconds)
    if since is not None:
        lines = [(ts, text) for ts, text in lines if (t := _parse_time(ts)) is None or t >= since]
    if options.tail_lines is not None:
        lines = lines[len(lines) - options.tail_lines :] if options.tail_lines else []
    body = "".join(f"{ts} {text}\n" if options.timestamps else f"{text}\n" for ts, text in lines).encode()
    if options.limit_bytes is not None:
        body = body[: options.limit_bytes]
    return body
