"""The job page's text parts: the spec summary, the YAML, the TensorBoard, pod log choices. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml

from kubetrain.dashboard.views.joblist import replica_specs
from kubetrain.dashboard.views.timeutil import format_stamp

# KubeDL's TensorBoard (the `kubedl.io/tensorboard-config` annotation) reports itself in
# `status.tensorBoard`: `url` (through its Ingress, what a browser can open) and `address` (the
# in-cluster Service URL), `phase`.


@dataclass(frozen=True)
class ReplicaLine:
    type: str
    replicas: str
    restart_policy: str
    images: str
    requests: str


@dataclass(frozen=True)
class Summary:
    fields: tuple[tuple[str, str], ...]
    replicas: tuple[ReplicaLine, ...]


# A spec field's value longer than this is cut on the job page (a TrainJob's trainer.command can be
# a whole script); the YAML at the foot of the page has every value whole.
FIELD_TEXT_MAX = 160
CUT = " … (cut: the whole value is in the YAML below)"


def _text(value: object) -> str:
    """A field's value as the YAML shows it (`true`, not Python's `True`; maps and lists in flow
    style)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
    return str(value)


def _resources(container: Mapping[str, Any]) -> str:
    res = (container.get("resources") or {}).get("requests") or (container.get("resources") or {}).get(
        "limits"
    )
    return ", ".join(f"{k}={v}" for k, v in sorted((res or {}).items()))


def summary(job: Mapping[str, Any]) -> Summary:
    spec = job.get("spec") or {}
    meta = job.get("metadata") or {}
    run = spec.get("runPolicy") or {}
    fields: list[tuple[str, str]] = [
        ("apiVersion", str(job.get("apiVersion") or "")),
        ("kind", str(job.get("kind") or "")),
    ]
    fields.append(("created", format_stamp(meta.get("creationTimestamp"))))
    # The run policy and every other spec field but the replica specs, whatever the kind: the
    # dashboard names no framework's fields (the replica table below covers the replica specs).
    for key, value in run.items():
        fields.append((f"runPolicy.{key}", _text(value)))
    for key, value in spec.items():
        if key == "runPolicy" or key.endswith("ReplicaSpecs"):
            continue
        # a map (a TrainJob's trainer, runtimeRef) one line per key, as runPolicy's
        items = value.items() if isinstance(value, dict) and value else [("", value)]
        for sub, item in items:
            text = _text(item)
            cut = text if len(text) <= FIELD_TEXT_MAX else text[:FIELD_TEXT_MAX].rstrip() + CUT
            fields.append((f"{key}.{sub}" if sub else key, cut))
    lines = []
    for rtype, rspec in replica_specs(job).items():
        pod_spec = (rspec.get("template") or {}).get("spec") or {}
        containers = [c for c in pod_spec.get("containers") or () if isinstance(c, dict)]
        lines.append(
            ReplicaLine(
                type=rtype,
                replicas=str(rspec.get("replicas", 1)),
                restart_policy=str(rspec.get("restartPolicy") or ""),
                images=", ".join(str(c.get("image") or "") for c in containers),
                requests="; ".join(r for c in containers if (r := _resources(c))),
            )
        )
    return Summary(tuple(fields), tuple(lines))


def job_yaml(job: Mapping[str, Any]) -> str:
    """The job as `kubectl get -o yaml` shows it, without managedFields."""
    shown = dict(job)
    meta = dict(shown.get("metadata") or {})
    meta.pop("managedFields", None)
    shown["metadata"] = meta
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when built with it
    return yaml.dump(shown, Dumper=dumper, sort_keys=False, default_flow_style=False)


@dataclass(frozen=True)
class TensorBoard:
    url: str  # http(s) through an Ingress: linked
    address: str  # the in-cluster Service address: shown, not linked
    phase: str


def _http(value: object) -> str:
    text = str(value or "")
    parts = urlsplit(text)
    return text if parts.scheme in ("http", "https") and parts.netloc else ""


def tensorboard(job: Mapping[str, Any]) -> TensorBoard | None:
    """The job's TensorBoard from `status.tensorBoard`, None when it has none (only http(s)
    URLs are kept: a `javascript:` value is never linked)."""
    tb = (job.get("status") or {}).get("tensorBoard")
    if not isinstance(tb, dict):
        return None
    found = TensorBoard(_http(tb.get("url")), _http(tb.get("address")), str(tb.get("phase") or ""))
    return found if found.url or found.address else None


def pod_containers(pod: Mapping[str, Any]) -> list[str]:
    spec_names = [
        str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or () if isinstance(c, dict)
    ]
    if spec_names:
        return spec_names
    return [
        str(c.get("name"))
        for c in (pod.get("status") or {}).get("containerStatuses") or ()
        if isinstance(c, dict)
    ]
