"""A TrainJob's runtime `podGroupPolicy` through kubetrain's gang scheduler descriptors
(`kubetrain.api.gangschedulers`), as Trainer's coscheduling and volcano plugins make it:
`coscheduling` ↔ the operator's `--gang-scheduler scheduler-plugins`, `volcano` ↔ `volcano`. The
PodGroup is named after the TrainJob, `minMember` = the pods of the steps one gang starts
together (`gang_steps`: not the initializers the nodes wait for), `minResources` = their
requests summed; coscheduling passes `scheduleTimeoutSeconds` (default 60, Trainer's), volcano
`networkTopology`, the pod templates' `priorityClassName` and the queue
`scheduling.volcano.sh/queue-name` names on the runtime's template or a runtimePatch
(`runtime_annotations`; an empty one refused, `queue_errors`; a `priorityClassName` naming no
PriorityClass refused, `priority_classes_to_check` and `missing_priority_class_errors`, the
webhook reading the classes): the shape's scheduling policy (`scheduling_of`), from which the
planner builds the PodGroup as for every job (`operator/jobchildren.py`). The gang's pods get
the scheduler's name and decoration (the volcano task is the step's name); a step that runs
before the gang keeps its template's. A policy the operator's gang scheduler does not serve gets
no PodGroup (the planner says so in an event). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kubetrain.api.errors import FieldError, invalid, json_int
from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.api.gangschedulers import gang_scheduler as gang_scheduler_of
from kubetrain.jobs.shape import GangChoice, SchedulingPolicy
from kubetrain.jobs.trainjob.model import ResolvedTrainJob

# podGroupPolicy source -> the --gang-scheduler that serves it
SOURCES = {"coscheduling": "scheduler-plugins", "volcano": "volcano"}
DEFAULT_SCHEDULE_TIMEOUT = 60
# volcanov1beta1.QueueNameAnnotationKey, read by Trainer's volcano plugin from the runtime's
# annotations (`runtime_annotations`), not from the TrainJob's own.
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# Where Trainer's volcano plugin `Validate` reports an empty queue (its field path, as written).
QUEUE_PATH = f"spec.annotations[{QUEUE_ANNOTATION}]"
EMPTY_QUEUE = "Volcano queue name must not be empty"  # Trainer's message
# The two names Trainer's volcano plugin `Validate` does not look up: the API server's own
# classes (`scheduling.SystemPriorityClasses`), which always exist.
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
# Where Trainer's volcano plugin `Validate` reports a priorityClassName naming no PriorityClass.
PRIORITY_CLASS_PATH = "spec.templateSpec.priorityClassName"


def runtime_annotations(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> dict[str, Any]:
    """The annotations Trainer's runtime info carries (`runtime.WithAnnotations`): the runtime's
    `spec.template.metadata.annotations` with each runtimePatch's
    `trainingRuntimeSpec.template.metadata.annotations` merged over them in order — Trainer's
    `TrainingRuntime.newRuntimeInfo` (pkg/runtime/core/trainingruntime.go,
    `propagationAnnotations`). The TrainJob's own `metadata.annotations` are not among them.
    The same map as `ResolvedTrainJob.jobset_annotations` (`patches.merge_metadata`), without
    resolving the steps."""
    template = ((runtime.get("spec") or {}).get("template") or {}).get("metadata") or {}
    merged = dict(template.get("annotations") or {})
    for patch in (trainjob.get("spec") or {}).get("runtimePatches") or []:
        if not isinstance(patch, Mapping):
            continue
        meta = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("metadata") or {}
        extra = meta.get("annotations") if isinstance(meta, Mapping) else None
        if isinstance(extra, Mapping):
            merged.update(extra)
    return merged


def _volcano(runtime: Mapping[str, Any]) -> bool:
    return ((runtime.get("spec") or {}).get("podGroupPolicy") or {}).get("volcano") is not None


def queue_errors(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """Trainer's volcano plugin `Validate` (pkg/runtime/framework/plugins/volcano/volcano.go):
    under a runtime with `podGroupPolicy.volcano`, a queue annotation present in
    `runtime_annotations` but empty is refused, with Trainer's message and field path."""
    if not _volcano(runtime):
        return []
    queue = runtime_annotations(trainjob, runtime).get(QUEUE_ANNOTATION)
    if queue != "":
        return []
    hint = "name a queue, or leave the annotation out of the runtime's template and the runtimePatches"
    return [invalid(QUEUE_PATH, f"{EMPTY_QUEUE}: {hint}")]


