"""Builders for jobs and pods used by the planner and env tests (tests/unit/test_planner_*,
tests/unit/test_env_*). Plain wire dicts, exactly what the API server would hand the controller."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import jobs

from kubetrain.frameworks.registry import FRAMEWORKS

# kind -> (replica map field, framework container), from the registry: one builder for every
# registered kind, unit and integration tests alike.
KINDS = {kind: (f.replica_field, f.container_name) for kind, f in FRAMEWORKS.items()}
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


_UIDS = iter(range(1, 10**9))


def _next_uid() -> str:
    return f"uid-{next(_UIDS)}"


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def container(name: str, image: str = "example.com/train:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replica(
    kind: str,
    replicas: int = 1,
    restart_policy: str | None = None,
    *,
    containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """One replica spec (tests/jobs.py `replica`); `spec` is merged into the pod spec."""
    return jobs.replica(
        kind,
        replicas,
        restart_policy=restart_policy,
        containers=containers,
        resources=resources,
        template_extra=spec,
        template_metadata={"labels": labels} if labels else None,
    )


def job(
    kind: str,
    replica_specs: dict[str, dict[str, Any]],
    *,
    name: str = "train",
    namespace: str = "ns",
    uid: str | None = None,
    generation: int = 1,
    run_policy: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A stored job (tests/jobs.py `job`) with the uid and generation the API server gives it."""
    obj = jobs.job(
        kind,
        name,
        replica_specs,
        namespace=namespace,
        run_policy=run_policy,
        spec_extra=spec,
        metadata_extra={"uid": uid or _next_uid(), "generation": generation},
    )
    if status is not None:
        obj["status"] = status
    return obj


def elastic_pytorch(policy: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """PyTorchJob "el" in namespace "ml": two Workers under elasticPolicy `policy` (`extra`: more
    of `job`'s options, such as spec fields or the uid)."""
    return job(
        "PyTorchJob",
        {"Worker": replica("PyTorchJob", 2)},
        name="el",
        namespace="ml",
        elasticPolicy=policy,
        **extra,
    )


def with_status(obj: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if status is None:
        out.pop("status", None)
    else:
        out["status"] = copy.deepcopy(status)
    return out


def pod(
    obj: dict[str, Any],
    rtype: str,
    index: int,
    phase: str = "Running",
    *,
    exit_code: int | None = None,
    restart_count: int = 0,
    reason: str | None = None,
    deleting: bool = False,
    uid: str | None = None,
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    container_name: str | None = None,
    owner_uid: str | None = None,
) -> dict[str, Any]:
    """A pod as the informer would show it, owned by `obj`."""
    name = obj["metadata"]["name"]
    cname = container_name or KINDS[obj["kind"]][1]
    state: dict[str, Any]
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}}
    elif phase == "Running":
        state = {"running": {"startedAt": ts(T0)}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    cstatus = {"name": cname, "restartCount": restart_count, "state": state}
    meta: dict[str, Any] = {
        "name": f"{name}-{rtype.lower()}-{index}",
        "namespace": obj["metadata"]["namespace"],
        "uid": uid or f"pod-{rtype.lower()}-{index}",
        "labels": {
            "kubetrain.io/job-name": name,
            "kubetrain.io/replica-type": rtype.lower(),
            "kubetrain.io/replica-index": str(index),
        },
        "ownerReferences": [
            {
                "apiVersion": "kubetrain.io/v1",
                "kind": obj["kind"],
                "name": name,
                "uid": owner_uid or obj["metadata"]["uid"],
                "controller": True,
            }
        ],
    }
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = ts(T0)
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [cstatus]}
    if reason:
        status["reason"] = reason
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}, "status": status}


def env_of(pod_obj: dict[str, Any], container_index: int = 0) -> dict[str, str]:
    env = pod_obj["spec"]["containers"][container_index].get("env") or []
    return {e["name"]: e["value"] for e in env}


