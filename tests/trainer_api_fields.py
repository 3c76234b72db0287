"""Every field of Kubeflow Trainer's v1alpha1 API (TrainJob, TrainingRuntime,
ClusterTrainingRuntime and everything they embed, JobSet's JobSetSpec included), derived from
Trainer's Go types, as dotted JSON paths (`TrainJob.spec.trainer.numNodes`; `[]` marks a list).
A field of a Kubernetes, Volcano or metav1 type is one leaf, named with its Go type
(`TrainJob.spec.trainer.env[] (corev1.EnvVar)`): the Kubernetes API defines those.

Regenerate the list kept in tests/data/trainer/api_fields.txt from a clone of
github.com/kubeflow/trainer and one of github.com/kubernetes-sigs/jobset (its git directory):

    .venv/bin/python tests/trainer_api_fields.py TRAINER_GIT_DIR JOBSET_GIT_DIR \
        > tests/data/trainer/api_fields.txt
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TRAINER_TYPES = (
    "pkg/apis/trainer/v1alpha1/trainjob_types.go",
    "pkg/apis/trainer/v1alpha1/trainingruntime_types.go",
)
JOBSET_TYPES = "api/jobset/v1alpha2/jobset_types.go"
ROOTS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
# TrainingRuntime and ClusterTrainingRuntime share their spec: their fields are listed once.
RUNTIME = "(Cluster)TrainingRuntime"
# Kinds whose metadata and list wrappers are not fields of an object a user writes.
_SKIPPED_EMBEDS = {"metav1.TypeMeta"}

_STRUCT = re.compile(r"^type (\w+) struct \{(.*?)^\}", re.M | re.S)


def _git_show(git_dir: str, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", git_dir, "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def structs(source: str, prefix: str = "") -> dict[str, list[tuple[str, str]]]:
    """Each struct of a Go file: its fields as (json name, Go type); an embedded struct's json
    name is "" when inlined."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, body in _STRUCT.findall(source):
        fields: list[tuple[str, str]] = []
        for line in body.splitlines():
            line = line.split("//")[0] if not line.strip().startswith("//") else ""
            if "json:" not in line and not line.strip():
                continue
            parts = line.split("`")[0].split()
            tag = re.search(r'json:"([^"]*)"', line)
            if not parts or tag is None:
                continue
            json_name = tag.group(1).split(",")[0]
            go_type = parts[-1] if len(parts) >= 1 else ""
            if json_name == "-":
                continue
            fields.append((json_name, go_type))
        out[prefix + name] = fields
    return out


def _base(go_type: str) -> tuple[str, bool]:
    """The element type and whether it is a list."""
    is_list = go_type.startswith("[]")
    bare = go_type.replace("[]", "").replace("*", "")
    return bare, is_list


def walk(types: dict[str, list[tuple[str, str]]], root: str) -> list[str]:
    out: list[str] = []

    def resolve(bare: str, package: str) -> str | None:
        """The struct a Go type names, in the package of the struct naming it."""
        if bare.startswith("jobsetv1alpha2."):
            return f"jobset.{bare.split('.', 1)[1]}"
        local = f"{package}{bare}"
        return local if "." not in bare and local in types else None

    def visit(type_name: str, path: str, seen: tuple[str, ...]) -> None:
        package = type_name.rpartition(".")[0] + "." if "." in type_name else ""
        for json_name, go_type in types[type_name]:
            bare, is_list = _base(go_type)
            if bare in _SKIPPED_EMBEDS:
                continue
            local = resolve(bare, package)
            if json_name == "":  # inlined
                if local is not None:
                    visit(local, path, seen)
                continue
            field = f"{path}.{json_name}{'[]' if is_list else ''}"
            if local is not None and types[local] and local not in seen:
                visit(local, field, (*seen, local))
            else:
                shown = local.removeprefix("jobset.") if local is not None else bare
                out.append(f"{field} ({shown})")

    visit(root, root, (root,))
    return out


def jobset_version(trainer_git: str, rev: str = "HEAD") -> str:
    go_mod = _git_show(trainer_git, rev, "go.mod")
    match = re.search(r"sigs\.k8s\.io/jobset (v[\w.\-]+)", go_mod)
    if match is None:
        raise ValueError("go.mod names no sigs.k8s.io/jobset version")
    return match.group(1)


def derive(trainer_git: str, jobset_git: str, rev: str = "HEAD") -> list[str]:
    """Every field path, from Trainer's types at `rev` and JobSet's at the version Trainer's
    go.mod requires."""
    types: dict[str, list[tuple[str, str]]] = {}
    for path in TRAINER_TYPES:
        types.update(structs(_git_show(trainer_git, rev, path)))
    types.update(structs(_git_show(jobset_git, jobset_version(trainer_git, rev), JOBSET_TYPES), "jobset."))
    trainjob, namespaced, cluster = (walk(types, root) for root in ROOTS)
    runtime = [f.removeprefix("TrainingRuntime.") for f in namespaced]
    if runtime != [f.removeprefix("ClusterTrainingRuntime.") for f in cluster]:
        raise ValueError("TrainingRuntime and ClusterTrainingRuntime differ: list them apart")
    return trainjob + [f"{RUNTIME}.{f}" for f in runtime]


def read_list(path: Path) -> tuple[dict[str, str], list[str]]:
    """The kept list: its `# key: value` header lines and its field lines."""
    header: dict[str, str] = {}
    fields: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line.lstrip("# ").partition(": ")
            header[key] = value
        elif line.strip():
            fields.append(line)
    return header, fields


def main(argv: list[str]) -> int:
    trainer_git, jobset_git = argv
    head = subprocess.run(
        ["git", "-C", trainer_git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    print("# Kubeflow Trainer's v1alpha1 API fields (tests/trainer_api_fields.py)")
    print(f"# trainer: {head}")
    print(f"# jobset: {jobset_version(trainer_git)}")
    for field in derive(trainer_git, jobset_git):
        print(field)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