def checks_priority_classes(runtime: Mapping[str, Any]) -> bool:
    """Whether a TrainJob of `runtime` has PriorityClasses to check: its `podGroupPolicy` is
    Volcano's (the runtime's own field, which runtime patches do not change)."""
    policy = (runtime.get("spec") or {}).get("podGroupPolicy") or {}
    return isinstance(policy, Mapping) and policy.get("volcano") is not None


def priority_classes_to_check(resolved: ResolvedTrainJob) -> list[str]:
    """The PriorityClasses Trainer's volcano plugin `Validate` (pkg/runtime/framework/plugins/
    volcano/volcano.go) looks up for a TrainJob under a runtime with `podGroupPolicy.volcano`: the
    `priorityClassName` of each replicated job's pod template (runtimePatches applied), each name
    once, in order. An empty name is none (the pods get the default priority) and
    `SYSTEM_PRIORITY_CLASSES` are skipped.

    Decision: every replicated job is checked. Trainer's loop returns at the first system name it
    meets, so a missing class on a replicated job after it goes unchecked there; kubetrain does
    not copy that order-dependent gap: those pods would be refused by the API server's Priority
    admission when created, after the job was admitted."""
    if (resolved.pod_group_policy or {}).get("volcano") is None:
        return []
    names: list[str] = []
    for step in resolved.steps:
        name = (step.pod_template.get("spec") or {}).get("priorityClassName")
        if isinstance(name, str) and name and name not in SYSTEM_PRIORITY_CLASSES and name not in names:
            names.append(name)
    return names


