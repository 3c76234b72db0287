"""The planner's part for code sync (kubetrain.jobs.codesync): which commit a job runs. Pure.

Pods report their fetch through the `git-sync-code` init container's termination: exit 0 with
the commit SHA as message, or a non-zero exit with `code sync failed: …`. The first successful
fetch (earliest `finishedAt`, then pod name) is recorded in `status.codeSync` (repository,
requested revision, commit, pod) with a `CodeSyncCommit` event; from then on every pod created
— the rest of the job, recreations, new attempts — fetches that commit (`GIT_SYNC_REV`). Pods
of the first wave fetch at the same time; one that got another commit (the branch moved
between the fetches) while it is Pending or Running is deleted and recreated pinned, with a
`CodeSyncCommitMismatch` event, not counted as a restart. So every replica runs the recorded
commit. The record is kept for the job's lifetime; a change of repository or revision in the
annotation (read with the spec, once per generation) starts a new record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain.jobs.codesync import INIT_CONTAINER, SHA, CodeSync, code_sync_of

REASON_COMMIT = "CodeSyncCommit"
REASON_MISMATCH = "CodeSyncCommitMismatch"


def pin_commit(pod: dict[str, Any], commit: str) -> None:
    """Make a pod's fetch check out `commit`, whatever its branch points at now (in place)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for container in spec.get("initContainers") or []:
        if isinstance(container, dict) and container.get("name") == INIT_CONTAINER:
            env = [
                e
                for e in container.get("env") or []
                if not (isinstance(e, Mapping) and e.get("name") == "GIT_SYNC_REV")
            ]
            env.append({"name": "GIT_SYNC_REV", "value": commit})
            container["env"] = env


def fetched_commit(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(commit, finishedAt) of the pod's successful fetch, or None."""
    status = pod.get("status")
    statuses = status.get("initContainerStatuses") if isinstance(status, Mapping) else None
    for cs in statuses or []:
        if not isinstance(cs, Mapping) or cs.get("name") != INIT_CONTAINER:
            continue
        term = (cs.get("state") or {}).get("terminated")
        if isinstance(term, Mapping) and term.get("exitCode") == 0:
            message = str(term.get("message") or "").strip()
            if SHA.match(message):
                return message, str(term.get("finishedAt") or "")
    return None


def recorded_commit(status: Mapping[str, Any], cfg: CodeSync) -> str | None:
    """The commit recorded for this repository and revision (None: not yet)."""
    record = status.get("codeSync")
    if not isinstance(record, Mapping):
        return None
    if record.get("repository") != cfg.source or record.get("revision") != cfg.requested:
        return None
    commit = record.get("commit")
    return commit if isinstance(commit, str) and SHA.match(commit) else None


class CodeSyncDecision:
    """What the planner does about code sync this reconcile."""

    def __init__(self) -> None:
        self.record: dict[str, str] | None = None  # a new status.codeSync
        self.commit: str | None = None  # the commit new pods are pinned to
        self.recreate: list[tuple[str, str]] = []  # (pod name, its commit) to delete
        self.events: list[tuple[str, str, str]] = []


def decide(
    annotations: Mapping[str, Any],
    status: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    title: str,
) -> CodeSyncDecision:
    """Record the first fetched commit, pin new pods to it, recreate live pods that fetched another."""
    out = CodeSyncDecision()
    cfg = code_sync_of(annotations)
    if cfg is None:
        return out
    fetched: list[tuple[str, str, str, str]] = []  # (finishedAt, pod name, commit, phase)
    for pod in pods:
        result = fetched_commit(pod)
        if result is not None:
            meta = pod.get("metadata") or {}
            phase = str((pod.get("status") or {}).get("phase") or "")
            fetched.append((result[1], str(meta.get("name", "")), result[0], phase))
    commit = recorded_commit(status, cfg)
    if commit is None and fetched:
        _, first_pod, commit, _ = min(fetched)
        out.record = {"repository": cfg.source, "revision": cfg.requested, "commit": commit, "pod": first_pod}
        out.events.append(
            (
                "Normal",
                REASON_COMMIT,
                f"{title} runs commit {commit} of {cfg.source} ({cfg.requested}, fetched by pod "
                f"{first_pod}); every pod fetches this commit",
            )
        )
    out.commit = commit
    if commit is None:
        return out
    for _, name, got, phase in sorted(fetched, key=lambda f: f[1]):
        if got != commit and phase in ("Pending", "Running", ""):
            out.recreate.append((name, got))
            out.events.append(
                (
                    "Warning",
                    REASON_MISMATCH,
                    f"pod {name} fetched commit {got} of {cfg.source} but {title} runs {commit}: "
                    "recreating it to fetch that commit",
                )
            )
    return out
