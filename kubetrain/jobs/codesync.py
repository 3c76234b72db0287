"""Code sync from git (KubeDL's `kubedl.io/git-sync-config` annotation). Pure.

The annotation holds KubeDL's JSON (`pkg/code_sync`): `source` (the repository, required),
`branch`, `revision`, `depth`, `rootPath` (default `/code`), `destPath` (default: the
repository's name), `image`, `envs` (EnvVars for the fetching container), `maxFailures` (retries,
default 3), `ssh`, `sshFile`, `user`. Every pod of the job gets:

- an `emptyDir` volume `git-sync` and, before the framework's own init containers, the init
  container `git-sync-code` that fetches the code into `<rootPath>/<destPath>` (KubeDL's
  `GIT_SYNC_*` variables drive it, so KubeDL's `envs` keep their meaning);
- the volume mounted at `rootPath` in every container of every replica, so the code is at the same
  path everywhere, e.g. `/code/models/train.py` — and, as KubeDL mounts it, at
  `<workingDir>/<destPath>` in a container that sets `workingDir`.

Credentials never appear in the annotation: `password` (and a repository URL with a password in
it, and an inline `GIT_SYNC_PASSWORD` in `envs`) is refused; kubetrain's `credentialsSecret` names
a Secret in the job's namespace whose keys the kubelet gives the init container —
`username`/`password` (a `kubernetes.io/basic-auth` Secret) as `GIT_SYNC_USERNAME`/
`GIT_SYNC_PASSWORD`, or with `ssh: true` the key `ssh-privatekey` (a `kubernetes.io/ssh-auth`
Secret) mounted read-only at `/etc/git-secret`. The operator never reads the Secret.

The fetch writes the commit it checked out as its termination message (a failed one writes
`code sync failed: fetching <repo> at <rev>: <the error's last line>`, which the job's condition
repeats). The controller records the first commit in `status.codeSync`, and pods created after
that fetch exactly that commit (`GIT_SYNC_REV`), so every replica — and every restart — runs the
same code even when the branch moves (kubetrain.operator.codesyncstatus).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kubetrain.api.errors import QUOTE, FieldError, forbidden, invalid, json_object, json_type, required
from kubetrain.api.labels import KUBEDL_ANNOTATION_GIT_SYNC

ANNOTATION_PATH = f"metadata.annotations[{KUBEDL_ANNOTATION_GIT_SYNC}]"
INIT_CONTAINER = "git-sync-code"  # KubeDL's name
VOLUME = "git-sync"  # KubeDL's name
DEFAULT_ROOT = "/code"
DEFAULT_IMAGE = "docker.io/alpine/git:2.45.2"
DEFAULT_MAX_FAILURES = 3
SSH_SECRET_PATH = "/etc/git-secret"
SSH_SECRET_VOLUME = "git-sync-ssh"
SHA = re.compile(r"^[0-9a-f]{40}$")
FAILED_PREFIX = "code sync failed: "

STRING_FIELDS = ("source", "image", "rootPath", "destPath", "branch", "revision", "sshFile", "user")
FIELDS = (*STRING_FIELDS, "envs", "depth", "maxFailures", "ssh", "credentialsSecret")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

# The fetch, in POSIX sh: any image with `sh` and `git` runs it (KubeDL's git-sync images do).
# Retries `GIT_SYNC_MAX_SYNC_FAILURES` times, waiting `GIT_SYNC_WAIT` (default 2) seconds more
# after each failure; never prints the password (a credential helper
# reads it from the environment the kubelet filled in from the Secret).
FETCH_SCRIPT = r"""set -u
repo="$GIT_SYNC_REPO"; root="${GIT_SYNC_ROOT:-/code}"; dest="$GIT_SYNC_DEST"
ref="${GIT_SYNC_REV:-${GIT_SYNC_BRANCH:-HEAD}}"; tries="${GIT_SYNC_MAX_SYNC_FAILURES:-3}"
log="${TERMINATION_LOG:-/dev/termination-log}"
export HOME=/tmp GIT_TERMINAL_PROMPT=0
if [ -n "${GIT_SYNC_PASSWORD:-}" ]; then
  git config --global credential.helper \
    '!f() { echo "username=${GIT_SYNC_USERNAME:-git}"; echo "password=$GIT_SYNC_PASSWORD"; }; f'