def missing_priority_class_errors(missing: list[str]) -> list[FieldError]:
    """Trainer's refusal of each name `priority_classes_to_check` gave that the API server
    answered 404 for, with its path and message (its `err` is the GET's NotFound)."""
    return [
        invalid(
            PRIORITY_CLASS_PATH,
            f'"{name}": PriorityClass "{name}" doesn\'t exist: '
            f'priorityclasses.scheduling.k8s.io "{name}" not found',
        )
        for name in missing
    ]


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
    `networkTopology` and `queue` — the `scheduling.volcano.sh/queue-name` of the runtime's
    template annotations with the runtimePatches' merged over them (`jobset_annotations`), as
    Trainer's volcano plugin `Build` reads `info.Annotations`; unset (or empty) there, the
    PodGroup's queue falls back to the TrainJob's own annotation (`GangScheduler.pod_group_spec`).
    Volcano's `priorityClassName` is the pod templates' (`_priority_class`). `minMember` and
    `minResources` are the counted steps' pods' (`gang_steps`, the shape's `gang_groups`)."""
    policy: Mapping[str, Any] = resolved.pod_group_policy or {}
    timeout = None
    if policy.get("coscheduling") is not None:
        given = json_int((policy.get("coscheduling") or {}).get("scheduleTimeoutSeconds"))
        timeout = given if given is not None else DEFAULT_SCHEDULE_TIMEOUT
    topology = (policy.get("volcano") or {}).get("networkTopology")
    queue = priority = None
    if policy.get("volcano") is not None:
        named = resolved.jobset_annotations.get(QUEUE_ANNOTATION)
        queue = named if isinstance(named, str) and named else None
        priority = _priority_class(resolved)
    return SchedulingPolicy(
        queue=queue,
        priority_class=priority,
        schedule_timeout_seconds=timeout,
        network_topology=MappingProxyType(dict(topology))
        if isinstance(topology, Mapping) and topology
        else None,
    )


def _priority_class(resolved: ResolvedTrainJob) -> str | None:
    """The `priorityClassName` of the last step's pod template that names one (patches
    applied), as Trainer's volcano plugin `Build` walks the replicated jobs and sets each one it
    finds on the PodGroup (an empty one last: none); None when none does."""
    names = [(s.pod_template.get("spec") or {}).get("priorityClassName") for s in resolved.steps]
    last = next((n for n in reversed(names) if n is not None), None)
    return last if isinstance(last, str) and last else None


@dataclass(frozen=True, slots=True)
class GangSteps:
    """Which steps of a TrainJob a PodGroup gangs (`gang_steps`)."""

    counted: frozenset[str]  # their pods are `minMember` and `minResources`
    joining: frozenset[str]  # gang members made once the counted pods are Ready: not counted

    @property
    def members(self) -> frozenset[str]:
        """The steps whose pods get the scheduler's name and group decoration."""
        return self.counted | self.joining


def gang_steps(resolved: ResolvedTrainJob) -> GangSteps:
    """The steps one gang can start together, as the gang schedulers count a PodGroup: the
    coscheduling plugin's PreFilter refuses every pod of a group while fewer than `minMember`
    of its pods exist (scheduler-plugins `PodGroupManager.PreFilter`), and Volcano's gang plugin
    binds none before `minMember` are allocated (`JobInfo.IsReady`); coscheduling counts no
    finished pod either (kube-scheduler's pod informer skips Succeeded and Failed pods). So a pod
    made only once another member of the gang is Ready or Complete cannot be counted.

    - A step some step waits for with `dependsOn` `Complete` — and every step such a step waits
      for — runs before the gang (the dataset and model initializers): none of its pods is a
      member; they are scheduled pod by pod, as Trainer's workload-aware scheduling proposal
      (KEP-3015) gives the initializers basic scheduling and the trainer a gang.
    - Of the other steps, those that wait for none of them are `counted`; those that wait for
      one (`dependsOn` `Ready`, or every step before them under `startupPolicy: InOrder`) are
      `joining`: members, created once the counted pods are Ready, as §8's rule for the
      WaitForWorkersReady MPI Launcher (mpi-operator issue 608) — the DeepSpeed launcher.

    A dependency on a step of no pods is met at once and changes nothing."""
    pods = {s.name: s.replicas * s.pods for s in resolved.steps}
    waits: dict[str, list[tuple[str, str]]] = {}
    for k, step in enumerate(resolved.steps):
        deps = list(step.depends_on)
        if resolved.in_order:
            deps += [(before.name, "Ready") for before in resolved.steps[:k]]
        waits[step.name] = [(name, state) for name, state in deps if pods.get(name, 0) > 0]
    before = {name for deps in waits.values() for name, state in deps if state == "Complete"}
    todo = list(before)
    while todo:  # what a step that runs before the gang waits for runs before it too
        for name, _ in waits.get(todo.pop(), []):
            if name not in before:
                before.add(name)
                todo.append(name)
    gang = [s.name for s in resolved.steps if s.name not in before]
    joining = {name for name in gang if any(dep not in before for dep, _ in waits[name])}
    return GangSteps(frozenset(gang) - joining, frozenset(joining))


def decorate(pod: dict[str, Any], gang: GangScheduler, tj: str, step: str) -> None:
    """schedulerName (unless the template sets one) and the scheduler's pod annotations/labels."""
    spec = pod.setdefault("spec", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = gang.scheduler_name
    meta = pod.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **gang.pod_annotations(tj, step)}
    meta["labels"] = {**(meta.get("labels") or {}), **gang.pod_labels(tj, step)}
