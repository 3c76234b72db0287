"""When a code-sync fetch the kubelet keeps restarting fails the job (operator/codesyncfailure.py):
at once when the fetch reports its own failure (its retries are used up), after more than
maxFailures failures otherwise, never with maxFailures -1 or while the fetch is still retrying."""

from __future__ import annotations

from typing import Any

from kubetrain.jobs.codesync import CodeSync
from kubetrain.operator.codesyncfailure import failures_of, fetch_failure, fetch_failures

CFG = CodeSync(source="https://git.example.com/a/b.git", dest_path="b", max_failures=2)
FETCH_FAILED = "code sync failed: fetching https://git.example.com/a/b.git at main: fatal: not found"


def pod(cs: dict[str, Any], phase: str = "Pending", name: str = "job-worker-0") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"phase": phase, "initContainerStatuses": [{"name": "git-sync-code", **cs}]},
    }


def backing_off(restarts: int, code: int, message: str = "", reason: str = "Error") -> dict[str, Any]:
    terminated = {"exitCode": code, "reason": reason, **({"message": message} if message else {})}
    return {
        "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": terminated},
    }


def test_the_fetchs_own_failure_fails_the_job_at_once_with_its_message() -> None:
    detail = fetch_failure(pod(backing_off(1, 1, FETCH_FAILED)), CFG)
    assert detail == f"pod job-worker-0: init container git-sync-code exited with code 1: {FETCH_FAILED}"


def test_other_failures_count_until_more_than_max_failures() -> None:
    assert fetch_failure(pod(backing_off(2, 137, reason="OOMKilled")), CFG) is None
    detail = fetch_failure(pod(backing_off(3, 137, reason="OOMKilled")), CFG)
    assert detail == (
        "pod job-worker-0: init container git-sync-code exited with code 137 (OOMKilled), "
        "3 failures, more than maxFailures 2 allows"
    )
    forever = CodeSync(source=CFG.source, dest_path="b", max_failures=-1)
    assert fetch_failure(pod(backing_off(50, 137)), forever) is None


def test_a_current_termination_counts_once_more_than_the_restarts() -> None:
    cs = {"restartCount": 2, "state": {"terminated": {"exitCode": 2}}}
    assert failures_of(cs) == 3
    assert fetch_failure(pod(cs), CFG) is not None
    running = {"restartCount": 2, "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 2}}}
    assert failures_of(running) == 2 and fetch_failure(pod(running), CFG) is None


def test_a_fetch_that_succeeded_after_restarts_or_a_job_without_code_sync_is_fine() -> None:
    ok = {"restartCount": 2, "state": {"terminated": {"exitCode": 0, "message": "a" * 40}}}
    assert fetch_failure(pod(ok), CFG) is None
    assert fetch_failures([pod(backing_off(1, 1, FETCH_FAILED))], None) == []


def test_every_failed_pod_is_reported_in_name_order_with_the_reason_never_gives() -> None:
    pods = [pod(backing_off(1, 1, FETCH_FAILED), name=n) for n in ("j-worker-1", "j-master-0")]
    got = fetch_failures(pods, CFG)
    assert [reason for reason, _ in got] == ["JobFailed", "JobFailed"]
    assert got[0][1].startswith("pod j-master-0:") and got[1][1].startswith("pod j-worker-1:")