def _with_version(obj: dict[str, Any], resource_version: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = resource_version
    return out


class Sim:
    """A tiny fake cluster for one job: applies Plans the way the controller does, and lets a
    test move pods through phases. Time is whatever the test passes as `now`."""

    def __init__(self, obj: dict[str, Any], config: Any = None) -> None:
        from kubetrain.operator.plan import PlannerConfig
        from kubetrain.operator.prepare import JobCache

        self.job = copy.deepcopy(obj)
        self.config = config or PlannerConfig()
        self.cache = JobCache()
        self.pods: dict[str, dict[str, Any]] = {}
        self.service: dict[str, Any] | None = None
        self.pod_services: dict[str, dict[str, Any]] = {}  # per-pod service mode (and foreign ones)
        self.pod_group: dict[str, Any] | None = None
        self.hpa: dict[str, Any] | None = None
        self.hpa_writes = 0
        # Extra children by (kind, name); only ConfigMaps are observed (Secrets are create-only).
        self.extra: dict[tuple[str, str], dict[str, Any]] = {}
        self.extra_writes: list[tuple[str, str, str]] = []  # (verb, kind, name)
        self.crd_installed = True
        self.status_writes = 0
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.events: list[Any] = []
        self.job_deleted = False
        self._uid = 0
        self.create_failure: Any = None  # the controller's record of the last create wave's failure
        self.terminal_recorded = False  # whether "this operator process" wrote the terminal status
        self.not_starting: Any = None  # what the PodsNotStarting condition lists, as the applier keeps it

    def observed(self) -> Any:
        from kubetrain.operator.plan import Observed

        name = self.job["metadata"]["name"]
        return Observed(
            pods=list(self.pods.values()),
            service=self.service,
            pod_group=self.pod_group,
            pod_group_crd_installed=self.crd_installed,
            hpa=self.hpa,
            extra=[o for (kind, _), o in self.extra.items() if kind == "ConfigMap"],
            create_failure=self.create_failure,
            terminal_recorded=self.terminal_recorded,
            not_starting=self.not_starting,
            job_services=[
                s
                for s in self.pod_services.values()
                if (s["metadata"].get("labels") or {}).get("kubetrain.io/job-name") == name
            ],
            service_named=self.pod_services.get,
        )

    def plan(self, now: datetime) -> Any:
        from kubetrain.operator.plan import plan

        return plan(self.job, self.observed(), now, self.config, cache=self.cache)

    def step(self, now: datetime) -> Any:
        """One reconcile with its plan applied."""
        p = self.plan(now)
        if p.delete_job:
            self.job_deleted = True
            return p
        if p.create_service is not None:
            self.service = copy.deepcopy(p.create_service)
        if p.create_pod_group is not None:
            self.pod_group = copy.deepcopy(p.create_pod_group)
        if p.update_pod_group is not None:
            assert self.pod_group is not None
            self.pod_group = copy.deepcopy(p.update_pod_group)
        if p.delete_service:
            self.service = None
        for new in p.create_pod_services:
            assert new["metadata"]["name"] not in self.pod_services
            self.pod_services[new["metadata"]["name"]] = copy.deepcopy(new)
        for name in p.delete_pod_services:
            self.pod_services.pop(name)
        if p.delete_pod_group:
            self.pod_group = None
        if p.create_hpa is not None:
            self.hpa = copy.deepcopy(p.create_hpa)
            self.hpa["metadata"]["resourceVersion"] = "1"
            self.hpa_writes += 1
        if p.update_hpa is not None:
            assert self.hpa is not None
            assert p.update_hpa["metadata"]["resourceVersion"] == self.hpa["metadata"]["resourceVersion"]
            self.hpa = copy.deepcopy(p.update_hpa)
            self.hpa["metadata"]["resourceVersion"] = str(int(self.hpa["metadata"]["resourceVersion"]) + 1)
            self.hpa_writes += 1
        if p.delete_hpa:
            self.hpa = None
            self.hpa_writes += 1
        for child in p.create_children:
            key = (child["kind"], child["metadata"]["name"])
            self.extra_writes.append(("create", *key))
            if key not in self.extra:  # else: 409 AlreadyExists
                self.extra[key] = _with_version(child, "1")
        for child in p.update_children:
            key = (child["kind"], child["metadata"]["name"])
            assert child["metadata"]["resourceVersion"] == self.extra[key]["metadata"]["resourceVersion"]
            self.extra_writes.append(("update", *key))
            rv = str(int(child["metadata"]["resourceVersion"]) + 1)
            self.extra[key] = _with_version(child, rv)
        for name in p.delete_pods:
            self.pods.pop(name, None)
            self.deleted.append(name)
        for new in p.create_pods:
            obj = copy.deepcopy(new)
            self._uid += 1
            obj["metadata"]["uid"] = f"pod-uid-{self._uid}"
            cname = obj["spec"]["containers"][0]["name"]
            obj["status"] = {
                "phase": "Pending",
                "containerStatuses": [{"name": cname, "restartCount": 0, "state": {"waiting": {}}}],
            }
            self.pods[obj["metadata"]["name"]] = obj
            self.created.append(obj["metadata"]["name"])
        if p.status is not None:
            self.job["status"] = copy.deepcopy(p.status)
            self.status_writes += 1
        if p.not_starting is not None:
            self.not_starting = p.not_starting
        self.events.extend(p.events)
        return p

    def set_phase(
        self,
        name: str,
        phase: str,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        restart_count: int | None = None,
    ) -> None:
        pod_obj = self.pods[name]
        status = pod_obj["status"]
        status["phase"] = phase
        cs = status["containerStatuses"][0]
        if exit_code is not None:
            cs["state"] = {"terminated": {"exitCode": exit_code}}
        elif phase == "Running":
            cs["state"] = {"running": {}}
        if restart_count is not None:
            cs["restartCount"] = restart_count
        if reason is not None:
            status["reason"] = reason

    def all_phase(self, phase: str, **kw: Any) -> None:
        for name in list(self.pods):
            self.set_phase(name, phase, **kw)

    def condition(self, ctype: str) -> dict[str, Any] | None:
        for c in (self.job.get("status") or {}).get("conditions") or []:
            if c["type"] == ctype:
                return dict(c)
        return None

    def is_true(self, ctype: str) -> bool:
        c = self.condition(ctype)
        return c is not None and c["status"] == "True"

    def restarts(self, rtype: str) -> int:
        return int(self.job["status"]["replicaStatuses"][rtype]["restarts"])


def running_sim(obj: dict[str, Any]) -> Sim:
    """The job's Sim with every pod created and Running, its Running condition True."""
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    assert sim.is_true("Running")
    return sim
