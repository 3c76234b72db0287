"""The steps of a TrainJob as kubetrain runs them (built by `resolve`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.jobs.jobsuccess import SuccessRule
from kubetrain.jobs.trainjob.mlenv import MLPolicyEnv
from kubetrain.jobs.trainjob.volumeclaims import VolumeClaim


@dataclass(frozen=True)
class Step:
    """One replicated job: `replicas` jobs of `pods` indexed pods each."""

    name: str
    ancestor: str  # the trainjob-ancestor-step label ("" when none)
    group_name: str
    replicas: int
    pods: int
    backoff_limit: int
    job_metadata: Mapping[str, Any]  # the Job template's labels/annotations
    pod_template: Mapping[str, Any]  # the PodTemplateSpec after patches and overrides
    depends_on: tuple[tuple[str, str], ...] = ()  # (step name, "Ready" | "Complete")
    # The Job's `podFailurePolicy.rules` as written (podfailurepolicy.py; none: every failed pod
    # counts against `backoff_limit`).
    pod_failure_rules: tuple[Mapping[str, Any], ...] = ()
    # The Job's `activeDeadlineSeconds` (None: none), counted from each of its Jobs' start.
    active_deadline_seconds: int | None = None
    # The Job's `backoffLimitPerIndex` and `maxFailedIndexes` (None: unset).
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    # The Job's `successPolicy.rules` (jobsuccess.py; none: a Job succeeds when all its pods do).
    success_rules: tuple[SuccessRule, ...] = ()


@dataclass(frozen=True)
class ResolvedTrainJob:
    name: str
    namespace: str
    uid: str
    steps: tuple[Step, ...]
    num_nodes: int
    subdomain: str
    publish_not_ready_addresses: bool
    success_operator: str  # All | Any
    success_targets: tuple[str, ...]  # empty: every step
    max_restarts: int
    policy: str  # the ML policy source ("torch", …; "" for none)
    pod_group_policy: Mapping[str, Any] = field(default_factory=dict)
    # Objects the ML policy needs besides pods (MPI: the SSH Secret, the hostfile ConfigMap),
    # without namespace, labels and ownerReference.
    extra: tuple[dict[str, Any], ...] = ()
    ttl_set: bool = False
    # The runtime template's JobSet failurePolicy (None: a failed step fails the TrainJob).
    failure_policy: Mapping[str, Any] | None = None  # the runtime template sets ttlSecondsAfterFinished
    # JobSet's run policies (jobsetpolicy.py): startupPolicy InOrder, restartStrategy
    # BlockingRecreate, the coordinator's address ("" for none).
    in_order: bool = False
    blocking_recreate: bool = False
    coordinator: str = ""
    # The ML policy's env plug-in (mlenv.py): its env and port, added to each pod.
    env: MLPolicyEnv = field(default_factory=MLPolicyEnv)
    # The template's volumeClaimPolicies (volumeclaims.py): the PVCs created before the pods.
    claims: tuple[VolumeClaim, ...] = ()
    # JobSet's network.enableDNSHostnames (default true): false makes no headless Service and
    # gives the pods no subdomain.
    dns_hostnames: bool = True
    # The runtime's JobSet template metadata annotations (the JobSet's: exclusive placement).
    jobset_annotations: Mapping[str, Any] = field(default_factory=dict)

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def total_pods(self) -> int:
        return sum(s.replicas * s.pods for s in self.steps)
