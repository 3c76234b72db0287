"""The job shape of the `<kind>ReplicaSpecs` kinds (TFJob … MPIJob): the first producer of
`kubetrain.jobs.shape.JobShape`.

Each replica type is one group; the framework's gates (MPI's WaitForWorkersReady: the Launcher
after every Worker is Ready) and a KubeDL job's DAG (`kubedldag`) become `depends_on`;
`runPolicy` becomes the typed `RunPolicy`; the framework is both the success/failure rules and
the env plug-in. Called once per spec generation on the defaulted job (`operator/prepare.py`),
which uses the shape only when the job is valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY, RESTART_POLICIES
from kubetrain.api.errors import QUOTE, json_int
from kubetrain.api.trainerstatus import CA_CONFIG_MAP_SUFFIX
from kubetrain.frameworks import hostnetwork
from kubetrain.frameworks.base import Framework, Gates
from kubetrain.frameworks.env import JobLayout, ReplicaLayout, container_port
from kubetrain.jobs.annotations import JobAnnotations
from kubetrain.jobs.jobdraft import JobDraft
from kubetrain.jobs.projection import StatusProjection
from kubetrain.jobs.replicadraft import ReplicaDraft
from kubetrain.jobs.shape import (
    CLEAN_POD_POLICIES,
    READY,
    STARTED,
    DependsOn,
    JobShape,
    Produced,
    ReplicaGroup,
    RunPolicy,
    SchedulingPolicy,
)


def v1_shape(
    draft: JobDraft,
    framework: Framework,
    *,
    status: StatusProjection,
    annotations: JobAnnotations,
    gates: Gates,
    started: Gates = MappingProxyType({}),
    per_pod_services: bool = False,
    cluster_domain: ClusterDomain = UNSET,
) -> Produced:
    """The shape of a defaulted job (its draft) whose spec has `framework.replica_field`, laid
    out for the framework (`annotations`: its annotations as read at the edge; `gates`: the
    framework's gates as defaulting read them, `Defaulted.gates`; `started`: the types each
    type waits to have started, KubeDL's DAG, `kubedldag.dependencies`;
    `per_pod_services`: pods addressed by their own Services; `cluster_domain`: the operator's,
    for the names that carry one) with the `status` projection of Kubeflow's JobStatus the
    planner gives it, or why it cannot be laid out."""
    spec = draft.wire.get("spec")
    run_policy = run_policy_of(
        spec if isinstance(spec, Mapping) else {},
        annotations.progress_deadline,
        annotations.start_deadline,
    )
    layout, errors = lay_out(
        draft, framework, per_pod_services=per_pod_services, host_network=annotations.host_network
    )
    if layout is None:
        return Produced(None, run_policy, errors)
    if cluster_domain != UNSET:
        layout = replace(layout, cluster_domain=cluster_domain)
    groups = {
        name: ReplicaGroup.of(
            r,
            (
                *(DependsOn(other, READY) for other in gates.get(name, ())),
                *(DependsOn(other, STARTED) for other in started.get(name, ())),
            ),
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


def lay_out(
    draft: JobDraft,
    framework: Framework,
    *,
    per_pod_services: bool = False,
    host_network: hostnetwork.HostNetwork | None = None,
) -> tuple[JobLayout | None, list[str]]:
    """The engine's layout of a job from its draft's replica entries, or the problems that
    prevent one. `per_pod_services`: pods are addressed by their own Services (`per-pod`
    service mode); `host_network`: the job's host-network annotations as read at the edge
    (read here if None).

    Tolerates a job that was not defaulted: replica keys are matched case-insensitively,
    `replicas` defaults to the framework's default and `restartPolicy` to the framework's, so a
    job stored without the mutating webhook is laid out as the webhook would have defaulted it.
    """
    errors: list[str] = []
    obj = draft.wire
    meta = _mapping(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append("metadata.name: Required value: the job needs a name")
    if not isinstance(obj.get("spec"), Mapping):
        errors.append("spec: Required value: the job needs a spec")
        return None, errors
    field_name = framework.replica_field
    if not draft.replicas:
        errors.append(
            f"spec.{field_name}: Required value: at least one replica type of "
            f"{', '.join(framework.replica_types)}"
        )
        return None, errors
    canonical = {t.lower(): t for t in framework.replica_types}
    found: dict[str, ReplicaDraft] = {}
    for entry in draft.replicas:
        ctype = canonical.get(str(entry.key).lower())
        if ctype is None:
            errors.append(
                f"{entry.path}: Unsupported value: must be one of "
                f"{', '.join(map(QUOTE.encode, framework.replica_types))}"
            )
        elif ctype in found:  # `worker` and `Worker`: never let one silently replace the other
            errors.append(
                f"{entry.path}: Duplicate value: same replica type as {QUOTE.encode(str(found[ctype].key))} "
                "(replica type names ignore case)"
            )
        else:
            found[ctype] = entry
    replicas: dict[str, ReplicaLayout] = {}
    for ctype in (t for t in framework.replica_types if t in found):  # priority order
        laid, problem = _replica_layout(found[ctype], ctype, framework)
        if laid is None:
            errors.append(problem)
        else:
            replicas[ctype] = laid
    if errors or not isinstance(name, str):
        return None, errors
    namespace = str(meta.get("namespace") or "default")
    annotations = dict(_mapping(meta.get("annotations")))
    net = host_network if host_network is not None else hostnetwork.read_host_network(annotations)
    host_ports: dict[tuple[str, int], int] = {}
    if net.enabled:
        slots = [(t, i) for t, r in replicas.items() for i in range(r.replicas)]
        host_ports = hostnetwork.assign_ports(namespace, name, slots, *net.port_range)
    layout = JobLayout(
        kind=str(obj.get("kind") or framework.kind),
        api_version=str(obj.get("apiVersion") or "kubetrain.io/v1"),
        name=name,
        namespace=namespace,
        uid=str(meta.get("uid") or ""),
        spec=_mapping(obj.get("spec")),
        replicas=replicas,
        port_name=framework.port_name,
        host_ports=host_ports,
        annotations=annotations,
        resource=framework.plural,
        progress_ca_config_map=f"{name}{CA_CONFIG_MAP_SUFFIX}",
    )
    if per_pod_services:
        layout = replace(layout, host_format=framework.per_pod_host_format, per_pod_services=True)
    return layout, []


def _replica_layout(
    entry: ReplicaDraft, ctype: str, framework: Framework
) -> tuple[ReplicaLayout | None, str]:
    """One replica type's layout from its entry, or the one problem that prevents it."""
    if not isinstance(entry.spec, Mapping):
        return None, f"{entry.path}: Invalid value: must be an object with replicas and template"
    raw = entry.spec.get("replicas")
    count = framework.replicas_default(ctype) if raw is None else json_int(raw)
    if count is None or count < 0:
        return None, f"{entry.path}.replicas: Invalid value: {QUOTE.encode(raw)}: must be an integer >= 0"
    if not entry.containers or entry.container_index is None:
        return None, f"{entry.path}.template.spec.containers: Required value: at least one container"
    policy = entry.spec.get("restartPolicy") or framework.restart_policy_default(ctype)
    if policy not in RESTART_POLICIES:
        return None, (
            f"{entry.path}.restartPolicy: Unsupported value: {QUOTE.encode(policy)}: must be one of "
            f"{', '.join(map(QUOTE.encode, RESTART_POLICIES))}"
        )
    container = entry.containers[entry.container_index]
    port = container_port(
        container if isinstance(container, Mapping) else None, framework.port_name, framework.default_port
    )
    return ReplicaLayout(ctype, count, entry.template, policy, port, entry.container_index), ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _positive(value: int | None) -> int | None:
    return value if value is not None and value > 0 else None


def run_policy_of(
    spec: Mapping[str, Any], annotated_deadline: int | None = None, annotated_start: int | None = None
) -> RunPolicy:
    """Kubeflow's `runPolicy` (common/v1 RunPolicy) as the typed `RunPolicy`; without
    `progressDeadlineSeconds`, the progress deadline is the job's annotation's
    (`annotated_deadline`, `JobAnnotations.progress_deadline`); without `startDeadlineSeconds`,
    the start deadline is its annotation's (`annotated_start`)."""
    rp = _mapping(spec.get("runPolicy"))
    deadline = rp.get("progressDeadlineSeconds")
    start = rp.get("startDeadlineSeconds")
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
        start_deadline_seconds=annotated_start if start is None else _positive(json_int(start)),
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
