"""Admission rules for Kubeflow Trainer v2's kinds — every problem at once, each with its field
path (docs/behaviour.md, "TrainJob"):

TrainJob (`default_trainjob`, `validate_trainjob`): runtimeRef defaults to a
ClusterTrainingRuntime in trainer.kubeflow.org and must name a runtime that exists; numNodes ≥ 1
(Trainer: ≥ 0) and numProcPerNode ≥ 1; no variable the runtime's ML policy sets (PET_*, DMLC_*,
OMPI_*, JAX_*) in `trainer.env`; managedBy is Trainer's controller or MultiKueue; activeDeadlineSeconds ≥ 1;
runtimePatches have distinct managers and name replicated jobs and containers the runtime has;
Trainer's CRD field rules and its runtimePatches/initializer rules (`specrules.py`);
the runtime can be run (`resolve`); a torchtune TrainJob passes Trainer's torchtune rules
(`torchtune.validate`, on update too), a Flux one Trainer's Flux rules (`flux.validate`); under a
Volcano runtime no empty `scheduling.volcano.sh/queue-name` on the runtime's template or a
runtimePatch (`gang.queue_errors`, Trainer's volcano plugin, on update too). On
update runtimeRef, managedBy and activeDeadlineSeconds never change, initializer and trainer only
while the TrainJob is suspended.

TrainingRuntime / ClusterTrainingRuntime (`validate_runtime`): at most one ML policy source,
numNodes ≥ 1, an MPI policy's mpiImplementation OpenMPI, an MPI or Flux policy's numProcPerNode ≥ 1,
a torch policy's envInjection targets by Trainer's CRD rules (`envinjection.py`: no `node`),
distinct replicated job names, an ancestor step of one job with its container (Trainer's runtime
webhook), a replicated job named `node`, dependsOn naming other replicated jobs with status Ready
or Complete, JobSet's rules for `volumeClaimPolicies` (`volumeclaims.py`) and for the
single-job restart actions (`failurepolicy.validate`: replicas ≤ 1024; no restartStrategy
InPlaceRestart), the Job API's rules for a replicated job's `podFailurePolicy`,
`activeDeadlineSeconds`, `backoffLimitPerIndex` and `maxFailedIndexes` (`podfailurepolicy.validate`),
`successPolicy` (`jobsuccess.validate`), `completionMode` and `podReplacementPolicy`
(`jobfields.validate`); a warning without the `trainer.kubeflow.org/framework` label and per Job
spec field not applied (`runtime_warnings`, `jobfields.warnings`).
Pure."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.api import startdeadline, trainerstatus
from kubetrain.api.dnsnames import DNS1035_LABEL, MAX_LABEL_LENGTH
from kubetrain.api.errors import (
    QUOTE,
    RECREATE,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    json_int,
    not_supported,
    required,
)
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.jobset import DEPENDS_ON_STATUSES
from kubetrain.frameworks.mlpolicies import plugin_for
from kubetrain.jobs import jobsetplacement as exclusive
from kubetrain.jobs import jobsuccess
from kubetrain.jobs.trainerrules import ONE_POD_GROUP_POLICY_MESSAGE
from kubetrain.jobs.trainjob import (
    envinjection,
    failurepolicy,
    gang,
    jobfields,
    podfailurepolicy,
    specrules,
    torchtune,
    volumeclaims,
)
from kubetrain.jobs.trainjob.resolve import resolve

Obj = dict[str, Any]
RUNTIME_KINDS = (c.CLUSTER_TRAINING_RUNTIME, c.TRAINING_RUNTIME)
# Trainer's CRD limit; each pod's hostname `<name>-<step>-<jobIndex>-<index>` must stay a DNS
# label too (≤ 63, checked with the runtime: `resolve`).
MAX_TRAINJOB_NAME = 63
ALWAYS_IMMUTABLE = ("runtimeRef", "managedBy", "activeDeadlineSeconds")
IMMUTABLE_WHILE_RUNNING = ("initializer", "trainer")


def default_trainjob(obj: Mapping[str, Any]) -> Obj:
    """runtimeRef.apiGroup/kind, managedBy and suspend (false) defaults (Trainer's CRD defaults)."""
    out = copy.deepcopy(dict(obj))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    ref = spec.get("runtimeRef")
    if isinstance(ref, dict):
        ref.setdefault("apiGroup", c.GROUP)
        ref.setdefault("kind", c.CLUSTER_TRAINING_RUNTIME)
    spec.setdefault("managedBy", c.TRAINJOB_CONTROLLER)
    spec.setdefault("suspend", False)
    return out


def _positive(value: object, path: str, errors: list[FieldError]) -> None:
    if value is not None and (json_int(value) or 0) < 1:
        errors.append(invalid(path, f"must be an integer of at least 1, not {QUOTE.encode(value)}"))


def _num_proc_per_node(value: object, path: str, message: str, errors: list[FieldError]) -> None:
    """Trainer's `self >= 1` XValidation of a numProcPerNode (Trainer #3809), with its message."""
    if value is not None and (json_int(value) or 0) < 1:
        errors.append(invalid(path, f"{message}, not {QUOTE.encode(value)}"))


def _trainer_num_nodes(value: object, errors: list[FieldError]) -> None:
    """spec.trainer.numNodes: a negative count gets Trainer's schema message (`Minimum=0`,
    worded as apimachinery's `validate.MinimumProperty`); 0, which Trainer admits (a JobSet of
    no trainer pods), kubetrain refuses — it runs no TrainJob without a training node."""
    path = "spec.trainer.numNodes"
    if value is None:
        return
    number = json_int(value)
    if number is None or number < 0:
        errors.append(
            invalid(path, f"{path} in body should be greater than or equal to 0, not {QUOTE.encode(value)}")
        )
    elif number == 0:
        errors.append(
            invalid(
                path,
                "0 training nodes: kubetrain runs a TrainJob on at least 1 node; omit it for the runtime's",
            )
        )


def validate_trainjob(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, runtime: Mapping[str, Any] | None
) -> list[FieldError]:
    """Every problem of a (defaulted) TrainJob; `runtime` is the one its runtimeRef names (None:
    it does not exist)."""
    errors: list[FieldError] = []
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if name and (len(name) > MAX_TRAINJOB_NAME or not DNS1035_LABEL.match(name)):
        errors.append(
            invalid(
                "metadata.name",
                f"must be a lowercase RFC 1035 label of at most {MAX_TRAINJOB_NAME} characters "
                "(it names the TrainJob's headless Service and its pods' hostnames)",
            )
        )
    spec = obj.get("spec") or {}
    ref = spec.get("runtimeRef") or {}
    if not ref.get("name"):
        errors.append(
            required("spec.runtimeRef.name", "the TrainingRuntime or ClusterTrainingRuntime to run")
        )
    if ref.get("apiGroup") not in (None, c.GROUP):
        errors.append(not_supported("spec.runtimeRef.apiGroup", ref.get("apiGroup"), (c.GROUP,)))
    kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME
    if kind not in RUNTIME_KINDS:
        errors.append(not_supported("spec.runtimeRef.kind", kind, RUNTIME_KINDS))
    elif ref.get("name") and runtime is None and old is None:
        where = f" in namespace {QUOTE.encode(meta.get('namespace'))}" if kind == c.TRAINING_RUNTIME else ""
        errors.append(
            invalid("spec.runtimeRef.name", f"{kind} {QUOTE.encode(ref.get('name'))} not found{where}")
        )
    trainer = spec.get("trainer") or {}
    _trainer_num_nodes(trainer.get("numNodes"), errors)
    _num_proc_per_node(
        trainer.get("numProcPerNode"),
        "spec.trainer.numProcPerNode",
        "numProcPerNode must be greater than or equal to 1",
        errors,
    )
    _positive(spec.get("activeDeadlineSeconds"), "spec.activeDeadlineSeconds", errors)
    manager = spec.get("managedBy")
    if manager is not None and manager not in c.MANAGERS:
        errors.append(not_supported("spec.managedBy", manager, c.MANAGERS))
    managers: set[str] = set()
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        mgr = patch.get("manager") if isinstance(patch, Mapping) else None
        if not mgr:
            errors.append(required(f"spec.runtimePatches[{i}].manager", "who owns this patch"))
        elif mgr in managers:
            errors.append(
                duplicate(f"spec.runtimePatches[{i}].manager", f"{QUOTE.encode(mgr)} has another patch")
            )
        else:
            managers.add(mgr)
    errors += specrules.field_errors(spec)
    if runtime is not None:
        if old is None or spec.get("initializer") != (old.get("spec") or {}).get("initializer"):
            errors += specrules.initializer_errors(spec, runtime)
        errors += reserved_env_errors(spec, runtime)
        errors += gang.queue_errors(obj, runtime)  # Trainer's volcano plugin, on create and update
        if old is None:
            # with the torchtune and Flux rules; a field already refused above is not repeated
            _, problems = resolve(obj, runtime)
            seen = {e.path for e in errors}
            errors += [p for p in problems if p.path not in seen]
        else:  # the name never changes; the nodes may (suspended), and with them the hostnames
            errors += torchtune.admission_errors(obj, runtime)
            errors += [p for p in resolve(obj, runtime)[1] if p.path == "metadata.name"]
    if old is not None:
        errors += _immutable(spec, old)
        errors += specrules.update_errors(spec, old.get("spec") or {})
        errors += specrules.active_job_errors(spec, old)
    errors += trainerstatus.annotation_errors(obj)  # the progress annotations, as on every kind
    errors += startdeadline.annotation_errors(obj)
    return errors


def reserved_env_errors(spec: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """`spec.trainer.env` names no variable the runtime's ML policy sets."""
    ml_policy = (runtime.get("spec") or {}).get("mlPolicy") or {}
    plugin = plugin_for(ml_policy)
    reserved = plugin.reserved_env if plugin else frozenset()
    if ml_policy.get("mpi") is not None:
        reserved = c.MPI_RESERVED_ENV
    return [
        forbidden(
            f"spec.trainer.env[{i}].name",
            f"{var.get('name')} is set by the runtime's ML policy and cannot be set here",
        )
        for i, var in enumerate((spec.get("trainer") or {}).get("env") or [])
        if isinstance(var, Mapping) and var.get("name") in reserved
    ]


def build_errors(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    """What the controller checks before it builds a TrainJob from a runtime, besides `resolve`:
    the rules of admission that depend on the runtime and `resolve` does not apply — the
    initializer steps and the ML policy's reserved variables (kubeflow/trainer#3975: a runtime
    changed between admission and the first reconcile is checked, not trusted)."""
    spec = trainjob.get("spec") or {}
    return specrules.initializer_errors(spec, runtime) + reserved_env_errors(spec, runtime)


def _immutable(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    old_spec = old.get("spec") or {}
    for key in ALWAYS_IMMUTABLE:
        if spec.get(key) != old_spec.get(key):
            errors.append(invalid(f"spec.{key}", f"field is immutable; {RECREATE}"))
    running = not (spec.get("suspend") is True and old_spec.get("suspend") is True)
    for key in IMMUTABLE_WHILE_RUNNING:
        if running and spec.get(key) != old_spec.get(key):
            errors.append(invalid(f"spec.{key}", "field is immutable while the TrainJob is not suspended"))
    return errors


# The container each ancestor step must have (Trainer's TrainingRuntime webhook).
ANCESTOR_CONTAINERS = {
    c.ANCESTOR_TRAINER: c.NODE,
    c.DATASET_INITIALIZER: c.DATASET_INITIALIZER,
    c.MODEL_INITIALIZER: c.MODEL_INITIALIZER,
}


def _ancestor_errors(rjobs: list[Any], path: str) -> list[FieldError]:
    """A replicated job labelled as a TrainJob ancestor step runs one job (`replicas` 1) and has
    that step's container — Trainer's rules and messages."""
    errors: list[FieldError] = []
    for i, rjob in enumerate(rjobs):
        template = (rjob or {}).get("template") or {}
        ancestor = ((template.get("metadata") or {}).get("labels") or {}).get(c.LABEL_ANCESTOR)
        if ancestor not in ANCESTOR_CONTAINERS:
            continue
        replicas = (rjob or {}).get("replicas", 1)
        if replicas != 1:
            errors.append(invalid(f"{path}[{i}].replicas", f"{QUOTE.encode(replicas)}: always must be 1"))
        pod = ((template.get("spec") or {}).get("template") or {}).get("spec") or {}
        names = {x.get("name") for x in pod.get("containers") or [] if isinstance(x, Mapping)}
        if ANCESTOR_CONTAINERS[ancestor] not in names:
            errors.append(
                invalid(
                    f"{path}[{i}].template.spec.template.spec.containers",
                    f"must contain the required container for the ancestor: {ancestor} "
                    f"(a container named {QUOTE.encode(ANCESTOR_CONTAINERS[ancestor])})",
                )
            )
    return errors


def _negative_replicas(rjob: Any, path: str) -> list[FieldError]:
    """JobSet's `replicas` minimum 0 (jobset.x-k8s.io ReplicatedJob, `+kubebuilder:validation:
    Minimum=0`, kubernetes-sigs/jobset#1279): refused here, not when the TrainJob's JobSet would
    be; an ancestor step has the stricter "must be 1" (`_ancestor_errors`)."""
    replicas = (rjob or {}).get("replicas") if isinstance(rjob, Mapping) else None
    template = (rjob or {}).get("template") or {} if isinstance(rjob, Mapping) else {}
    ancestor = ((template.get("metadata") or {}).get("labels") or {}).get(c.LABEL_ANCESTOR)
    if type(replicas) is int and replicas < 0 and ancestor not in ANCESTOR_CONTAINERS:
        return [invalid(path, f"should be greater than or equal to 0, not {replicas}")]
    return []


def _startup_order_errors(jobset_spec: Mapping[str, Any], rjobs: list[Any]) -> list[FieldError]:
    """JobSet's CRD rule on its spec (`!(has(self.startupPolicy) && ... == 'InOrder' &&
    self.replicatedJobs.exists(x, has(x.dependsOn)))`), which Trainer's runtime CRDs carry: an
    InOrder startup and a `dependsOn` are two orders for the same start."""
    order = (jobset_spec.get("startupPolicy") or {}).get("startupPolicyOrder")
    if order == "InOrder" and any(isinstance(r, Mapping) and "dependsOn" in r for r in rjobs):
        return [invalid("spec.template.spec", "StartupPolicy and DependsOn APIs are mutually exclusive")]
    return []


def _subdomain_errors(jobset_spec: Mapping[str, Any]) -> list[FieldError]:
    """`network.subdomain` names the pods' headless Service and is each pod's `spec.subdomain`:
    an RFC 1035 label of at most 63 characters (JobSet's webhook, validateJobSet)."""
    subdomain = (jobset_spec.get("network") or {}).get("subdomain")
    if not subdomain:
        return []
    path = "spec.template.spec.network.subdomain"
    if not isinstance(subdomain, str) or not DNS1035_LABEL.match(subdomain):
        return [
            invalid(
                path, f"{QUOTE.encode(subdomain)} must be a lowercase RFC 1035 label (it names a Service)"
            )
        ]
    if len(subdomain) > MAX_LABEL_LENGTH:
        return [invalid(path, f"must be no more than {MAX_LABEL_LENGTH} characters, not {len(subdomain)}")]
    return []


def runtime_warnings(obj: Mapping[str, Any]) -> list[str]:
    """What a runtime Trainer admits lacks for the Kubeflow SDK — the framework label, without
    which `TrainerClient.list_runtimes`/`get_runtime` cannot use it —, each field of a
    replicated job's Job spec kubetrain does not apply (no Job object exists; under JobSet the
    Job controller would: `podReplacementPolicy`, `ttlSecondsAfterFinished`, …) and what of JobSet's
    exclusive placement cannot work (`jobsetplacement.runtime_warnings`)."""
    warnings: list[str] = []
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if not labels.get(c.LABEL_FRAMEWORK):
        warnings.append(
            f"metadata.labels[{c.LABEL_FRAMEWORK}]: not set: the Kubeflow SDK's TrainerClient lists and "
            "uses only runtimes labelled with their framework (torch, deepspeed, mlx, jax, xgboost, …)"
        )
    template = (obj.get("spec") or {}).get("template") or {}
    rjobs = (template.get("spec") or {}).get("replicatedJobs")
    for i, rjob in enumerate(rjobs if isinstance(rjobs, list) else []):
        rjob_template = (rjob or {}).get("template") if isinstance(rjob, Mapping) else None
        if isinstance(rjob_template, Mapping):
            warnings += exclusive.runtime_warnings(
                obj, rjob_template, f"spec.template.spec.replicatedJobs[{i}].template"
            )
        job_spec = ((rjob or {}).get("template") or {}).get("spec") if isinstance(rjob, Mapping) else None
        if isinstance(job_spec, Mapping):
            warnings += jobfields.warnings(job_spec, f"spec.template.spec.replicatedJobs[{i}].template.spec")
    return warnings


def validate_runtime(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every problem of a TrainingRuntime or ClusterTrainingRuntime."""
    errors: list[FieldError] = []
    spec = obj.get("spec") or {}
    ml_policy = spec.get("mlPolicy") or {}
    sources = [k for k in ("torch", "mpi", "flux", "jax", "xgboost") if ml_policy.get(k) is not None]
    if len(sources) > 1:
        errors.append(invalid("spec.mlPolicy", f"at most one ML policy source, not {', '.join(sources)}"))
    _positive(ml_policy.get("numNodes"), "spec.mlPolicy.numNodes", errors)
    gangs = spec.get("podGroupPolicy")
    if isinstance(gangs, Mapping) and all(gangs.get(k) is not None for k in ("coscheduling", "volcano")):
        errors.append(invalid("spec.podGroupPolicy", ONE_POD_GROUP_POLICY_MESSAGE))  # the CRD's rule
    implementation = (ml_policy.get("mpi") or {}).get("mpiImplementation")
    if implementation not in (None, "", "OpenMPI"):  # Trainer's CRD enum
        errors.append(not_supported("spec.mlPolicy.mpi.mpiImplementation", implementation, ("OpenMPI",)))
    for source in ("mpi", "flux"):  # Trainer's CRD rules, with their messages
        _num_proc_per_node(
            (ml_policy.get(source) or {}).get("numProcPerNode"),
            f"spec.mlPolicy.{source}.numProcPerNode",
            f"NumProcPerNode in {source}Policy must be >= 1",
            errors,
        )
    errors += envinjection.validate(ml_policy)
    rjobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    path = "spec.template.spec.replicatedJobs"
    names: list[str] = []
    for i, rjob in enumerate(rjobs):
        rname = str((rjob or {}).get("name") or "")
        if not rname:
            errors.append(required(f"{path}[{i}].name", "a DNS label"))
        elif not DNS1035_LABEL.match(rname):
            errors.append(
                invalid(f"{path}[{i}].name", f"{QUOTE.encode(rname)} must be a lowercase RFC 1035 label")
            )
        elif rname in names:
            errors.append(
                duplicate(f"{path}[{i}].name", f"{QUOTE.encode(rname)} is used by another replicated job")
            )
        names.append(rname)
        errors += _negative_replicas(rjob, f"{path}[{i}].replicas")
    if c.NODE not in names:
        errors.append(required(path, f"a replicated job named {QUOTE.encode(c.NODE)} (the training nodes)"))
    errors += _ancestor_errors(rjobs, path)
    for i, rjob in enumerate(rjobs):
        for j, dep in enumerate((rjob or {}).get("dependsOn") or []):
            dname, status = (dep or {}).get("name"), (dep or {}).get("status")
            if dname not in names or dname == (rjob or {}).get("name"):
                errors.append(
                    invalid(
                        f"{path}[{i}].dependsOn[{j}].name",
                        f"{QUOTE.encode(dname)} is not another replicated job",
                    )
                )
            if status not in DEPENDS_ON_STATUSES:
                errors.append(
                    not_supported(f"{path}[{i}].dependsOn[{j}].status", status, DEPENDS_ON_STATUSES)
                )
    jobset_spec = (spec.get("template") or {}).get("spec") or {}
    errors += _startup_order_errors(jobset_spec, rjobs)
    errors += _subdomain_errors(jobset_spec)
    errors += volumeclaims.validate(jobset_spec, "spec.template.spec")
    errors += failurepolicy.validate(jobset_spec, "spec.template.spec")
    errors += podfailurepolicy.validate(jobset_spec, "spec.template.spec")
    for i, rjob in enumerate(rjobs if isinstance(rjobs, list) else []):
        job_spec = ((rjob or {}).get("template") or {}).get("spec") if isinstance(rjob, Mapping) else None
        if isinstance(job_spec, Mapping):
            errors += jobsuccess.validate(job_spec, f"{path}[{i}].template.spec")
            errors += jobfields.validate(job_spec, f"{path}[{i}].template.spec")
    return errors
