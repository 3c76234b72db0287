"""The objects kubetrain makes for a TrainJob, named and labelled as JobSet + the Job controller
would make them, so tools that select JobSet's pods (the Kubeflow SDK, Kueue, dashboards) work:

- pod `<tj>-<step>-<jobIndex>-<completionIndex>` — the hostname JobSet's Indexed Job gives it —
  under subdomain `<tj>` (or the template's `network.subdomain`), with JobSet's labels and
  annotations (`jobset.sigs.k8s.io/jobset-name`, `replicatedjob-name`, `job-index`,
  `restart-attempt`, `job-restart-attempt` under a RestartJob rule, …), the Job
  controller's (`batch.kubernetes.io/job-name`, `controller-uid`, `job-completion-index` as label
  and annotation), the coordinator's address when the template names one
  (`jobset.sigs.k8s.io/coordinator`) and kubetrain's own (`kubetrain.io/job-name`, `job-kind`);
  the restart policy JobSet defaults (OnFailure);
- the headless Service `<tj>` selecting `jobset.sigs.k8s.io/jobset-name`, publishing not-ready
  addresses;
- the ConfigMap `<tj>-runtime-snapshot`: the runtime as the TrainJob first ran with it, and the
  run's own record (whole-gang restarts, single-job restarts, failed pods per job);
- the PersistentVolumeClaims `<claim>-<tj>` of the template's volumeClaimPolicies
  (`volumeclaims.py`).

Pure."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from kubetrain.api.gangschedulers import GangScheduler
from kubetrain.api.labels import LABEL_JOB_KIND, LABEL_JOB_NAME, LABEL_MANAGED_BY, MANAGED_BY_VALUE
from kubetrain.api.trainer import constants as c
from kubetrain.jobs import jobsetplacement as exclusive
from kubetrain.jobs.trainjob import volumeclaims
from kubetrain.jobs.trainjob.failurepolicy import restarts_jobs
from kubetrain.jobs.trainjob.gang import decorate, gang_steps
from kubetrain.jobs.trainjob.model import ResolvedTrainJob, Step

Obj = dict[str, Any]
SNAPSHOT_KEY = "runtime"
STATE_KEY = "state"


def owner_reference(trainjob: Mapping[str, Any]) -> Obj:
    meta = trainjob.get("metadata") or {}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_labels(name: str) -> dict[str, str]:
    return {LABEL_JOB_NAME: name, LABEL_JOB_KIND: c.TRAINJOB, LABEL_MANAGED_BY: MANAGED_BY_VALUE}


def job_name(tj: str, step: str, job_index: int) -> str:
    return f"{tj}-{step}-{job_index}"


def pod_name(tj: str, step: str, job_index: int, index: int) -> str:
    return f"{job_name(tj, step, job_index)}-{index}"


def pod_slots(resolved: ResolvedTrainJob, step: Step) -> list[tuple[int, int, str]]:
    """(job index, completion index, pod name) of every pod of one step."""
    return [
        (j, i, pod_name(resolved.name, step.name, j, i))
        for j in range(step.replicas)
        for i in range(step.pods)
    ]


def _jobset_meta(
    resolved: ResolvedTrainJob, step: Step, job_index: int, restarts: int, job_restarts: int | None
) -> dict[str, str]:
    steps = resolved.steps
    before = 0
    for s in steps:
        if s.name == step.name:
            break
        before += s.replicas
    group_before = 0
    for s in steps:
        if s.group_name != step.group_name:
            continue
        if s.name == step.name:
            break
        group_before += s.replicas
    jname = job_name(resolved.name, step.name, job_index)
    job_attempt = {} if job_restarts is None else {c.JOB_RESTART_ATTEMPT: str(job_restarts)}
    return {
        c.JOBSET_NAME: resolved.name,
        c.JOBSET_UID: resolved.uid,
        c.REPLICATED_JOB_NAME: step.name,
        c.RESTART_ATTEMPT: str(restarts),
        **job_attempt,
        c.REPLICATED_JOB_REPLICAS: str(step.replicas),
        c.GLOBAL_REPLICAS: str(sum(s.replicas for s in steps)),
        c.JOB_INDEX: str(job_index),
        c.JOB_KEY: hashlib.sha1(f"{resolved.namespace}/{jname}".encode()).hexdigest(),
        c.JOB_GLOBAL_INDEX: str(before + job_index),
        c.GROUP_NAME: step.group_name,
        c.GROUP_REPLICAS: str(sum(s.replicas for s in steps if s.group_name == step.group_name)),
        c.JOB_GROUP_INDEX: str(group_before + job_index),
    }


def build_pod(
    resolved: ResolvedTrainJob,
    trainjob: Mapping[str, Any],
    step: Step,
    job_index: int,
    index: int,
    *,
    restarts: int = 0,
    job_restarts: int = 0,
) -> Obj:
    """One pod of a step, ready to create: of JobSet restart attempt `restarts` and, under a
    failure policy that restarts single jobs (`RestartJob`), of its job's attempt
    `job_restarts` (`jobset.sigs.k8s.io/job-restart-attempt`, as JobSet labels it when its
    RestartJob feature is on; without such a rule the label is left out, as JobSet leaves it by
    default)."""
    template = step.pod_template
    tmeta: Mapping[str, Any] = template.get("metadata") or {}
    name = pod_name(resolved.name, step.name, job_index, index)
    per_job = restarts_jobs(resolved.failure_policy)
    jobset = _jobset_meta(resolved, step, job_index, restarts, job_restarts if per_job else None)
    jname = job_name(resolved.name, step.name, job_index)
    batch = {
        c.CONTROLLER_UID: resolved.uid,
        c.JOB_NAME: jname,
        c.CONTROLLER_UID_LEGACY: resolved.uid,
        c.JOB_NAME_LEGACY: jname,
        c.COMPLETION_INDEX: str(index),
    }
    if resolved.coordinator:
        jobset[c.COORDINATOR] = resolved.coordinator
    labels = {**(tmeta.get("labels") or {}), **jobset, **batch, **child_labels(resolved.name)}
    # JobSet's labelAndAnnotateObject: the exclusive-placement annotations after the template's.
    placement = exclusive.placement_annotations(
        resolved.jobset_annotations, step.job_metadata.get("annotations") or {}
    )
    annotations = {
        **(tmeta.get("annotations") or {}),
        **jobset,
        **placement,
        c.COMPLETION_INDEX: str(index),
    }
    spec: Obj = copy.deepcopy(dict(template.get("spec") or {}))
    spec["hostname"] = name  # the Indexed Job's `<job>-<index>`, with or without DNS hostnames
    if resolved.dns_hostnames:  # JobSet's constructJob
        spec["subdomain"] = resolved.subdomain
    spec.setdefault("restartPolicy", "OnFailure")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": resolved.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(trainjob)],
        },
        "spec": spec,
    }
    exclusive.apply(pod, resolved.namespace, jname)  # a follower's domain: the planner's (groupactive)
    return pod


def build_service(resolved: ResolvedTrainJob, trainjob: Mapping[str, Any]) -> Obj:
    """The headless Service JobSet creates (named after the subdomain)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": resolved.subdomain,
            "namespace": resolved.namespace,
            "labels": child_labels(resolved.name),
            "ownerReferences": [owner_reference(trainjob)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.JOBSET_NAME: resolved.name},
            "publishNotReadyAddresses": resolved.publish_not_ready_addresses,
        },
    }