fi
if [ "${GIT_SYNC_SSH:-false}" = true ]; then
  key="${GIT_SSH_KEY_FILE:-/etc/git-secret/ssh-privatekey}"
  export GIT_SSH_COMMAND="ssh -i $key -o StrictHostKeyChecking=accept-new"
fi
work="$root/.kubetrain-fetch"
fetch() {
  rm -rf "$work" && mkdir -p "$work" && cd "$work" && git init -q && git remote add origin "$repo" &&
    git fetch -q ${GIT_SYNC_DEPTH:+--depth "$GIT_SYNC_DEPTH"} origin "$ref" && git checkout -q FETCH_HEAD
}
failures=0
until out=$(fetch 2>&1); do
  failures=$((failures + 1))
  if [ "$tries" -ge 0 ] && [ "$failures" -gt "$tries" ]; then
    printf '%s\n' "$out" >&2
    last=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)
    printf 'code sync failed: fetching %s at %s: %s' "$repo" "$ref" "$last" > "$log"
    exit 1
  fi
  sleep $((failures * ${GIT_SYNC_WAIT:-2}))
done
sha=$(git -C "$work" rev-parse HEAD)
rm -rf "${root:?}/$dest" && mv "$work" "$root/$dest"
echo "fetched $repo at $ref: commit $sha into $root/$dest"
printf '%s' "$sha" > "$log"
"""


@dataclass(frozen=True)
class CodeSync:
    """A valid git-sync-config, defaults applied (KubeDL's `setDefaultSyncOpts`)."""

    source: str
    root_path: str = DEFAULT_ROOT
    dest_path: str = ""
    image: str = DEFAULT_IMAGE
    branch: str = ""
    revision: str = ""
    depth: str = ""
    max_failures: int = DEFAULT_MAX_FAILURES
    ssh: bool = False
    ssh_file: str = ""
    user: str = ""
    credentials_secret: str = ""
    envs: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    @property
    def requested(self) -> str:
        """The revision asked for, as the fetch resolves it: revision, else branch, else HEAD."""
        return self.revision or self.branch or "HEAD"

    @property
    def code_path(self) -> str:
        return posixpath.join(self.root_path, self.dest_path)


def default_dest(source: str) -> str:
    """KubeDL's default destPath: the repository's last path element without `.git`."""
    last = source.strip("/").split("/")[-1].split(":")[-1]
    return last[:-4] if last.endswith(".git") else last


def parse_code_sync(raw: Any) -> tuple[CodeSync | None, list[FieldError]]:
    """The config of an annotation value, or every problem with it (each naming its field)."""
    value, problems = json_object(raw, ANNOTATION_PATH)
    if value is None:
        return None, problems
    errors: list[FieldError] = []

    def path(key: str) -> str:
        return f"{ANNOTATION_PATH}.{key}"

    for key in value:
        if key == "password":
            errors.append(
                forbidden(
                    path(key),
                    "credentials are never written in the annotation: put them in a Secret "
                    "(keys username and password) and name it in credentialsSecret",
                )
            )
        elif key not in FIELDS:
            # KubeDL's own docs misspell `revision` as "revison" (which KubeDL ignores, fetching
            # the branch's head): a near miss names the field meant.
            near = difflib.get_close_matches(key, FIELDS, n=1, cutoff=0.8)
            meant = f" (did you mean {QUOTE.encode(near[0])}?)" if near else ""
            errors.append(invalid(path(key), f"unknown field{meant}; valid fields: {', '.join(FIELDS)}"))
    for key in STRING_FIELDS:
        if value.get(key) is not None and not isinstance(value[key], str):
            errors.append(invalid(path(key), f"must be a string, not {json_type(value[key])}"))
    source = value.get("source")
    if not source:
        errors.append(
            required(path("source"), "the git repository to fetch, e.g. https://github.com/org/repo.git")
        )
    elif isinstance(source, str):
        errors.extend(_source_errors(source, path("source")))
    root = value.get("rootPath") or DEFAULT_ROOT
    if isinstance(root, str) and (not root.startswith("/") or ".." in root.split("/")):
        errors.append(
            invalid(path("rootPath"), f"{QUOTE.encode(root)}: must be an absolute path without '..'")
        )
    dest = value.get("destPath") or (default_dest(source) if isinstance(source, str) else "")
    if isinstance(dest, str) and source and (not dest or "/" in dest or dest in (".", "..")):
        errors.append(invalid(path("destPath"), f"{QUOTE.encode(dest)}: must be one directory name (no '/')"))
    depth = value.get("depth")
    if depth is not None and not (
        (isinstance(depth, str) and depth.isdigit())
        or (isinstance(depth, int) and not isinstance(depth, bool))
    ):
        errors.append(invalid(path("depth"), f'{QUOTE.encode(depth)}: must be a number of commits, e.g. "1"'))
    failures = value.get("maxFailures")
    if failures is not None and (
        not isinstance(failures, int) or isinstance(failures, bool) or failures < -1
    ):
        errors.append(
            invalid(
                path("maxFailures"), f"{QUOTE.encode(failures)}: must be an integer >= -1 (-1: retry forever)"
            )
        )
    if value.get("ssh") is not None and not isinstance(value["ssh"], bool):
        errors.append(invalid(path("ssh"), f"must be a boolean, not {json_type(value['ssh'])}"))
    secret = value.get("credentialsSecret")
    if secret is not None and (
        not isinstance(secret, str) or len(secret) > 253 or not _DNS1123.match(secret)
    ):
        errors.append(
            invalid(path("credentialsSecret"), f"{QUOTE.encode(secret)}: must be the name of a Secret")
        )
    errors.extend(_env_errors(value.get("envs"), path("envs")))
    if errors:
        return None, errors
    assert isinstance(source, str) and isinstance(dest, str) and isinstance(root, str)
    return (
        CodeSync(
            source=source,
            root_path=posixpath.normpath(root),
            dest_path=dest,
            image=value.get("image") or DEFAULT_IMAGE,
            branch=value.get("branch") or "",
            revision=value.get("revision") or "",
            depth=str(depth) if depth is not None else "",
            max_failures=failures if failures not in (None, 0) else DEFAULT_MAX_FAILURES,
            ssh=bool(value.get("ssh")),
            ssh_file=value.get("sshFile") or "",
            user=value.get("user") or "",
            credentials_secret=secret or "",
            envs=tuple(value.get("envs") or ()),
        ),
        [],
    )


def _source_errors(source: str, path: str) -> list[FieldError]:
    if "://" in source:
        parts = urlsplit(source)
        if parts.password:
            return [
                forbidden(
                    path,
                    "the repository URL carries a password: put credentials in a Secret and name "
                    "it in credentialsSecret",
                )
            ]
    return []


def _env_errors(envs: Any, path: str) -> list[FieldError]:
    if envs is None:
        return []
    if not isinstance(envs, list):
        return [invalid(path, f"must be a list of EnvVars, not {json_type(envs)}")]
    errors: list[FieldError] = []
    for i, env in enumerate(envs):
        item = f"{path}[{i}]"
        if (
            not isinstance(env, dict)
            or not isinstance(env.get("name"), str)
            or not _ENV_NAME.match(env["name"])
        ):
            errors.append(
                invalid(
                    item, 'must be an EnvVar with a valid name, e.g. {"name": "GIT_SYNC_DEPTH", "value": "1"}'
                )
            )
            continue
        if env["name"] == "GIT_SYNC_PASSWORD" and "value" in env:
            errors.append(
                forbidden(
                    f"{item}.value",
                    "GIT_SYNC_PASSWORD is never written in the annotation: take it from a Secret "
                    "(valueFrom.secretKeyRef) or name the Secret in credentialsSecret",
                )
            )
    return errors


def code_sync_of(annotations: Mapping[str, Any]) -> CodeSync | None:
    """The job's valid code-sync config (None without one, or with a malformed one)."""
    raw = annotations.get(KUBEDL_ANNOTATION_GIT_SYNC)
    return None if raw is None else parse_code_sync(raw)[0]


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _secret_env(name: str, secret: str, key: str, optional: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": key}
    if optional:
        ref["optional"] = True
    return {"name": name, "valueFrom": {"secretKeyRef": ref}}


def init_container(cfg: CodeSync, resources: Any = None) -> dict[str, Any]:
    """The fetching init container (KubeDL's `InitContainer` + `setSyncOptsEnvs`)."""
    env: list[dict[str, Any]] = [dict(e) for e in cfg.envs]
    env.append(_env("GIT_SYNC_REPO", cfg.source))
    env.append(_env("GIT_SYNC_ONE_TIME", "true"))
    if cfg.max_failures >= 0:
        env.append(_env("GIT_SYNC_MAX_SYNC_FAILURES", str(cfg.max_failures)))
    if cfg.branch:
        env.append(_env("GIT_SYNC_BRANCH", cfg.branch))
    if cfg.revision:
        env.append(_env("GIT_SYNC_REV", cfg.revision))
    if cfg.depth:
        env.append(_env("GIT_SYNC_DEPTH", cfg.depth))
    env.append(_env("GIT_SYNC_ROOT", cfg.root_path))
    env.append(_env("GIT_SYNC_DEST", cfg.dest_path))
    mounts: list[dict[str, Any]] = [{"name": VOLUME, "mountPath": cfg.root_path}]
    if cfg.ssh:
        env.append(_env("GIT_SYNC_SSH", "true"))
        key_file = cfg.ssh_file or (f"{SSH_SECRET_PATH}/ssh-privatekey" if cfg.credentials_secret else "")
        if key_file:
            env.append(_env("GIT_SSH_KEY_FILE", key_file))
        if cfg.credentials_secret:
            mounts.append({"name": SSH_SECRET_VOLUME, "mountPath": SSH_SECRET_PATH, "readOnly": True})
    if cfg.user:
        env.append(_env("GIT_SYNC_USERNAME", cfg.user))
    elif cfg.credentials_secret and not cfg.ssh:
        env.append(_secret_env("GIT_SYNC_USERNAME", cfg.credentials_secret, "username", optional=True))
    if cfg.credentials_secret and not cfg.ssh:
        env.append(_secret_env("GIT_SYNC_PASSWORD", cfg.credentials_secret, "password"))
    container: dict[str, Any] = {
        "name": INIT_CONTAINER,
        "image": cfg.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", FETCH_SCRIPT],
        "env": env,
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if isinstance(resources, Mapping) and resources:
        container["resources"] = dict(resources)  # KubeDL: the first container's resources
    return container


def add_code_sync(annotations: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Add the init container, the volume(s) and the mounts to a pod spec (in place)."""
    cfg = code_sync_of(annotations)
    if cfg is None:
        return
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    resources = containers[0].get("resources") if containers else None
    init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    spec["initContainers"] = [init_container(cfg, resources), *init]
    volumes = list(spec.get("volumes") or [])
    volumes.append({"name": VOLUME, "emptyDir": {}})
    if cfg.ssh and cfg.credentials_secret:
        volumes.append(
            {
                "name": SSH_SECRET_VOLUME,
                "secret": {"secretName": cfg.credentials_secret, "defaultMode": 0o400},
            }
        )
    spec["volumes"] = volumes
    for container in containers:
        mounts = list(container.get("volumeMounts") or [])
        mounts.append({"name": VOLUME, "mountPath": cfg.root_path})
        workdir = container.get("workingDir")
        if isinstance(workdir, str) and workdir.startswith("/"):
            target = posixpath.join(workdir, cfg.dest_path)
            if target != cfg.code_path:
                mounts.append({"name": VOLUME, "mountPath": target, "subPath": cfg.dest_path})
        container["volumeMounts"] = mounts


def template_errors(replica_path: str, template: Any) -> list[FieldError]:
    """A template that already has a volume named like the code-sync ones, or an init container
    named `git-sync-code`, cannot take code sync (asked of a job with a valid code-sync config)."""
    if not isinstance(template, Mapping):
        return []
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return []
    errors: list[FieldError] = []
    for i, volume in enumerate(spec.get("volumes") or []):
        if isinstance(volume, Mapping) and volume.get("name") in (VOLUME, SSH_SECRET_VOLUME):
            errors.append(
                invalid(
                    f"{replica_path}.template.spec.volumes[{i}].name",
                    f"{QUOTE.encode(volume.get('name'))} is the volume {KUBEDL_ANNOTATION_GIT_SYNC} adds: "
                    "rename it",
                )
            )
    for i, container in enumerate(spec.get("initContainers") or []):
        if isinstance(container, Mapping) and container.get("name") == INIT_CONTAINER:
            errors.append(
                invalid(
                    f"{replica_path}.template.spec.initContainers[{i}].name",
                    f"{QUOTE.encode(INIT_CONTAINER)} is the init container {KUBEDL_ANNOTATION_GIT_SYNC} "
                    "adds: rename it",
                )
            )
    return errors
