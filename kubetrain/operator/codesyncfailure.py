"""A code-sync fetch that failed in a pod the kubelet keeps restarting. Pure.

Under restartPolicy Never a failed `git-sync-code` init container fails the pod, and the pod's
failure fails the job (operator/restarts.py). Under OnFailure and Always the kubelet restarts a
failed init container in place, with back-off, for ever: the pod stays Pending
(`Init:CrashLoopBackOff`) and never reaches Failed. Under ExitCode the pod (restartPolicy Never)
fails, and a pod that failed without an exit code of the framework container would be recreated
— to fetch the same repository again. The fetch has its own retry budget — the
annotation's `maxFailures` (default 3): the fetch script tries `maxFailures + 1` times before it
exits non-zero — so the planner treats the init container's failure as final when:

- its termination message is the fetch's own verdict (`code sync failed: …`): the retries the
  annotation allows are used up already, so the job fails at the first such termination; or
- it failed otherwise (killed, OOMKilled, no message) more times than `maxFailures` allows:
  failures counted as the kubelet reports them (`restartCount`, plus the current termination).
  `maxFailures: -1` (retry for ever) never fails the job this way.

The job then fails exactly as under Never: condition `Failed` with reason `JobFailed` and the
message `<job> has failed: pod <pod>: init container git-sync-code exited with code N: code sync
failed: fetching <repository> at <revision>: <the error's last line>`, and a Warning event with the
same reason and message. The job's backoffLimit and podFailurePolicy rules are not consulted: a
restart of the pod would fetch the same repository with the same credentials, and the rules
match only pods in phase Failed (batch/v1). The pod is left to cleanPodPolicy, as a Failed pod is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain.jobs.codesync import FAILED_PREFIX, INIT_CONTAINER, CodeSync

REASON = "JobFailed"  # the reason a failed pod under restartPolicy Never gives the job


def _last_termination(cs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The init container's latest termination: its current state, else its last state."""
    for key in ("state", "lastState"):
        state = cs.get(key)
        terminated = state.get("terminated") if isinstance(state, Mapping) else None
        if isinstance(terminated, Mapping):
            return terminated
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def failures_of(cs: Mapping[str, Any]) -> int:
    """How many times the init container failed, as the kubelet reports it: every restart of an
    init container follows a failure, and a current non-zero termination is one more."""
    count = _int(cs.get("restartCount"))
    current = (cs.get("state") or {}).get("terminated") if isinstance(cs.get("state"), Mapping) else None
    if isinstance(current, Mapping) and _int(current.get("exitCode")):
        count += 1
    return count


def fetch_failure(pod: Mapping[str, Any], cfg: CodeSync) -> str | None:
    """`pod <name>: init container git-sync-code exited with code N: <message>` when the pod's
    fetch failed for good (see the module docstring), else None."""
    status = pod.get("status")
    if not isinstance(status, Mapping) or status.get("phase") == "Succeeded":
        return None
    for cs in status.get("initContainerStatuses") or []:
        if not isinstance(cs, Mapping) or cs.get("name") != INIT_CONTAINER:
            continue
        terminated = _last_termination(cs)
        code = _int(terminated.get("exitCode")) if terminated is not None else 0
        if terminated is None or not code:
            return None
        message = " ".join(str(terminated.get("message") or "").split())[:300]
        failures = failures_of(cs)
        final = message.startswith(FAILED_PREFIX.strip()) or (
            cfg.max_failures >= 0 and failures > cfg.max_failures
        )
        if not final:
            return None
        name = (pod.get("metadata") or {}).get("name", "?")
        detail = f"pod {name}: init container {INIT_CONTAINER} exited with code {code}"
        if message:
            detail += f": {message}"
        if not message.startswith(FAILED_PREFIX.strip()):
            reason = terminated.get("reason")
            why = f" ({reason})" if isinstance(reason, str) and reason and reason != "Error" else ""
            detail += f"{why}, {failures} failures, more than maxFailures {cfg.max_failures} allows"
        return detail
    return None


def fetch_failures(pods: Iterable[Mapping[str, Any]], cfg: CodeSync | None) -> list[tuple[str, str]]:
    """(condition reason, detail) for every pod whose code-sync fetch failed for good, by pod name."""
    if cfg is None:
        return []
    found = []
    for pod in pods:
        detail = fetch_failure(pod, cfg)
        if detail is not None:
            found.append((str((pod.get("metadata") or {}).get("name", "")), detail))
    return [(REASON, detail) for _, detail in sorted(found)]
