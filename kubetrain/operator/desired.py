"""The children a job should have — decided in one place, for the planner and `kubetrain render`.

`desired_children(shape, …)` gives the headless Service (or, in per-pod service
mode, one Service per pod), the PodGroup (with a gang
scheduler), the HorizontalPodAutoscaler (when the framework says the job asks for one) and every
pod, built by `children.py` — or, for a shape that makes its own children (a TrainJob's
`ChildMaker`), by the shape. The planner compares them with what it observes (creating what is
missing, replacing a changed HPA); `render` prints them. Each is built on first use only: a
reconcile of a large running job builds no pod it does not create. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from kubetrain.api.gangschedulers import NONE
from kubetrain.frameworks.base import ExtraChild
from kubetrain.jobs.shape import JobShape
from kubetrain.operator.children import (
    build_extra_child,
    build_pod,
    build_pod_service,
    build_service,
    pod_slots,
)
from kubetrain.operator.jobchildren import build_hpa, build_pod_group
from kubetrain.operator.progressenv import ProgressInjection, config_map, enabled, inject


class DesiredChildren:
    def __init__(
        self,
        shape: JobShape,
        *,
        gang_scheduler: str = NONE,
        scheduler_name: str | None = None,
        progress: ProgressInjection | None = None,
    ) -> None:
        self.shape, self.layout, self.plugin = shape, shape.layout, shape.plugin
        self.gang_scheduler, self.scheduler_name = gang_scheduler, scheduler_name
        # The training-progress endpoint's env, token volume and CA ConfigMap (progressenv.py).
        self.progress = progress if enabled(self.layout, progress) else None

    @cached_property
    def service(self) -> dict[str, Any] | None:
        """The job's headless Service (None in per-pod service mode)."""
        if self.shape.children is not None:
            return self.shape.children.service()
        return None if self.layout.per_pod_services else build_service(self.layout)

    def pod_service(self, replica_type: str, index: int) -> dict[str, Any]:
        """Per-pod service mode: the Service of pod `index` of `replica_type`."""
        return build_pod_service(self.layout, replica_type, index)

    def pod_services(self) -> list[dict[str, Any]]:
        """Per-pod service mode: every pod's Service in priority order (else none)."""
        if not self.layout.per_pod_services:
            return []
        return [self.pod_service(rtype, i) for rtype, i in pod_slots(self.layout)]

    @cached_property
    def pod_group(self) -> dict[str, Any] | None:
        """The PodGroup (None without a gang scheduler)."""
        return build_pod_group(self.shape, self.gang_scheduler)

    @cached_property
    def hpa(self) -> dict[str, Any] | None:
        """The HorizontalPodAutoscaler (None when the job asks for none)."""
        return build_hpa(self.layout, self.plugin)

    def extra(self, pods: Sequence[Mapping[str, Any]] = ()) -> list[ExtraChild]:
        """The framework's extra children (ConfigMaps, Secrets) given the observed pods — a shape
        that makes its own children: the objects its pods need first."""
        maker = self.shape.children
        if maker is not None:
            children = [ExtraChild(obj, True) for obj in maker.prerequisites()]
        else:
            children = [
                ExtraChild(build_extra_child(self.layout, c.obj), c.observed)
                for c in self.plugin.extra_children(self.layout, pods)
            ]
        if self.progress is not None:
            wanted = config_map(self.layout, self.progress)
            child = maker.own(wanted) if maker is not None else build_extra_child(self.layout, wanted)
            children.append(ExtraChild(child, True))
        return children

    def pod(self, replica_type: str, index: int, *, attempt: int = 0, job_attempt: int = 0) -> dict[str, Any]:
        """Pod `index` of `replica_type` (a new object on every call: the caller owns it). A shape
        that makes its own pods (`JobShape.children`) makes it, and the env plug-in adds its part;
        it is decorated for the gang scheduler its own policy chose (`JobShape.gang`)."""
        maker = self.shape.children
        if maker is not None:
            pod = maker.pod(replica_type, index, attempt, job_attempt)
            self.plugin.customize_pod(self.layout, replica_type, index, pod["spec"])
            gang = self.shape.gang.scheduler if self.shape.gang is not None else None
            if gang is not None:
                maker.decorate(pod, gang, replica_type)
        else:
            pod = build_pod(
                self.layout,
                self.plugin,
                replica_type,
                index,
                gang_scheduler=self.gang_scheduler,
                scheduler=self.scheduler_name,
                attempt=attempt,
            )
        if self.progress is not None:
            inject(self.layout, self.progress, pod["spec"])
        return pod

    def pods(self) -> list[dict[str, Any]]:
        """Every pod in priority order."""
        return [self.pod(rtype, i) for rtype, i in pod_slots(self.layout)]

    def all(self) -> list[dict[str, Any]]:
        """Every child in creation order: what the pods need and nobody watches (a TrainJob's
        PVCs), Service(s), PodGroup, HPA, extra children, pods."""
        unread = self.shape.children.unread_prerequisites() if self.shape.children is not None else []
        optional = [c for c in (self.service, self.pod_group, self.hpa) if c is not None]
        return [*unread, *self.pod_services(), *optional, *(c.obj for c in self.extra()), *self.pods()]


def desired_children(
    shape: JobShape,
    *,
    gang_scheduler: str = NONE,
    scheduler_name: str | None = None,
    progress: ProgressInjection | None = None,
) -> DesiredChildren:
    return DesiredChildren(
        shape, gang_scheduler=gang_scheduler, scheduler_name=scheduler_name, progress=progress
    )
