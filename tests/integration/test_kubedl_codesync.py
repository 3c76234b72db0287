"""Code sync (`kubedl.io/git-sync-config`) through the real controller against devcluster: the
simulated kubelet runs the fetch, the first commit is recorded in the job's status, a pod
recreated after the branch moved still fetches that commit, and a failed fetch fails the job
with the repository, revision and error in its condition."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack

from .controller_support import Harness, condition, eventually, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = "https://github.com/kubetrain/examples.git"


def init_env(pod: dict[str, Any]) -> dict[str, str]:
    (init,) = [c for c in pod["spec"]["initContainers"] if c["name"] == "git-sync-code"]
    return {e["name"]: e["value"] for e in init["env"] if "value" in e}


async def test_every_replica_runs_the_recorded_commit_even_after_the_branch_moved(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("sync")
    first = h.sim.git.push(REPO, "main")
    annotations = {"kubedl.io/git-sync-config": json.dumps({"source": REPO, "branch": "main"})}
    job = job_manifest(
        "TFJob", "cs", {"PS": 1, "Worker": 2}, restart_policy="ExitCode", annotations=annotations
    )
    await h.create_job(job, ns)
    pods = await h.wait_pods(ns, "cs", 3, phase="Running")
    for pod in pods:
        assert {"name": "git-sync", "mountPath": "/code"} in pod["spec"]["containers"][0]["volumeMounts"]
        (init,) = pod["status"]["initContainerStatuses"]
        assert init["state"]["terminated"]["message"] == first

    async def recorded() -> dict[str, Any] | None:
        got = await h.job("TFJob", ns, "cs")
        record = ((got or {}).get("status") or {}).get("codeSync")
        return record if record and record.get("commit") else None

    record = await eventually(recorded, what="status.codeSync recorded")
    assert record["repository"] == REPO and record["revision"] == "main" and record["commit"] == first
    event = await h.wait_event(ns, "cs", "CodeSyncCommit")
    assert first in event["message"]
    moved = h.sim.git.push(REPO, "main")  # the branch moves during the job
    assert moved != first
    old = await h.pod(ns, "cs-worker-1")
    assert old is not None
    await h.sim.finish(ns, "cs-worker-1", exit_code=137)  # retryable: the pod is recreated
    new = await h.wait_recreated(ns, "cs-worker-1", old["metadata"]["uid"])
    assert init_env(new)["GIT_SYNC_REV"] == first

    async def fetched_pinned() -> bool:
        pod = await h.pod(ns, "cs-worker-1")
        statuses = ((pod or {}).get("status") or {}).get("initContainerStatuses") or []
        return bool(statuses) and statuses[0]["state"]["terminated"]["message"] == first

    await eventually(fetched_pinned, what="the recreated pod fetched the recorded commit")
    await h.finish_all(ns, "cs")
    await h.wait_condition("TFJob", ns, "cs", "Succeeded")


async def test_a_failed_fetch_fails_the_job_naming_repository_revision_and_error(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("syncfail")
    repo = "https://github.com/kubetrain/private.git"
    h.sim.git.fail(repo, "fatal: could not read Username for 'https://github.com': terminal prompts disabled")
    annotations = {"kubedl.io/git-sync-config": json.dumps({"source": repo, "revision": "v1.2"})}
    job = job_manifest("PyTorchJob", "bad", {"Master": 1}, restart_policy="Never", annotations=annotations)
    await h.create_job(job, ns)
    failed = await h.wait_condition("PyTorchJob", ns, "bad", "Failed")
    message = (condition(failed, "Failed") or {}).get("message", "")
    assert (
        "pod bad-master-0: init container git-sync-code exited with code 1: code sync failed: fetching "
        f"{repo} at v1.2: fatal: could not read Username for 'https://github.com': terminal prompts disabled"
    ) in message


@pytest.mark.parametrize("policy", ["OnFailure", "ExitCode"])
async def test_a_failed_fetch_the_kubelet_keeps_restarting_fails_the_job_as_under_never(
    env: tuple[DevStack, Harness], policy: str
) -> None:
    _, h = env
    ns = await h.namespace(f"syncloop-{policy.lower()}")
    repo = "https://github.com/kubetrain/gone.git"
    h.sim.git.fail(repo, "fatal: repository 'https://github.com/kubetrain/gone.git/' not found")
    annotations = {"kubedl.io/git-sync-config": json.dumps({"source": repo, "branch": "dev"})}
    job = job_manifest("PyTorchJob", "loop", {"Master": 1}, restart_policy=policy, annotations=annotations)
    await h.create_job(job, ns)
    failed = await h.wait_condition("PyTorchJob", ns, "loop", "Failed")
    cond = condition(failed, "Failed") or {}
    expected = (
        "pod loop-master-0: init container git-sync-code exited with code 1: code sync failed: fetching "
        f"{repo} at dev: fatal: repository 'https://github.com/kubetrain/gone.git/' not found"
    )
    assert cond.get("reason") == "JobFailed" and expected in cond.get("message", "")
    event = await h.wait_event(ns, "loop", "JobFailed")
    assert expected in event["message"]
