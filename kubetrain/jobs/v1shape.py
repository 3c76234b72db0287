"""The job shape of the `<kind>ReplicaSpecs` kinds (TFJob … MPIJob): the first producer of
`kubetrain.jobs.shape.JobShape`.

Each replica type is one group; the framework's gates (MPI's WaitForWorkersReady: the Launcher
after every Worker is Ready) become `depends_on`; `runPolicy` becomes the typed `RunPolicy`;
the framework is both the success/failure rules and the env plug-in. Called once per spec
generation on the defaulted job (`operator/prepare.py`), which uses the shape only when the job
is valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY
from kubetrain.api.errors import json_int
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import build_layout
from kubetrain.jobs.annotations import JobAnnotations
from kubetrain.jobs.shape import (
    CLEAN_POD_POLICIES,
    READY,
    DependsOn,
    JobShape,
    Produced,
    ReplicaGroup,
    RunPolicy,
    SchedulingPolicy,
    StatusProjection,
)


def v1_shape(
    obj: Mapping[str, Any],
    framework: Framework,
    *,
    status: StatusProjection,
    annotations: JobAnnotations,
    per_pod_services: bool = False,
) -> Produced:
    """The shape of a defaulted job whose spec has `framework.replica_field`, laid out for the
    framework (`annotations`: its annotations as read at the edge; `per_pod_services`: pods
    addressed by their own Services) with the `status` projection of Kubeflow's JobStatus the
    planner gives it, or why it cannot be laid out."""
    spec = obj.get("spec")
    run_policy = run_policy_of(spec if isinstance(spec, Mapping) else {}, annotations.progress_deadline)
    layout, errors = build_layout(
        obj, framework, per_pod_services=per_pod_services, host_network=annotations.host_network
    )
    if layout is None:
        return Produced(None, run_policy, errors)
    gates = framework.gates(layout)
    groups = {
        name: ReplicaGroup.of(
            r,
            tuple(DependsOn(other, READY) for other in gates.get(name, ())),
            f"spec.{framework.replica_field}[{name}]",
        )
        for name, r in layout.replicas.items()
    }
    shape = JobShape(
        kind=layout.kind,
        api_version=layout.api_version,
        name=layout.name,
        namespace=layout.namespace,
        uid=layout.uid,
        groups=MappingProxyType(groups),
        run_policy=run_policy,
        rules=framework,
        plugin=framework,
        layout=layout,
        status=status,
    )
    return Produced(shape, run_policy)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _positive(value: int | None) -> int | None:
    return value if value is not None and value > 0 else None


def run_policy_of(spec: Mapping[str, Any], annotated_deadline: int | None = None) -> RunPolicy:
    """Kubeflow's `runPolicy` (common/v1 RunPolicy) as the typed `RunPolicy`; without
    `progressDeadlineSeconds`, the progress deadline is the job's annotation's
    (`annotated_deadline`, `JobAnnotations.progress_deadline`)."""
    rp = _mapping(spec.get("runPolicy"))
    deadline = rp.get("progressDeadlineSeconds")
    clean = rp.get("cleanPodPolicy")
    failure = _mapping(rp.get("podFailurePolicy")).get("rules")
    rules = tuple(r for r in failure if isinstance(r, Mapping)) if isinstance(failure, list) else ()
    manager = rp.get("managedBy")
    scheduling = scheduling_policy_of(_mapping(rp.get("schedulingPolicy")))
    return RunPolicy(
        clean_pod_policy=clean if clean in CLEAN_POD_POLICIES else DEFAULT_CLEAN_POD_POLICY,
        suspend=rp.get("suspend") is True,
        backoff_limit=json_int(rp.get("backoffLimit")),
        active_deadline_seconds=json_int(rp.get("activeDeadlineSeconds")),
        ttl_seconds_after_finished=json_int(rp.get("ttlSecondsAfterFinished")),
        managed_by=manager if isinstance(manager, str) and manager else None,
        failure_rules=rules,
        progress_deadline_seconds=annotated_deadline if deadline is None else _positive(json_int(deadline)),
        scheduling=scheduling,
    )


def scheduling_policy_of(policy: Mapping[str, Any]) -> SchedulingPolicy:
    minimum = json_int(policy.get("minAvailable"))
    resources = policy.get("minResources")
    queue, priority = policy.get("queue"), policy.get("priorityClass")
    return SchedulingPolicy(
        min_available=minimum if minimum is not None and minimum > 0 else None,
        queue=queue if isinstance(queue, str) and queue else None,
        priority_class=priority if isinstance(priority, str) and priority else None,
        min_resources=(
            MappingProxyType({str(k): str(v) for k, v in resources.items()})
            if isinstance(resources, Mapping)
            else None
        ),
        schedule_timeout_seconds=json_int(policy.get("scheduleTimeoutSeconds")),
    )
