"""One builder for training-job manifests, shared by every tier (unit, integration, e2e).

Each kind's replica map field and framework container come from the framework registry, so a
newly registered kind is buildable here with no change. Plain wire dicts, as a user would submit
them. Import with `from jobs import job, replica` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kubetrain.api.errors import ErrorKind
from kubetrain.commands.render import render_job
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.env import JobLayout
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.jobdraft import read_draft
from kubetrain.jobs.v1shape import lay_out
from kubetrain.jobs.validation import validate_job

Obj = dict[str, Any]

API_VERSION = "kubetrain.io/v1"
IMAGE = "example.com/train:1"


def replica_field(kind: str) -> str:
    return FRAMEWORKS[kind].replica_field


def container_name(kind: str) -> str:
    # A kind whose framework container is container 0 whatever its name (MPIJob) gets "mpi".
    return FRAMEWORKS[kind].container_name or kind.lower().removesuffix("job")


def containers(*names: str, image: str = IMAGE) -> list[Obj]:
    """One container per name, all of `image` (a template with sidecars, or without the
    framework container)."""
    return [{"name": name, "image": image} for name in names]


def field_errors(valid: Obj, change: Callable[[Obj], Any]) -> list[tuple[str, ErrorKind]]:
    """(path, kind) of every error of a copy of `valid` after `change`, defaulted and validated
    as the webhooks do it."""
    obj = copy.deepcopy(valid)
    change(obj)
    return [(e.path, e.kind) for e in validate_job(default_job(obj).obj).errors]


def replica(
    kind: str,
    replicas: int | None = 1,
    *,
    image: str = IMAGE,
    restart_policy: str | None = None,
    resources: Obj | None = None,
    container_extra: Obj | None = None,
    containers: list[Obj] | None = None,
    template_extra: Obj | None = None,
    template_metadata: Obj | None = None,
) -> Obj:
    """One replica spec: `replicas` pods (None leaves the field out) of one framework container
    (or `containers` as given), `template_extra` merged into the pod spec."""
    if containers is None:
        main: Obj = {"name": container_name(kind), "image": image, **(container_extra or {})}
        if resources is not None:
            main["resources"] = resources
        containers = [main]
    template: Obj = {"spec": {"containers": containers, **(template_extra or {})}}
    if template_metadata is not None:
        template["metadata"] = template_metadata
    out: Obj = {"template": template}
    if replicas is not None:
        out = {"replicas": replicas, **out}
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def job(
    kind: str,
    name: str = "train",
    replicas: dict[str, Any] | None = None,
    *,
    namespace: str | None = "ns",
    image: str = IMAGE,
    restart_policy: str | None = None,
    resources: Obj | None = None,
    container_extra: Obj | None = None,
    template_extra: Obj | None = None,
    template_metadata: Obj | None = None,
    run_policy: Obj | None = None,
    spec_extra: Obj | None = None,
    metadata_extra: Obj | None = None,
    api_version: str = API_VERSION,
) -> Obj:
    """A job of `kind`. `replicas` maps replica type to a count ({"Worker": 2} by default) or to
    a replica spec used as given (see `replica`); the keyword options apply to every counted type."""
    specs: Obj = {}
    for rtype, n in (replicas if replicas is not None else {"Worker": 2}).items():
        if not isinstance(n, int) or isinstance(n, bool):
            specs[rtype] = n  # a replica spec as given, well-formed or not
            continue
        specs[rtype] = replica(
            kind,
            n,
            image=image,
            restart_policy=restart_policy,
            resources=resources,
            container_extra=container_extra,
            template_extra=template_extra,
            template_metadata=template_metadata,
        )
    spec: Obj = {replica_field(kind): specs}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    spec.update(spec_extra or {})
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata.update(metadata_extra or {})
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def exit_code_rule(action: str, *codes: int) -> Obj:
    """A podFailurePolicy rule: `action` when a container exits with one of `codes`."""
    return {"action": action, "onExitCodes": {"operator": "In", "values": list(codes)}}


def layout_of(obj: Obj, framework: Framework | None = None) -> tuple[JobLayout | None, list[str]]:
    """The engine's layout of a job dict, as the operator lays it out: from the job's draft,
    read once by the parse stage (`read_draft`), with `framework` (its kind's, by default)."""
    draft = read_draft(obj)
    chosen = framework if framework is not None else draft.framework
    assert chosen is not None, f"no framework serves kind {obj.get('kind')!r}"
    return lay_out(draft, chosen)


def laid_out(obj: Obj, framework: Framework | None = None) -> JobLayout:
    """`layout_of` a job the engine must accept: the test fails with the layout's errors if not."""
    out, errors = layout_of(obj, framework)
    assert out is not None, errors
    return out


def cluster_env(obj: Obj, framework: Framework, rtype: str, index: int) -> list[tuple[str, Any]]:
    """(name, value) of each variable `framework` sets in pod `index` of `rtype`, in order; a
    `valueFrom` variable (no `value`) as its source."""
    return [
        (e["name"], e["value"] if "value" in e else e["valueFrom"])
        for e in framework.cluster_env(laid_out(obj, framework), rtype, index)
    ]


def rendered(obj: Obj, kind: str = "Pod") -> list[Obj]:
    """The children of `kind` that `kubetrain render` makes of `obj`; the test fails with the
    errors if it refuses the job."""
    children, errors = render_job(obj)
    assert errors == [], errors
    return [c for c in children if c["kind"] == kind]


def big_tf_job(name: str, containers_per_template: int) -> Obj:
    """A big TFJob (the webhook benchmarks' large and xlarge jobs): 4 replica types (Chief 1,
    PS 4, Worker 32, Evaluator 1) sharing one pod template of `containers_per_template`
    containers, each with a command, args, 20 env vars, resources, two volume mounts and a port."""

    def container(i: int) -> dict[str, Any]:
        return {
            "name": "tensorflow" if i == 0 else f"sidecar-{i}",
            "image": f"registry.example.com/team/image-{i}:1.{i}",
            "command": ["python", "-m", "train"],
            "args": [f"--shard={i}", "--epochs=10"],
            "env": [{"name": f"VAR_{k}", "value": str(k)} for k in range(20)],
            "resources": {
                "requests": {"cpu": "2", "memory": "8Gi"},
                "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
            },
            "volumeMounts": [
                {"name": "data", "mountPath": "/data"},
                {"name": "cache", "mountPath": "/cache"},
            ],
            "ports": [{"name": f"p{i}", "containerPort": 9000 + i}],
        }

    template = {
        "metadata": {"labels": {"team": "research"}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [container(i) for i in range(containers_per_template)],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            ],
            "nodeSelector": {"gpu": "a100"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    specs = {
        t: {"replicas": n, "template": template}
        for t, n in (("Chief", 1), ("PS", 4), ("Worker", 32), ("Evaluator", 1))
    }
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"tfReplicaSpecs": specs, "runPolicy": {"backoffLimit": 3}},
    }
