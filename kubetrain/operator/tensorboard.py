"""The planner's part for a job's TensorBoard (kubetrain.jobs.tensorboard). Pure.

Read from the job as stored (not the per-generation cache), so editing the annotation takes
effect at once: the pod `<job>-tensorboard-0`, the Service `<job>-tensorboard` and, with an
`ingressSpec`, the Ingress of that name are created when missing; a pod whose config hash
differs is replaced, an Ingress recorded with another hash is rewritten; removing the
annotation deletes them. They outlive the job's pods: after the job finished they stay for
`ttlSecondsAfterJobFinished` (from its completionTime, or the config's later `updateTimestamp`;
unset: as long as the job exists), then
are deleted (`TensorBoardDeleted` event) — the controller requeues the job for exactly that time.
`status.tensorBoard` holds the address (and the Ingress URL), the pod's phase and the expiry.

Like the job's other children they are kept as desired: a deleted pod, Service or Ingress is
created again on the next reconcile, and a Service or Ingress edited by hand (its spec, or the
labels and annotations kubetrain sets on it, no longer what the annotation asks for) is replaced
(delete + create). Fields the API server fills in (a Service's clusterIP, type, …) and labels or
annotations others add are not differences.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from kubetrain.api.errors import FieldError
from kubetrain.api.labels import KUBEDL_ANNOTATION_TENSORBOARD, annotations_of
from kubetrain.frameworks.env import JobLayout
from kubetrain.jobs import tensorboard as tb
from kubetrain.jobs import tensorboardobjects as tbo
from kubetrain.jobs.tenancy import labels_of_annotations
from kubetrain.operator import runpolicy
from kubetrain.operator import status as st
from kubetrain.operator.draft import ReconcileDraft
from kubetrain.operator.pods import controlled_by, pod_name, pod_phase, terminating

REASON_CREATED = "TensorBoardCreated"
REASON_DELETED = "TensorBoardDeleted"
REASON_INVALID = "InvalidTensorBoardConfig"


def drifted(desired: Any, observed: Any) -> bool:
    """Whether `observed` lacks something of `desired`: every key of a desired mapping must be
    there with an equal value (recursively; keys only observed are filled in by others), lists
    element by element."""
    if isinstance(desired, Mapping):
        return not isinstance(observed, Mapping) or any(
            drifted(value, observed.get(key)) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            not isinstance(observed, list)
            or len(desired) != len(observed)
            or any(drifted(d, o) for d, o in zip(desired, observed, strict=True))
        )
    return bool(desired != observed)


def _edited(desired: Mapping[str, Any], observed: Mapping[str, Any]) -> bool:
    meta, seen = desired.get("metadata") or {}, observed.get("metadata") or {}
    selector = (desired.get("spec") or {}).get("selector")
    return (
        drifted(desired.get("spec"), observed.get("spec"))
        # A Service's selector is exact: a key added to it changes which pods it selects.
        or (selector is not None and selector != (observed.get("spec") or {}).get("selector"))
        or drifted(meta.get("labels") or {}, seen.get("labels") or {})
        or drifted(meta.get("annotations") or {}, seen.get("annotations") or {})
    )


def plan_tensorboard(r: ReconcileDraft, layout: JobLayout | None) -> None:
    meta = r.job.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "default")
    raw = annotations_of(r.job).get(KUBEDL_ANNOTATION_TENSORBOARD)
    cfg, problems = tb.parse_tensorboard(raw) if raw is not None else (None, [])
    pod = next(
        (p for p in r.observed.pods if pod_name(p) == tb.pod_name(name) and controlled_by(p, r.job)), None
    )
    service = r.observed.service_named(tb.name_of(name))
    if service is not None and not controlled_by(service, r.job):
        service = None
    record = r.status.get("tensorBoard")
    record = dict(record) if isinstance(record, Mapping) else {}

    def remove_all() -> None:
        if pod is not None and not terminating(pod):
            r.delete([pod_name(pod)])
        if service is not None and not terminating(service):
            r.plan.tensorboard_deletes.append(("Service", tb.name_of(name)))
        if record.get("ingress"):
            r.plan.tensorboard_deletes.append(("Ingress", tb.name_of(name)))

    if problems:
        return _invalid(r, problems, record, remove_all)
    if cfg is None:
        if pod is not None or service is not None or record:
            remove_all()
            r.status.pop("tensorBoard", None)
        return
    finished = st.terminal_condition(r.status) is not None
    completion = st.parse_time(r.status.get("completionTime"))
    expiry = None
    if finished and cfg.ttl_seconds is not None and completion is not None:
        # From the completion, or from the config's updateTimestamp when that is later (a
        # TensorBoard applied after the job finished), as KubeDL's cleanupAndCheckNeedSync.
        start = max(completion, cfg.updated) if cfg.updated is not None else completion
        expiry = start + timedelta(seconds=cfg.ttl_seconds)
        record["expireTime"] = st.format_time(expiry)
    if expiry is not None and r.now >= expiry:
        remove_all()
        if record.get("phase") != "Deleted":
            r.event(
                "Normal",
                REASON_DELETED,
                f"TensorBoard of {r.title} deleted: {cfg.ttl_seconds}s after the job finished",
            )
        r.status["tensorBoard"] = {"phase": "Deleted", "expireTime": record["expireTime"]}
        return
    if expiry is not None:
        r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, expiry)
    if layout is None:
        return
    job = tbo.JobRef(
        str(r.job.get("kind")),
        str(r.job.get("apiVersion")),
        name,
        namespace,
        str(meta.get("uid", "")),
        labels_of_annotations(annotations_of(r.job)),
    )
    first = layout.replicas[tbo.source_replica(list(layout.replicas))]
    address, link = tb.address(name, namespace, cfg), tb.url(name, namespace, cfg)
    if pod is None:
        r.plan.create_pods.append(tbo.build_pod(job, cfg, first.template, first.container_index))
        if record.get("configHash") != cfg.hash:
            r.event(
                "Normal",
                REASON_CREATED,
                f"TensorBoard of {r.title} at {address}" + (f" and {link}" if link else ""),
            )
    elif (
        not terminating(pod)
        and (pod.get("metadata") or {}).get("annotations", {}).get(tb.ANNOTATION_HASH) != cfg.hash
    ):
        r.delete([pod_name(pod)])  # the config changed: recreated with the new one next time
    desired_service = tbo.build_service(job)
    if service is None:
        r.plan.tensorboard_creates.append(desired_service)
    elif not terminating(service) and _edited(desired_service, service):
        r.plan.tensorboard_replaces.append(desired_service)  # edited by hand: back to desired
    ingress = tbo.build_ingress(job, cfg)
    observed = r.observed.tensorboard_ingress
    seen = observed(tb.name_of(name)) if observed is not None else None
    if seen is not None and not controlled_by(seen, r.job):
        return _set_record(r, (address, link), pod, cfg, None, record)  # someone else's: left alone
    if ingress is not None and observed is not None:
        if seen is None:
            r.plan.tensorboard_creates.append(ingress)
        elif not terminating(seen) and _edited(ingress, seen):
            r.plan.tensorboard_replaces.append(ingress)
    elif ingress is not None and (record.get("configHash") != cfg.hash or not record.get("ingress")):
        r.plan.tensorboard_replaces.append(ingress)
    elif ingress is None and (record.get("ingress") or seen is not None):
        r.plan.tensorboard_deletes.append(("Ingress", tb.name_of(name)))
    _set_record(r, (address, link), pod, cfg, ingress, record)


def _invalid(
    r: ReconcileDraft, problems: list[FieldError], record: dict[str, Any], remove_all: Callable[[], None]
) -> None:
    """The annotation no longer parses (stored without the webhook, which refuses such an
    edit): say so once per distinct mistake — a Warning event and `status.tensorBoard.error`,
    naming the annotation and its field — and leave the TensorBoard as the last valid config made
    it (nothing created, replaced or deleted) until the annotation is fixed or removed; only the
    expiry that config recorded still ends it."""
    expiry = st.parse_time(record.get("expireTime"))
    if expiry is not None and record.get("phase") != "Deleted":
        if r.now >= expiry:
            remove_all()
            r.event("Normal", REASON_DELETED, f"TensorBoard of {r.title} deleted at its expiry")
            r.status["tensorBoard"] = {"phase": "Deleted", "expireTime": record["expireTime"]}
            return
        r.plan.requeue_at = runpolicy.earliest(r.plan.requeue_at, expiry)
    message = "; ".join(str(p) for p in problems)
    if record.get("error") != message:
        r.event(
            "Warning",
            REASON_INVALID,
            f"TensorBoard of {r.title} left as it was: {message}",
        )
    r.status["tensorBoard"] = {**record, "error": message}


def _set_record(
    r: ReconcileDraft,
    where: tuple[str, str | None],
    pod: Mapping[str, Any] | None,
    cfg: tb.TensorBoardConfig,
    ingress: Mapping[str, Any] | None,
    record: Mapping[str, Any],
) -> None:
    name = str((r.job.get("metadata") or {}).get("name", ""))
    address, link = where
    new: dict[str, Any] = {
        "address": address,
        "phase": pod_phase(pod) if pod is not None else "Pending",
        "configHash": cfg.hash,
    }
    if link:
        new["url"] = link
    if ingress is not None:
        new["ingress"] = tb.name_of(name)
    if "expireTime" in record:
        new["expireTime"] = record["expireTime"]
    r.status["tensorBoard"] = new


def tensorboard_children(job_obj: Mapping[str, Any], layout: JobLayout) -> list[dict[str, Any]]:
    """The TensorBoard objects of a job (what `kubetrain render` prints): Service, Ingress, pod."""
    cfg = tb.tensorboard_of(annotations_of(job_obj))
    if cfg is None:
        return []
    job = tbo.JobRef(
        layout.kind,
        layout.api_version,
        layout.name,
        layout.namespace,
        layout.uid,
        labels_of_annotations(layout.annotations),
    )
    first = layout.replicas[tbo.source_replica(list(layout.replicas))]
    ingress = tbo.build_ingress(job, cfg)
    return [
        tbo.build_service(job),
        *([ingress] if ingress is not None else []),
        tbo.build_pod(job, cfg, first.template, first.container_index),
    ]
