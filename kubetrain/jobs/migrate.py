"""Older Kubeflow job layouts rewritten as `kubetrain.io/v1` (or `kubeflow.org/v1`). Pure.

What is converted, mechanically, and said line by line:
- `apiVersion` `kubeflow.org/v1alpha2`, `v1beta1`, `v1beta2` or `v1` (and `kubetrain.io/v1`) →
  the target group's `v1`: the replica maps (`tfReplicaSpecs`, `pytorchReplicaSpecs`,
  `mxReplicaSpecs`) kept their shape across those versions;
- the run policy at spec level — tf-operator before 1.0's `v1`, pytorch-operator, and
  mxnet-operator's `v1` (`RunPolicy` inlined): `cleanPodPolicy`, `ttlSecondsAfterFinished`,
  `activeDeadlineSeconds`, `backoffLimit`, `schedulingPolicy` → `spec.runPolicy.*`.

KubeDL's layouts (`training.kubedl.io/v1alpha1`, and KubeDL 0.1's `xgboostjob.kubeflow.org/v1alpha1`
XGBoostJob) are converted by `kubetrain.jobs.kubedllayout`: the inline run policy into
`spec.runPolicy`, `schedulingPolicy.priorityClassName` → `priorityClass`, a framework container of
KubeDL's name renamed (XGBoost's `xgboostjob` → `xgboost`); KubeDL fields kubetrain does not run
(`cronPolicy`, `modelVersion`, `cacheBackend`, a numeric `priority`) are refused, saying why.

What is refused, saying why: `v1alpha1` (a list of replica specs with `tfReplicaType`, other
fields with other meanings), another group, a kind kubetrain does not serve, a spec-level field
that `runPolicy` already sets differently, and a result that does not validate (e.g.
mxnet-operator's MXJob `successPolicy`, which MXJob no longer has).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.errors import QUOTE
from kubetrain.api.groups import KUBEDL_GROUP, KUBEDL_VERSION, KUBEFLOW_GROUP, KUBETRAIN_GROUP
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import converted_versions, get_framework, job_version, known_kinds
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.kubedllayout import layout_errors, to_v1
from kubetrain.jobs.validation import validate_job

# The groups a job migrates to; KubeDL's XGBoostJob group of KubeDL 0.1 (xgboostjob.kubeflow.org).
MIGRATION_GROUPS = (KUBETRAIN_GROUP, KUBEFLOW_GROUP)
KUBEDL_XGBOOST_GROUP = "xgboostjob.kubeflow.org"
# Versions whose replica maps have today's shape.
CONVERTIBLE_VERSIONS = ("v1alpha2", "v1beta1", "v1beta2", "v1")
RUN_POLICY_FIELDS = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
)


@dataclass
class Migration:
    obj: dict[str, Any] | None  # the rewritten job (None when refused)
    changes: list[str] = field(default_factory=list)  # one line per change made
    refusals: list[str] = field(default_factory=list)  # why it cannot be converted

    @property
    def ok(self) -> bool:
        return self.obj is not None and not self.refusals


def migrate_job(obj: Any, group: str = KUBETRAIN_GROUP) -> Migration:
    """`obj` in the `group/v1` layout, with what changed — or why it cannot be converted."""
    if group not in MIGRATION_GROUPS:
        raise ValueError(f"group must be one of {', '.join(MIGRATION_GROUPS)}, not {group!r}")
    if not isinstance(obj, dict):
        return Migration(None, refusals=["not a Kubernetes object (a mapping with apiVersion and kind)"])
    kind = obj.get("kind")
    framework = get_framework(kind) if isinstance(kind, str) else None
    if framework is None:
        served = ", ".join(known_kinds())
        return Migration(None, refusals=[f"kind {QUOTE.encode(kind)} is not one kubetrain serves ({served})"])
    api_version = obj.get("apiVersion")
    source_group, _, version = str(api_version or "").partition("/")
    if source_group in (KUBEDL_GROUP, KUBEDL_XGBOOST_GROUP) and version == KUBEDL_VERSION:
        return _migrate_kubedl(obj, group)
    if source_group not in (KUBEFLOW_GROUP, KUBETRAIN_GROUP):
        refusal = f"apiVersion {QUOTE.encode(api_version)} is not a Kubeflow or kubetrain version"
        return Migration(None, refusals=[refusal])
    if version == "v1alpha1":
        return Migration(
            None,
            refusals=[
                "apiVersion kubeflow.org/v1alpha1 lays replicas out as a list (replicaSpecs with "
                "tfReplicaType, terminationPolicy, tfImage) that has no mechanical "
                f"{framework.replica_field} equivalent: rewrite it by hand as one map entry per "
                "replica type"
            ],
        )
    stored = job_version(framework.kind, KUBEFLOW_GROUP)
    if version not in CONVERTIBLE_VERSIONS and not (source_group == KUBEFLOW_GROUP and version == stored):
        return Migration(
            None, refusals=[f"apiVersion {QUOTE.encode(api_version)} is not a version kubetrain knows"]
        )
    out = copy.deepcopy(obj)
    changes: list[str] = []
    target = f"{group}/{job_version(framework.kind, group)}"
    if source_group == KUBEFLOW_GROUP and version in converted_versions(framework.kind, KUBEFLOW_GROUP):
        layout_refusal = _converted_layout(out, framework, version, changes)
        if layout_refusal:
            return Migration(None, changes, [layout_refusal])
    if api_version != target:
        out["apiVersion"] = target
        changes.append(f"apiVersion: {api_version} → {target}")
    spec = out.get("spec")
    refusals: list[str] = []
    if isinstance(spec, dict):
        refusals += _move_run_policy(spec, changes)
    if refusals:
        return Migration(None, changes, refusals)
    return _validated(out, changes, group)


def _validated(out: dict[str, Any], changes: list[str], group: str) -> Migration:
    target = f"{group}/{job_version(str(out.get('kind')), group)}"
    result = validate_job(default_job(out).obj, groups=(group,))
    if not result.ok:
        refusals = [f"the {target} result would be invalid: {e}" for e in result.errors]
        return Migration(None, changes, refusals)
    return Migration(out, changes)


def _converted_layout(
    out: dict[str, Any], framework: Framework, version: str, changes: list[str]
) -> str | None:
    """A job in a layout served through conversion (training-operator's v1 MPIJob) rewritten in
    the stored one — the conversion webhook's rules, minus the annotation that keeps what the
    new layout has no field for: a `mainContainer` other than every template's first container
    is refused (kubetrain runs the first one, as mpi-operator v2)."""
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return None
    main = spec.pop("mainContainer", None)
    if main is not None:
        firsts = set()
        for rspec in (spec.get(framework.replica_field) or {}).values():
            containers = (((rspec or {}).get("template") or {}).get("spec") or {}).get("containers") or []
            if containers and isinstance(containers[0], dict):
                firsts.add(containers[0].get("name"))
        if firsts - {main}:
            return (
                f"spec.mainContainer {QUOTE.encode(main)} is not the first container of every replica "
                "template "
                f"({', '.join(sorted(str(n) for n in firsts))}): kubetrain runs mpirun and sshd in the "
                "first container of each pod; reorder the containers"
            )
        changes.append(
            f"spec.mainContainer {QUOTE.encode(main)} removed: it is the first container, which "
            f"{framework.kind} runs"
        )
    changes.append(
        f"{framework.kind} {version} → stored layout: the Launcher reaches the Workers over SSH (a "
        "generated key pair, sshd in each Worker), not through kubectl exec: the Worker image must "
        "provide sshd"
    )
    return None


def _migrate_kubedl(obj: dict[str, Any], group: str) -> Migration:
    """A KubeDL job (training.kubedl.io/v1alpha1, or KubeDL 0.1's XGBoostJob group) in `group`'s
    version of its kind (`v1`; MPIJob in kubeflow.org: `v2beta1`)."""
    source = obj["apiVersion"]
    as_kubedl = {**obj, "apiVersion": f"{KUBEDL_GROUP}/{KUBEDL_VERSION}"}
    refusals = [f"{e.path}: {e.message}" for e in layout_errors(as_kubedl)]
    if refusals:
        return Migration(None, refusals=refusals)
    out = to_v1(as_kubedl)
    target = f"{group}/{job_version(str(obj.get('kind')), group)}"
    out["apiVersion"] = target
    changes = [f"apiVersion: {source} → {target}"]
    spec, before = out.get("spec") or {}, obj.get("spec") or {}
    for name in RUN_POLICY_FIELDS:
        if name in before:
            changes.append(f"spec.{name} → spec.runPolicy.{name}")
    scheduling = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    if "priorityClass" in scheduling:
        changes.append("schedulingPolicy.priorityClassName → spec.runPolicy.schedulingPolicy.priorityClass")
    if "mainContainer" in before:
        changes.append("spec.mainContainer removed (the framework container is found by name)")
    renamed = get_framework(str(obj.get("kind")))
    name, target = renamed.kubedl_renamed_field[:2] if renamed and renamed.kubedl_renamed_field else ("", "")
    if name in before and target not in before:
        changes.append(f"spec.{name} {before[name]} → spec.{target} {spec.get(target)}")
    framework = get_framework(str(obj.get("kind")))
    old_name = framework.kubedl_container_name if framework is not None else ""
    if (
        framework is not None
        and old_name
        and json.dumps(before).count(f'"{old_name}"') > json.dumps(spec).count(f'"{old_name}"')
    ):
        changes.append(
            f"containers named {QUOTE.encode(old_name)} (KubeDL's) → "
            f"{QUOTE.encode(framework.container_name)} (kubetrain's)"
        )
    return _validated(out, changes, group)


def _move_run_policy(spec: dict[str, Any], changes: list[str]) -> list[str]:
    refusals: list[str] = []
    present = [f for f in RUN_POLICY_FIELDS if f in spec]
    if not present:
        return refusals
    run_policy = spec.get("runPolicy")
    if run_policy is None:
        run_policy = {}
    if not isinstance(run_policy, dict):
        return ["spec.runPolicy is not an object: cannot move spec-level run policy fields into it"]
    for name in present:
        value = spec.pop(name)
        if name in run_policy and run_policy[name] != value:
            refusals.append(
                f"spec.{name} ({QUOTE.encode(value)}) and spec.runPolicy.{name} "
                f"({QUOTE.encode(run_policy[name])}) disagree: keep one"
            )
            continue
        run_policy[name] = value
        changes.append(f"spec.{name} → spec.runPolicy.{name}")
    spec["runPolicy"] = run_policy
    return refusals
