"""Failures and restarts (docs/behaviour.md §6): what a failed pod means, and how restarts are counted.

Verdict on a pod in phase Failed, by the replica type's restartPolicy:
- Never: the job fails (`JobFailed`).
- OnFailure / Always: the kubelet already restarts containers in place; a pod that still
  reaches Failed (eviction, node loss) is deleted and recreated under the same name.
- ExitCode: disruptions (reason Evicted/Preempted/NodeLost/…, or a `DisruptionTarget=True`
  condition) and exit codes from 128 up of the framework container (signals: 130, 137, 143) are
  retryable; 1-127 and negative codes are permanent (`PermanentExitCode`). A pod that failed
  with no exit code of the framework container (it never ran, e.g. an admission error on the
  node) or with 0 (another container failed) is retried: that is not the training code's verdict.

Failure rules (`runPolicy.podFailurePolicy.rules`, batch/v1 Job's podFailurePolicy) come first:
the first rule that matches a Failed pod decides — `FailJob` (fail now, reason `PodFailurePolicy`),
`Ignore` (recreate the pod, not counted against backoffLimit), `Count` (recreate it, counted) or
`RestartJob` (recreate every pod of the job as a new attempt, counted once). A rule matches on
`onExitCodes` (a container's current termination with a non-zero code, In/NotIn the values,
optionally only `containerName`; containers are looked at before init containers, as the Job
controller does) or `onPodConditions` (any listed condition with its status), and
only for its `replicaTypes` when given. A pod no rule matches gets the verdict above; a disruption
is then recreated without counting (except under `Never`, where it fails the job).

mpi-operator runs an MPIJob's Launcher as a batch Job (`newLauncherJob`: the Launcher's
restartPolicy on its pod, `backoffLimit` from runPolicy, unset meaning batch/v1's default of 6),
so the Job controller creates a new Launcher pod after each failure until that limit. An MPIJob
written as mpi-operator's (kubeflow.org, not created at v1: `mpilabels.mpi_operator_convention`)
keeps that: its `Never` Launcher's failure is recreated and counted instead of failing the job,
and its job-wide limit is 6 when unset (`launcher_job_verdict`, `backoff_limit`; mpi-operator
issue #651).

Counting (backoffLimit counts every restart: recreations AND in-place container restarts) uses
only what the operator recorded and what the kubelet reports, never what a pod's own metadata
says (anyone who may create or edit pods could write that):
- `status.replicaStatuses[type].restarts` — the type's total, as the operator last wrote it;
- `status.replicaStatuses[type].priorRestarts` — the part of that total the type's pods then
  present did not explain by their framework container's `restartCount` (recreations, and
  in-place restarts of pods that are gone);
- the `restartCount` of the framework container of each pod that fills a slot now (written by
  the kubelet through pods/status).
Restarts now = max(restarts, priorRestarts + Σ restartCount); a pod that left takes its
restartCount with it, which the recorded total keeps. With no `priorRestarts` recorded (a
status written before it existed) the present pods are taken to be counted already.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.frameworks.mpilabels import LAUNCHER, mpi_operator_convention

RETRY = "retry"
FAIL = "fail"
RESTART_JOB = "restart-job"
ACTIONS = {"FailJob": FAIL, "Ignore": RETRY, "Count": RETRY, "RestartJob": RESTART_JOB}
DISRUPTION_REASONS = frozenset(
    {"Evicted", "Preempted", "NodeLost", "NodeShutdown", "Shutdown", "Terminated", "DeadlineExceededByNode"}
)


@dataclass(frozen=True, slots=True)
class Verdict:
    action: str  # RETRY | FAIL | RESTART_JOB
    reason: str  # condition reason when FAIL: JobFailed | PermanentExitCode | PodFailurePolicy
    detail: str  # "container pytorch exited with code 137", "evicted: …"
    counted: bool = True  # whether the restart counts against backoffLimit


def container_status(pod: Mapping[str, Any], container_name: str) -> Mapping[str, Any] | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for cs in statuses:
        if isinstance(cs, Mapping) and cs.get("name") == container_name:
            return cs
    return None


def restart_count(pod: Mapping[str, Any], container_name: str) -> int:
    cs = container_status(pod, container_name)
    value = cs.get("restartCount") if cs else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def pod_attempt(label: Any) -> int:
    """The attempt a pod belongs to, from its `kubetrain.io/attempt` label (absent: 0)."""
    text = str(label) if label is not None else "0"
    return int(text) if text.isdigit() else 0


def job_attempt(status: Mapping[str, Any]) -> int:
    """The job's current attempt: `status.jobRestarts` (whole-job restarts so far)."""
    value = status.get("jobRestarts")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def exit_code(pod: Mapping[str, Any], container_name: str) -> int | None:
    """Exit code of the framework container's last termination (None if it never terminated)."""
    cs = container_status(pod, container_name)
    if not cs:
        return None
    for key in ("state", "lastState"):
        terminated = (cs.get(key) or {}).get("terminated")
        if isinstance(terminated, Mapping) and isinstance(terminated.get("exitCode"), int):
            code: int = terminated["exitCode"]
            return code
    return None


