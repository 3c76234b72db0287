"""Adopting the pods and Services of running jobs Kubeflow's training operator or KubeDL created,
when the controller starts serving `kubeflow.org` or `training.kubedl.io` (docs/operations.md,
"Taking over running Kubeflow jobs", "Serving KubeDL's API"). The decisions are in `adoption.py`
and `adoption_kubedl.py`; this lists and patches.

Run once per source by `Controller.start` (after leader election, before the informers list):
every pod and Service carrying the source's job-name label but not `kubetrain.io/job-name` whose
controller ownerReference is a stored job kubetrain reconciles (same uid, `managedBy` kubetrain's
or the source operator's) gets kubetrain's labels with one resourceVersion-guarded merge patch —
a pod those kubetrain gives the pod of its slot when it creates it (`adoption.CreatedLabels`,
with the controller's gang scheduler).
The informers then list them as the job's own: no pod is created, deleted or restarted, and a
Normal `Adopted` event on the job says how many were taken over. A job the source refuses
(`Source.refusal`: KubeDL's host network mode, code sync, MPIJob) keeps its objects as they are
and gets one Warning `NotAdopted` event saying why and what to do. A patch refused (409, 404,
403) is logged and skipped — the object is left as it was; the job then waits for the name like
for any pod it does not own (docs/behaviour.md §5).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.gangschedulers import NONE
from kubetrain.jobs.kubedllayout import is_kubedl, to_v1
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import EventRecorder
from kubetrain.kube.resources import PODS, SERVICES, ResourceRef
from kubetrain.operator.adoption import (
    KUBEFLOW,
    Source,
    adopted_job_patch,
    adoption_labels,
    label_patch,
    owner_of,
)
from kubetrain.operator.adoptlabels import CreatedLabels
from kubetrain.operator.runpolicy import is_managed

log = logging.getLogger("kubetrain.adopt")

Obj = dict[str, Any]
REASON_ADOPTED = "Adopted"
REASON_NOT_ADOPTED = "NotAdopted"


@dataclass
class Adoption:
    """What one pass adopted: (namespace, name) per resource plural, and what it skipped."""

    adopted: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    skipped: list[tuple[str, str, str, str]] = field(default_factory=list)  # plural, ns, name, why
    refused: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (kind, ns, name): why


class _Jobs:
    """The stored jobs adoption asks about, read once each."""

    def __init__(self, client: Any, refs: Mapping[str, ResourceRef], gang_scheduler: str) -> None:
        self.client, self.refs, self.gang_scheduler = client, refs, gang_scheduler
        self.seen: dict[tuple[str, str, str], Obj | None] = {}
        self.labels: dict[tuple[str, str, str], CreatedLabels] = {}

    async def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        key = (kind, namespace, name)
        if key not in self.seen:
            try:
                self.seen[key] = await self.client.get(self.refs[kind], namespace, name)
            except ApiError as err:
                if not err.is_not_found:
                    raise
                self.seen[key] = None
        return self.seen[key]

    def created_labels(self, kind: str, namespace: str, name: str, job: Obj) -> CreatedLabels:
        """The labels kubetrain gives the job's pods (the job prepared once)."""
        key = (kind, namespace, name)
        if key not in self.labels:
            self.labels[key] = CreatedLabels(job, gang_scheduler=self.gang_scheduler)
        return self.labels[key]


async def adopt_kubeflow_children(
    client: Any,
    job_refs: Iterable[ResourceRef],
    *,
    namespaces: list[str] | None = None,
    recorder: EventRecorder | None = None,
    gang_scheduler: str = NONE,
) -> Adoption:
    """`adopt_children` of Kubeflow's training operator."""
    return await adopt_children(
        client, job_refs, KUBEFLOW, namespaces=namespaces, recorder=recorder, gang_scheduler=gang_scheduler
    )


