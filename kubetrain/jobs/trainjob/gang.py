"""A TrainJob's runtime `podGroupPolicy` through kubetrain's gang scheduler descriptors
(`kubetrain.api.gangschedulers`), as Trainer's coscheduling and volcano plugins make it:
`coscheduling` ↔ the operator's `--gang-scheduler scheduler-plugins`, `volcano` ↔ `volcano`.
The PodGroup is named after the TrainJob, `minMember` = every pod of every step (the shape's
gang counts every pod), `minResources` = their requests summed; coscheduling passes
`scheduleTimeoutSeconds` (default 60, Trainer's), volcano `networkTopology`: the shape's
scheduling policy (`scheduling_of`), from which the planner builds the PodGroup as for every job
(`operator/jobchildren.py`). Pods get the scheduler's name and decoration (the volcano task is
the step's name). A policy the operator's gang scheduler does not serve gets no PodGroup (the
planner says so in an event). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kubetrain.api.errors import json_int
from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.api.gangschedulers import gang_scheduler as gang_scheduler_of
from kubetrain.jobs.shape import GangChoice, SchedulingPolicy
from kubetrain.jobs.trainjob.model import ResolvedTrainJob

# podGroupPolicy source -> the --gang-scheduler that serves it
SOURCES = {"coscheduling": "scheduler-plugins", "volcano": "volcano"}
DEFAULT_SCHEDULE_TIMEOUT = 60


def gang_of(resolved: ResolvedTrainJob, configured: str) -> GangChoice:
    """The gang the runtime's podGroupPolicy asks for, as the operator's `configured`
    --gang-scheduler serves it."""
    policy = resolved.pod_group_policy or {}
    source = next((s for s in SOURCES if policy.get(s) is not None), None)
    if source is None:
        return GangChoice(None)
    gang = gang_scheduler_of(configured)
    if gang is None or gang.name != SOURCES[source]:
        return GangChoice(
            None,
            f"the runtime's podGroupPolicy.{source} needs the operator's --gang-scheduler "
            f"{SOURCES[source]} (it runs with {configured or 'none'}): the pods get no PodGroup",
        )
    return GangChoice(gang)


def scheduling_of(resolved: ResolvedTrainJob) -> SchedulingPolicy:
    """The PodGroup fields the runtime's podGroupPolicy asks for, as the shape's
    `SchedulingPolicy`: coscheduling's `scheduleTimeoutSeconds` (default 60, Trainer's), volcano's
    `networkTopology`. `minMember` and `minResources` are every pod's (the shape's gang counts
    every pod)."""
    policy: Mapping[str, Any] = resolved.pod_group_policy or {}
    timeout = None
    if policy.get("coscheduling") is not None:
        given = json_int((policy.get("coscheduling") or {}).get("scheduleTimeoutSeconds"))
        timeout = given if given is not None else DEFAULT_SCHEDULE_TIMEOUT
    topology = (policy.get("volcano") or {}).get("networkTopology")
    return SchedulingPolicy(
        schedule_timeout_seconds=timeout,
        network_topology=MappingProxyType(dict(topology))
        if isinstance(topology, Mapping) and topology
        else None,
    )


def decorate(pod: dict[str, Any], gang: GangScheduler, tj: str, step: str) -> None:
    """schedulerName (unless the template sets one) and the scheduler's pod annotations/labels."""
    spec = pod.setdefault("spec", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = gang.scheduler_name
    meta = pod.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **gang.pod_annotations(tj, step)}
    meta["labels"] = {**(meta.get("labels") or {}), **gang.pod_labels(tj, step)}