def disruption(pod: Mapping[str, Any]) -> str | None:
    """Why the pod was disrupted (eviction, preemption, node loss), or None."""
    status = pod.get("status") or {}
    reason = status.get("reason")
    if reason in DISRUPTION_REASONS:
        return f"{reason}: {status.get('message') or 'disrupted'}".rstrip()
    for cond in status.get("conditions") or []:
        if (
            isinstance(cond, Mapping)
            and cond.get("type") == "DisruptionTarget"
            and cond.get("status") == "True"
        ):
            return f"DisruptionTarget ({cond.get('reason') or 'disrupted'})"
    return None


def failed_init_container(pod: Mapping[str, Any]) -> str | None:
    """`<name> exited with code N: <termination message>` of the pod's failed init container
    (e.g. a code-sync fetch: the message names the repository, revision and error), or None."""
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated") if isinstance(cs, Mapping) else None
        code = terminated.get("exitCode") if isinstance(terminated, Mapping) else None
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            assert isinstance(terminated, Mapping)
            message = " ".join(str(terminated.get("message") or "").split())[:300]
            return f"{cs.get('name', '')} exited with code {code}" + (f": {message}" if message else "")
    return None


def _terminated_containers(pod: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(container name, exit code) of every container, then every init container, whose current
    state is terminated with a non-zero code — what batch/v1's onExitCodes looks at, in the
    order the Job controller looks (pod_failure_policy.go, `matchOnExitCodes`)."""
    status = pod.get("status") or {}
    out: list[tuple[str, int]] = []
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if not isinstance(cs, Mapping):
                continue
            terminated = (cs.get("state") or {}).get("terminated")
            code = terminated.get("exitCode") if isinstance(terminated, Mapping) else None
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                out.append((str(cs.get("name", "")), code))
    return out


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """The first pod failure rule that matched a Failed pod: its index and action, and what
    matched — a container's exit code, or a pod condition."""

    index: int
    action: str
    container: str = ""  # onExitCodes: the container (or init container) that matched
    exit_code: int | None = None
    condition: str = ""  # onPodConditions: the matching condition's type
    condition_status: str = ""
    condition_reason: str = ""

    @property
    def what(self) -> str:
        """ "container c exited with code 3", "condition DisruptionTarget=True (EvictionByEvictionAPI)"."""
        if self.condition:
            why = f" ({self.condition_reason})" if self.condition_reason else ""
            return f"condition {self.condition}={self.condition_status}{why}"
        return f"container {self.container} exited with code {self.exit_code}"


def _exit_code_match(on_exit: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str, int] | None:
    """batch/v1's onExitCodes (`getMatchingContainerFromList`): the first container (then init
    container) terminated with a non-zero code, of `containerName` when set, whose code is in
    (`In`) or not in (`NotIn`) the values; an unknown operator matches nothing."""
    operator = on_exit.get("operator")
    if operator not in ("In", "NotIn"):
        return None
    values = {v for v in on_exit.get("values") or [] if isinstance(v, int)}
    wanted = on_exit.get("containerName")
    for cname, code in _terminated_containers(pod):
        if (not wanted or wanted == cname) and ((code in values) == (operator == "In")):
            return cname, code
    return None


def _condition_match(patterns: Any, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """batch/v1's onPodConditions (`matchOnPodConditions`): the first pod condition with the
    type and status of any pattern (a pattern without status: True, batch/v1's default)."""
    wanted = [(p.get("type"), p.get("status") or "True") for p in patterns or [] if isinstance(p, Mapping)]
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and (cond.get("type"), cond.get("status")) in wanted:
            return cond
    return None


def first_match(
    rules: Sequence[Any], pod: Mapping[str, Any], replica_type: str = "", actions: Collection[str] = ()
) -> RuleMatch | None:
    """The first rule (in order) that matches the Failed `pod` of `replica_type`, as batch/v1's
    Job controller matches its podFailurePolicy (pod_failure_policy.go, `matchPodFailurePolicy`):
    a rule whose action is not one of `actions` (default: every action of
    `runPolicy.podFailurePolicy`) is skipped, as the Job controller skips an action it does not
    know; a rule with `replicaTypes` (kubetrain's) applies only to pods of those types."""
    allowed = actions or ACTIONS
    for index, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or rule.get("action") not in allowed:
            continue
        types = rule.get("replicaTypes")
        if types and replica_type not in types:
            continue
        action = str(rule["action"])
        on_exit = rule.get("onExitCodes")
        if isinstance(on_exit, Mapping):
            matched = _exit_code_match(on_exit, pod)
            if matched is not None:
                return RuleMatch(index, action, container=matched[0], exit_code=matched[1])
            continue
        cond = _condition_match(rule.get("onPodConditions"), pod)
        if cond is not None:
            return RuleMatch(
                index,
                action,
                condition=str(cond.get("type")),
                condition_status=str(cond.get("status")),
                condition_reason=str(cond.get("reason") or ""),
            )
    return None


def match_rules(
    rules: Sequence[Mapping[str, Any]], pod: Mapping[str, Any], replica_type: str
) -> Verdict | None:
    """The verdict of the first rule of `runPolicy.podFailurePolicy.rules` that matches the Failed
    `pod` of `replica_type`, or None when none does."""
    matched = first_match(rules, pod, replica_type)
    if matched is None:
        return None
    name = (pod.get("metadata") or {}).get("name", "?")
    action = matched.action
    detail = f"pod {name}: {matched.what}, matching {action} rule at index {matched.index}"
    reason = "PodFailurePolicy" if action == "FailJob" else ""
    return Verdict(ACTIONS[action], reason, detail, counted=action != "Ignore")


def classify_failed_pod(
    pod: Mapping[str, Any],
    restart_policy: str,
    container_name: str,
    rules: Sequence[Mapping[str, Any]] = (),
    replica_type: str = "",
) -> Verdict:
    """What a pod in phase Failed means for the job (see the module docstring)."""
    ruled = match_rules(rules, pod, replica_type) if rules else None
    if ruled is not None:
        return ruled
    name = (pod.get("metadata") or {}).get("name", "?")
    disrupted = disruption(pod)
    code = exit_code(pod, container_name)
    if disrupted:
        detail = f"pod {name} was disrupted ({disrupted})"
    elif code is not None:
        detail = f"pod {name}: container {container_name} exited with code {code}"
    elif (init := failed_init_container(pod)) is not None:
        detail = f"pod {name}: init container {init}"
    else:
        detail = f"pod {name} failed ({(pod.get('status') or {}).get('reason') or 'no exit code'})"
    if restart_policy == "Never":
        return Verdict(FAIL, "JobFailed", detail)
    if disrupted:
        return Verdict(RETRY, "", detail + " (a disruption: not counted)", counted=False)
    if restart_policy in ("OnFailure", "Always"):
        return Verdict(RETRY, "", detail)
    # ExitCode
    # training-operator's IsRetryableExitCode: every code from 128 up (a Windows container's
    # codes above 255 too); below it, permanent (negative ones too), 0 aside (the decision above).
    if code is None or code == 0 or code >= 128:
        return Verdict(RETRY, "", detail + (" (retryable)" if code and code >= 128 else ""))
    return Verdict(
        FAIL,
        "PermanentExitCode",
        f"{detail}: exit codes 1-127 and negative ones are permanent under restartPolicy ExitCode",
    )


# batch/v1 Job's `backoffLimit` when unset: what mpi-operator's launcher Job gets.
BATCH_JOB_BACKOFF_LIMIT = 6


def runs_as_launcher_job(job: Mapping[str, Any]) -> bool:
    """Whether `job` is an MPIJob whose Launcher mpi-operator would run as a batch Job (module
    docstring)."""
    return mpi_operator_convention(job)


def launcher_job_verdict(verdict: Verdict, replica_type: str) -> Verdict:
    """`verdict` on a failed pod of `replica_type` of a job that `runs_as_launcher_job`: a
    Launcher that failed under `Never` (no failure rule decided) is recreated and counted, as
    the Job controller makes a new pod; every other verdict stands (a `FailJob` rule, `ExitCode`'s
    permanent codes)."""
    if replica_type != LAUNCHER or verdict.action != FAIL or verdict.reason != "JobFailed":
        return verdict
    detail = f"{verdict.detail} (the Launcher is retried up to backoffLimit, as mpi-operator's launcher Job)"
    return Verdict(RETRY, "", detail)


def backoff_limit(limit: int | None, job: Mapping[str, Any]) -> int | None:
    """The job's backoffLimit: as written, or batch/v1's default for a job whose Launcher
    `runs_as_launcher_job` (unset: no limit)."""
    if limit is None and runs_as_launcher_job(job):
        return BATCH_JOB_BACKOFF_LIMIT
    return limit


@dataclass(slots=True)
class TypeRestarts:
    """Restart accounting of one replica type for one reconcile (see the module docstring)."""

    persisted: int  # status.replicaStatuses[type].restarts as last written
    prior: int  # status.replicaStatuses[type].priorRestarts as last written
    present: int  # Σ restartCount of the framework container over the pods filling slots now
    recreations: int = 0  # pods deleted this reconcile to be recreated

    @classmethod
    def recorded(cls, replica_status: Any, present: int) -> TypeRestarts:
        """From the type's recorded replica status and the present pods' restart counts."""
        status = replica_status if isinstance(replica_status, Mapping) else {}
        persisted = _count(status.get("restarts"))
        prior = status.get("priorRestarts")
        if not isinstance(prior, int) or isinstance(prior, bool) or prior < 0:
            prior = max(0, persisted - present)  # recorded before priorRestarts existed
        return cls(persisted, prior, present)

    @property
    def counted(self) -> int:
        return self.prior + self.present

    @property
    def base(self) -> int:
        """Restarts that already happened (never less than what was recorded)."""
        return max(self.persisted, self.counted)

    @property
    def total(self) -> int:
        return self.base + self.recreations

    @property
    def prior_after(self) -> int:
        """`priorRestarts` to record: the total the present pods do not explain (a pod deleted
        now is still present until it is gone; its restartCount leaves with it)."""
        return self.total - self.present

    @property
    def in_place(self) -> int:
        """Restarts seen this reconcile that the recorded count did not know about."""
        return max(0, self.counted - self.persisted)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