def owned(obj: Mapping[str, Any], trainjob: Mapping[str, Any]) -> Obj:
    """An ML policy's object (kubetrain.jobs.trainjob.mpi) in the TrainJob's namespace, labelled
    and owned by it."""
    meta = trainjob.get("metadata") or {}
    out = copy.deepcopy(dict(obj))
    out["metadata"] = {
        **out.get("metadata", {}),
        "namespace": meta.get("namespace", ""),
        "labels": child_labels(str(meta.get("name", ""))),
        "ownerReferences": [owner_reference(trainjob)],
    }
    return out


def snapshot_name(tj: str) -> str:
    return f"{tj}{c.RUNTIME_SNAPSHOT_SUFFIX}"


def jobset_spec(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    """The runtime's JobSet template spec (`spec.template.spec`; empty when missing)."""
    template = (runtime.get("spec") or {}).get("template") or {}
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def runtime_ref(trainjob: Mapping[str, Any]) -> tuple[str, Any]:
    """(kind, name) of the runtime the TrainJob's `spec.runtimeRef` names (the name as given)."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return str(ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME), ref.get("name")


def snapshot_runtime(runtime: Mapping[str, Any]) -> Obj:
    """What of a runtime the snapshot keeps: kind, name, labels, spec."""
    meta = runtime.get("metadata") or {}
    return {
        "apiVersion": runtime.get("apiVersion", c.API_VERSION),
        "kind": runtime.get("kind", ""),
        "metadata": {"name": meta.get("name", ""), "labels": dict(meta.get("labels") or {})},
        "spec": copy.deepcopy(runtime.get("spec") or {}),
    }


def build_snapshot(trainjob: Mapping[str, Any], runtime: Mapping[str, Any], state: Mapping[str, Any]) -> Obj:
    meta = trainjob.get("metadata") or {}
    name = str(meta.get("name", ""))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": snapshot_name(name),
            "namespace": meta.get("namespace", ""),
            "labels": child_labels(name),
            "ownerReferences": [owner_reference(trainjob)],
        },
        "data": {
            SNAPSHOT_KEY: yaml.safe_dump(snapshot_runtime(runtime), sort_keys=True),
            STATE_KEY: json.dumps(dict(state), sort_keys=True),
        },
    }


def _load_runtime(text: str) -> object:
    """The snapshot's runtime: YAML, as Trainer 2.3 writes it (so a snapshot Trainer made is read
    too), or the JSON an earlier kubetrain wrote."""
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text)


def read_state(config_map: Mapping[str, Any]) -> Obj | None:
    """The run's state a snapshot ConfigMap holds ({} when it has none); None when unreadable."""
    text = (config_map.get("data") or {}).get(STATE_KEY) or "{}"
    try:
        state = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return state if isinstance(state, dict) else {}


