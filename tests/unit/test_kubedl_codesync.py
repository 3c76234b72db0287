"""KubeDL's `kubedl.io/git-sync-config`: the init container, shared volume and mounts every pod
gets; the annotation validated naming its field, credentials only through a Secret; the fetch
script run for real against a local repository; the planner's commit record and pinning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jobs import rendered

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.codesyncstatus import decide, pin_commit

GIT_SYNC = "kubedl.io/git-sync-config"
REPO = "https://github.com/kubetrain/examples.git"


def tfjob(config: Any, *, workdir: str | None = None) -> dict[str, Any]:
    def container() -> dict[str, Any]:
        c: dict[str, Any] = {
            "name": "tensorflow",
            "image": "tensorflow/tensorflow:2.16.1",
            "resources": {"limits": {"cpu": "2"}},
        }
        if workdir:
            c["workingDir"] = workdir
        return c

    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {
            "name": "mnist",
            "namespace": "ns",
            "annotations": {GIT_SYNC: config if isinstance(config, str) else json.dumps(config)},
        },
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [container()]}}},
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [container(), {"name": "sidecar", "image": "busybox"}],
                            "initContainers": [{"name": "prepare", "image": "busybox"}],
                        }
                    },
                },
            }
        },
    }


def pods(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return rendered(obj)


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_every_container_of_every_replica_mounts_the_code_at_the_same_path() -> None:
    out = pods(tfjob({"source": REPO, "branch": "main", "depth": "1"}))
    assert len(out) == 3
    for pod in out:
        spec = pod["spec"]
        init = spec["initContainers"][0]
        assert init["name"] == "git-sync-code" and init["command"][:2] == ["/bin/sh", "-c"]
        assert init["volumeMounts"] == [{"name": "git-sync", "mountPath": "/code"}]
        assert init["resources"] == {"limits": {"cpu": "2"}}  # KubeDL: the first container's
        env = env_of(init)
        assert env["GIT_SYNC_REPO"] == REPO and env["GIT_SYNC_BRANCH"] == "main"
        assert (env["GIT_SYNC_ROOT"], env["GIT_SYNC_DEST"], env["GIT_SYNC_DEPTH"]) == (
            "/code",
            "examples",
            "1",
        )
        assert env["GIT_SYNC_MAX_SYNC_FAILURES"] == "3"
        assert {"name": "git-sync", "emptyDir": {}} in spec["volumes"]
        for container in spec["containers"]:
            assert {"name": "git-sync", "mountPath": "/code"} in container["volumeMounts"]
    worker = next(p for p in out if p["metadata"]["name"] == "mnist-worker-0")
    assert [c["name"] for c in worker["spec"]["initContainers"]] == ["git-sync-code", "prepare"]


def test_working_dir_also_gets_the_code_as_kubedl_mounts_it() -> None:
    (pod, *_) = pods(tfjob({"source": REPO, "destPath": "src"}, workdir="/workspace"))
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert mounts == [
        {"name": "git-sync", "mountPath": "/code"},
        {"name": "git-sync", "mountPath": "/workspace/src", "subPath": "src"},
    ]


def test_credentials_come_from_the_named_secret_only() -> None:
    (pod, *_) = pods(tfjob({"source": REPO, "credentialsSecret": "git-creds"}))
    env = env_of(pod["spec"]["initContainers"][0])
    assert env["GIT_SYNC_PASSWORD"] == {"secretKeyRef": {"name": "git-creds", "key": "password"}}
    assert env["GIT_SYNC_USERNAME"] == {
        "secretKeyRef": {"name": "git-creds", "key": "username", "optional": True}
    }
    (pod, *_) = pods(
        tfjob({"source": "git@github.com:org/repo.git", "ssh": True, "credentialsSecret": "deploy-key"})
    )
    init = pod["spec"]["initContainers"][0]
    assert env_of(init)["GIT_SSH_KEY_FILE"] == "/etc/git-secret/ssh-privatekey"
    assert env_of(init)["GIT_SYNC_DEST"] == "repo"
    assert {"name": "git-sync-ssh", "mountPath": "/etc/git-secret", "readOnly": True} in init["volumeMounts"]
    assert {"name": "git-sync-ssh", "secret": {"secretName": "deploy-key", "defaultMode": 0o400}} in pod[
        "spec"
    ]["volumes"]
    assert all("git-sync-ssh" not in str(c.get("volumeMounts")) for c in pod["spec"]["containers"])


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({"source": REPO, "password": "hunter2"}, ".password", "put them in a Secret"),
        ({"source": "https://me:hunter2@github.com/o/r.git"}, ".source", "carries a password"),
        (
            {"source": REPO, "envs": [{"name": "GIT_SYNC_PASSWORD", "value": "x"}]},
            ".envs[0].value",
            "from a Secret",
        ),
        ({"branch": "main"}, ".source", "Required: the git repository"),
        ({"source": REPO, "depht": "1"}, ".depht", "unknown field"),
        # KubeDL's docs spell it "revison"; KubeDL then ignores it and fetches the branch's head.
        ({"source": REPO, "revison": "v1.2"}, ".revison", 'unknown field (did you mean "revision"?)'),
        ({"source": REPO, "depth": "shallow"}, ".depth", "number of commits"),
        ({"source": REPO, "rootPath": "code"}, ".rootPath", "absolute path"),
        ({"source": REPO, "destPath": "a/b"}, ".destPath", "one directory name"),
        ({"source": REPO, "maxFailures": "3"}, ".maxFailures", "integer"),
        ({"source": REPO, "ssh": "yes"}, ".ssh", "boolean"),
        ("{source: x}", "", "not valid JSON"),
    ],
)
def test_malformed_config_is_refused_naming_the_annotation_and_field(
    config: Any, path: str, message: str
) -> None:
    errors = validate_job(default_job(tfjob(config)).obj).errors
    assert [e.path for e in errors] == [f"metadata.annotations[{GIT_SYNC}]{path}"]
    assert message in str(errors[0])


def test_template_volume_named_like_the_code_volume_is_refused() -> None:
    job = tfjob({"source": REPO})
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["volumes"] = [
        {"name": "git-sync", "emptyDir": {}}
    ]
    errors = validate_job(default_job(job).obj).errors
    assert [e.path for e in errors] == ["spec.tfReplicaSpecs[PS].template.spec.volumes[0].name"]


# --- the fetch, run for real -------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "train.py").write_text('print("v1")\n')
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "v1", cwd=repo)
    return repo


def fetch(tmp_path: Path, config: dict[str, Any], pinned: str | None = None) -> tuple[int, str, Path]:
    (pod, *_) = pods(tfjob(config))
    init = pod["spec"]["initContainers"][0]
    if pinned:
        pin_commit(pod, pinned)
    env = {e["name"]: e["value"] for e in init["env"] if "value" in e}
    root = tmp_path / "code"
    env.update(
        GIT_SYNC_ROOT=str(root), TERMINATION_LOG=str(tmp_path / "termination-log"), PATH=os.environ["PATH"]
    )
    proc = subprocess.run(init["command"], env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, (tmp_path / "termination-log").read_text(), root / env["GIT_SYNC_DEST"]


@needs_git
def test_fetch_checks_out_the_branch_and_reports_its_commit(tmp_path: Path, origin: Path) -> None:
    head = git("rev-parse", "HEAD", cwd=origin)
    code, message, dest = fetch(
        tmp_path, {"source": str(origin), "branch": "main", "destPath": "src", "depth": "1"}
    )
    assert (code, message) == (0, head)
    assert (dest / "train.py").read_text() == 'print("v1")\n'


@needs_git
def test_a_pinned_pod_fetches_the_recorded_commit_after_the_branch_moved(
    tmp_path: Path, origin: Path
) -> None:
    first = git("rev-parse", "HEAD", cwd=origin)
    (origin / "train.py").write_text('print("v2")\n')
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "v2", cwd=origin)
    git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=origin)
    code, message, dest = fetch(
        tmp_path, {"source": str(origin), "branch": "main", "destPath": "src"}, pinned=first
    )
    assert (code, message) == (0, first)
    assert (dest / "train.py").read_text() == 'print("v1")\n'


@needs_git
def test_a_failed_fetch_ends_with_repository_revision_and_the_errors_last_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.git")
    config = {
        "source": missing,
        "revision": "v9",
        "maxFailures": 1,
        "envs": [{"name": "GIT_SYNC_WAIT", "value": "0"}],
    }
    code, message, _ = fetch(tmp_path, config)
    assert code == 1
    assert message == (f"code sync failed: fetching {missing} at v9: and the repository exists.")


# --- the planner's record ------------------------------------------------------------------------

A, B = "a" * 40, "b" * 40


def fetched(name: str, commit: str, finished: str, phase: str = "Running") -> dict[str, Any]:
    term = {"exitCode": 0, "message": commit, "finishedAt": finished}
    return {
        "metadata": {"name": name},
        "status": {
            "phase": phase,
            "initContainerStatuses": [{"name": "git-sync-code", "state": {"terminated": term}}],
        },
    }


ANNOTATIONS = {GIT_SYNC: json.dumps({"source": REPO, "branch": "main"})}


def test_first_fetch_is_recorded_and_a_pod_that_got_another_commit_is_recreated() -> None:
    pods_now = [
        fetched("mnist-worker-1", B, "2026-01-01T00:00:05Z"),
        fetched("mnist-worker-0", A, "2026-01-01T00:00:03Z"),
        fetched("mnist-ps-0", A, "2026-01-01T00:00:04Z", phase="Pending"),
    ]
    decision = decide(ANNOTATIONS, {}, pods_now, "TFJob mnist")
    assert decision.record == {"repository": REPO, "revision": "main", "commit": A, "pod": "mnist-worker-0"}
    assert decision.commit == A
    assert decision.recreate == [("mnist-worker-1", B)]
    assert [e[1] for e in decision.events] == ["CodeSyncCommit", "CodeSyncCommitMismatch"]


def test_recorded_commit_wins_and_finished_pods_are_left_alone() -> None:
    status = {"codeSync": {"repository": REPO, "revision": "main", "commit": B, "pod": "mnist-ps-0"}}
    pods_now = [fetched("mnist-worker-0", A, "2026-01-01T00:00:01Z", phase="Succeeded")]
    decision = decide(ANNOTATIONS, status, pods_now, "TFJob mnist")
    assert (decision.record, decision.commit, decision.recreate, decision.events) == (None, B, [], [])


def test_another_revision_in_the_annotation_starts_a_new_record() -> None:
    status = {"codeSync": {"repository": REPO, "revision": "dev", "commit": B}}
    decision = decide(ANNOTATIONS, status, [fetched("mnist-worker-0", A, "t")], "TFJob mnist")
    assert decision.record is not None and decision.record["commit"] == A
    assert decide({}, status, [fetched("mnist-worker-0", A, "t")], "TFJob mnist").commit is None


def test_pinning_replaces_the_revision_the_pod_fetches() -> None:
    (pod, *_) = pods(tfjob({"source": REPO, "revision": "v1"}))
    pin_commit(pod, A)
    env = [e for e in pod["spec"]["initContainers"][0]["env"] if e["name"] == "GIT_SYNC_REV"]
    assert env == [{"name": "GIT_SYNC_REV", "value": A}]


@pytest.mark.parametrize(("given", "tries"), [(None, "3"), (0, "3"), (1, "1"), (-1, None)])
def test_max_failures_zero_means_kubedls_default(given: Any, tries: str | None) -> None:
    # KubeDL's setDefaultSyncOpts replaces 0 (and absence) by 3; -1 retries for ever (no limit).
    from kubetrain.jobs.codesync import init_container, parse_code_sync

    config: dict[str, Any] = {"source": REPO}
    if given is not None:
        config["maxFailures"] = given
    cfg, errors = parse_code_sync(json.dumps(config))
    assert errors == [] and cfg is not None
    env = {e["name"]: e.get("value") for e in init_container(cfg)["env"]}
    assert env.get("GIT_SYNC_MAX_SYNC_FAILURES") == tries