async def adopt_children(
    client: Any,
    job_refs: Iterable[ResourceRef],
    source: Source,
    *,
    namespaces: list[str] | None = None,
    recorder: EventRecorder | None = None,
    gang_scheduler: str = NONE,
) -> Adoption:
    """Adopt the pods and Services `source`'s operator made for the jobs of its group in
    `job_refs` (the served job resources; those of other groups are ignored). `namespaces`: None
    for every namespace; `gang_scheduler`: the controller's (`--gang-scheduler`), whose labels
    the pods kubetrain creates carry."""
    refs = {ref.kind: ref for ref in job_refs if ref.group == source.group}
    result = Adoption()
    if not refs:
        return result
    jobs = _Jobs(client, refs, gang_scheduler)
    counts: dict[tuple[str, str, str], dict[str, int]] = {}
    for ref, is_pod in ((PODS, True), (SERVICES, False)):
        scopes: list[str | None] = list(namespaces) if namespaces else [None]
        for namespace in scopes:
            items, _ = await client.list_all(ref, namespace, label_selector=source.selector)
            for obj in items:
                meta = obj.get("metadata") or {}
                ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")

                def skip(why: str, plural: str = ref.plural, ns: str = ns, name: str = name) -> None:
                    result.skipped.append((plural, ns, name, why))
                    log.info("not adopting %s %s/%s: %s", plural, ns, name, why)

                owner = owner_of(obj, source)
                if owner is None or owner.kind not in refs:
                    skip(f"its controller is not a {source.group} job kind this operator serves")
                    continue
                job = await jobs.get(owner.kind, ns, owner.name)
                if job is None or (job.get("metadata") or {}).get("uid") != owner.uid:
                    skip(f"its {owner.kind} {owner.name} (uid {owner.uid}) is gone")
                    continue
                if not is_managed(to_v1(job) if is_kubedl(job) else job):
                    skip(f"{owner.kind} {owner.name} is managed by another controller (managedBy)")
                    continue
                refusal = source.refusal(job)
                if refusal is not None:
                    result.refused[(owner.kind, ns, owner.name)] = refusal
                    skip(f"{owner.kind} {owner.name}: {refusal}")
                    continue
                created = jobs.created_labels(owner.kind, ns, owner.name, job) if is_pod else None
                labels = adoption_labels(obj, owner, pod=is_pod, source=source, created=created)
                if labels is None:
                    skip(f"its {source.operator} labels name no replica of the job")
                    continue
                try:
                    await client.patch(ref, ns, name, label_patch(obj, labels))
                except ApiError as err:
                    if err.is_conflict or err.is_not_found or err.is_forbidden:
                        skip(f"the label patch was refused: {err}")
                        continue
                    raise
                result.adopted.setdefault(ref.plural, []).append((ns, name))
                per_job = counts.setdefault((owner.kind, ns, owner.name), {})
                per_job[ref.plural] = per_job.get(ref.plural, 0) + 1
    for (kind, ns, name), per in counts.items():
        job = jobs.seen.get((kind, ns, name))
        await _mark_adopted(client, refs[kind], job, source)
        what = " and ".join(f"{n} {plural}" for plural, n in per.items())
        message = f"adopted {what} created by {source.operator} (kept running, not recreated)"
        log.info("%s %s/%s: %s", kind, ns, name, message)
        if recorder is not None and job is not None:
            recorder.emit(job, "Normal", REASON_ADOPTED, message)
    for (kind, ns, name), why in result.refused.items():
        log.warning("%s %s/%s: %s", kind, ns, name, why)
        job = jobs.seen.get((kind, ns, name))
        if recorder is not None and job is not None:
            recorder.emit(job, "Warning", REASON_NOT_ADOPTED, why)
    return result


async def _mark_adopted(client: Any, ref: ResourceRef, job: Obj | None, source: Source) -> None:
    """Mark an adopted job `kubetrain.io/adopted-from`, so that it runs in per-pod service mode,
    and give it its tenancy labels (adoption.adopted_job_patch). A refused patch is logged: the
    job then runs in the operator's default mode, where a pod recreated later addresses peers the
    adopted pods do not answer at, and lacks the labels a tenant quota counts it by."""
    patch = adopted_job_patch(job, source) if job is not None else None
    if job is None or patch is None:
        return
    meta = job.get("metadata") or {}
    try:
        await client.patch(ref, meta.get("namespace"), meta.get("name"), patch)
    except ApiError as err:
        if not (err.is_not_found or err.is_forbidden or err.is_conflict or err.status == 422):
            raise
        log.warning(
            "%s %s/%s: could not mark it adopted: %s", ref.kind, meta.get("namespace"), meta.get("name"), err
        )
