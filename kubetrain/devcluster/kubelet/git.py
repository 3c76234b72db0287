"""The git remotes the simulated kubelet's code-sync fetches reach, and what such a fetch ends
with. Pure.

A pod's init container whose env sets `GIT_SYNC_REPO` (the code-sync init container kubetrain
adds for `kubedl.io/git-sync-config`) is a fetch: of `GIT_SYNC_REV`, else `GIT_SYNC_BRANCH`, else
`HEAD`. As the real fetch does, it ends with exit 0 and the commit SHA as its termination message,
or exit 1 and `code sync failed: fetching <repo> at <ref>: <error>`. Any other init container
ends with exit 0 at once, as before.

Tests (and `kubetrain dev`) say what the remotes hold: `push(repo, ref, sha)` moves a branch,
`fail(repo, error)` makes every fetch of a repository fail. A ref never pushed resolves to a
SHA derived from (repo, ref), so a fetch is deterministic; a 40-hex ref is that commit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

SHA = re.compile(r"^[0-9a-f]{40}$")


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in container.get("env") or []:
        if isinstance(item, Mapping) and isinstance(item.get("value"), str):
            out[str(item.get("name"))] = item["value"]  # later entries win, as in a container
    return out


class SimulatedGit:
    def __init__(self) -> None:
        self.heads: dict[tuple[str, str], str] = {}
        self.failures: dict[str, str] = {}
        self.fetches: list[tuple[str, str, str]] = []  # (repo, ref, commit or "") in order

    def push(self, repo: str, ref: str, sha: str | None = None) -> str:
        """Point `ref` of `repo` at `sha` (default: a new commit) and return it."""
        if sha is None:
            sha = hashlib.sha1(f"{repo}@{ref}#{len(self.heads)}".encode()).hexdigest()
        self.heads[(repo, ref)] = sha
        return sha

    def fail(self, repo: str, error: str = "fatal: repository not found") -> None:
        self.failures[repo] = error

    def resolve(self, repo: str, ref: str) -> tuple[str | None, str | None]:
        """(commit, None) or (None, the error's last line)."""
        if repo in self.failures:
            return None, self.failures[repo]
        if SHA.match(ref):
            return ref, None
        sha = self.heads.get((repo, ref)) or hashlib.sha1(f"{repo}@{ref}".encode()).hexdigest()
        return sha, None

    def init_outcome(self, container: Mapping[str, Any]) -> tuple[int, str]:
        """(exit code, termination message) of one init container."""
        env = _env(container)
        repo = env.get("GIT_SYNC_REPO")
        if not repo:
            return 0, ""
        ref = env.get("GIT_SYNC_REV") or env.get("GIT_SYNC_BRANCH") or "HEAD"
        sha, error = self.resolve(repo, ref)
        self.fetches.append((repo, ref, sha or ""))
        if sha is None:
            return 1, f"code sync failed: fetching {repo} at {ref}: {error}"
        return 0, sha
