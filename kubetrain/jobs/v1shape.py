"""The job shape of the `<kind>ReplicaSpecs` kinds (TFJob … MPIJob): the first producer of
`kubetrain.jobs.shape.JobShape`.

Each replica type is one group; the framework's gates (MPI's WaitForWorkersReady: the Launcher
after every Worker is Ready) become `depends_on`; `runPolicy` becomes the typed `RunPolicy`;
the framework is both the success/failure rules and the env plug-in. Called once per spec
generation on the defaulted, validated job and its layout (`operator/prepare.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout
from kubetrain.jobs.shape import (
    CLEAN_POD_POLICIES,
    READY,
    DependsOn,
    JobShape,
    ReplicaGroup,
    RunPolicy,
    SchedulingPolicy,
    int_or_none,
)


def v1_shape(spec: Mapping[str, Any], framework: Framework, layout: JobLayout) -> JobShape:
    """The shape of a defaulted, validated job whose `spec` has `framework.replica_field`."""
    gates = framework.gates(layout)
    groups = {
        name: ReplicaGroup(
            name=name,
            replicas=r.replicas,
            template=r.template,
            restart_policy=r.restart_policy,
            container_index=r.container_index,
            depends_on=tuple(DependsOn(other, READY) for other in gates.get(name, ())),
            path=f"spec.{framework.replica_field}[{name}]",
        )
        for name, r in layout.replicas.items()
    }
    return JobShape(
        kind=layout.kind,
        api_version=layout.api_version,
        name=layout.name,
        namespace=layout.namespace,
        uid=layout.uid,
        groups=MappingProxyType(groups),
        run_policy=run_policy_of(spec),
        rules=framework,
        plugin=framework,
        layout=layout,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def run_policy_of(spec: Mapping[str, Any]) -> RunPolicy:
    """Kubeflow's `runPolicy` (common/v1 RunPolicy) as the typed `RunPolicy`."""
    rp = _mapping(spec.get("runPolicy"))
    clean = rp.get("cleanPodPolicy")
    failure = _mapping(rp.get("podFailurePolicy")).get("rules")
    rules = tuple(r for r in failure if isinstance(r, Mapping)) if isinstance(failure, list) else ()
    manager = rp.get("managedBy")
    return RunPolicy(
        clean_pod_policy=clean if clean in CLEAN_POD_POLICIES else DEFAULT_CLEAN_POD_POLICY,
        suspend=rp.get("suspend") is True,
        backoff_limit=int_or_none(rp.get("backoffLimit")),
        active_deadline_seconds=int_or_none(rp.get("activeDeadlineSeconds")),
        ttl_seconds_after_finished=int_or_none(rp.get("ttlSecondsAfterFinished")),
        managed_by=manager if isinstance(manager, str) and manager else None,
        failure_rules=rules,
        scheduling=scheduling_policy_of(_mapping(rp.get("schedulingPolicy"))),
    )


def scheduling_policy_of(policy: Mapping[str, Any]) -> SchedulingPolicy:
    minimum = int_or_none(policy.get("minAvailable"))
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
        schedule_timeout_seconds=int_or_none(policy.get("scheduleTimeoutSeconds")),
        raw=policy,
    )