def read_snapshot(config_map: Mapping[str, Any]) -> tuple[Obj | None, Obj]:
    """(the runtime, the run's state) a snapshot ConfigMap holds; (None, {}) when unreadable."""
    data = config_map.get("data") or {}
    state = read_state(config_map)
    try:
        runtime = _load_runtime(str(data.get(SNAPSHOT_KEY) or "null"))
    except (ValueError, yaml.YAMLError):
        return None, {}
    if state is None:
        return None, {}
    return (runtime if isinstance(runtime, dict) else None), state


def frozen_runtime(config_map: Mapping[str, Any], trainjob: Mapping[str, Any]) -> Obj | None:
    """The runtime `trainjob` is built from, when `config_map` is its snapshot: None when the
    TrainJob does not control it (one left by an earlier TrainJob of the name) or it is unreadable."""
    uid = (trainjob.get("metadata") or {}).get("uid")
    refs = (config_map.get("metadata") or {}).get("ownerReferences") or []
    owned = any(isinstance(r, Mapping) and r.get("controller") and r.get("uid") == uid for r in refs)
    if not uid or not owned:
        return None
    return read_snapshot(config_map)[0]


class JobSetChildren:
    """The TrainJob shape's children (`kubetrain.jobs.shape.ChildMaker`): made as JobSet and the
    Job controller make them."""

    def __init__(self, resolved: ResolvedTrainJob, trainjob: Mapping[str, Any]) -> None:
        self.resolved, self.trainjob = resolved, trainjob
        self.steps = {s.name: s for s in resolved.steps}
        self.gang_members = gang_steps(resolved).members

    def pod(self, group: str, index: int, attempt: int, job_attempt: int = 0) -> Obj:
        step = self.steps[group]
        j, i = divmod(index, max(step.pods, 1))
        return build_pod(self.resolved, self.trainjob, step, j, i, restarts=attempt, job_restarts=job_attempt)

    def service(self) -> Obj | None:
        """None under `network.enableDNSHostnames: false` (JobSet's createHeadlessSvcIfNecessary)."""
        return build_service(self.resolved, self.trainjob) if self.resolved.dns_hostnames else None

    def prerequisites(self) -> list[Obj]:
        return [owned(obj, self.trainjob) for obj in self.resolved.extra]

    def own(self, obj: Mapping[str, Any]) -> Obj:
        return owned(obj, self.trainjob)

    def unread_prerequisites(self) -> list[Obj]:
        """The PVCs of the template's volumeClaimPolicies (`volumeclaims.objects`)."""
        r = self.resolved
        owner = owner_reference(self.trainjob)
        return volumeclaims.objects(r.claims, r.name, r.namespace, owner, child_labels(r.name))

    def decorate(self, pod: Obj, scheduler: GangScheduler, group: str) -> None:
        """Only the gang's members (`gang_steps`): a step that runs before the gang (an
        initializer) keeps its template's scheduler and joins no PodGroup."""
        if group in self.gang_members:
            decorate(pod, scheduler, self.resolved.name, group)
