"""Admission rules for Kubeflow Trainer v2's runtimes — every problem at once, each with its
field path (docs/behaviour.md, "TrainJob"); the TrainJob's own: `validate.py`.

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
(`jobfields.validate`), the JobSet template's `managedBy` (`jobsetpolicy.managed_by_errors`);
a warning without the `trainer.kubeflow.org/framework` label and per Job
spec field not applied, the JobSet template's `suspend` and labels (`runtime_warnings`,
`jobfields.warnings`, `jobsetpolicy.jobset_warnings`).
Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.dnsnames import DNS1035_LABEL, MAX_LABEL_LENGTH
from kubetrain.api.errors import (
    QUOTE,
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
)
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.jobset import DEPENDS_ON_STATUSES
from kubetrain.jobs import jobsetplacement as exclusive
from kubetrain.jobs import jobsuccess
from kubetrain.jobs.trainerrules import ONE_POD_GROUP_POLICY_MESSAGE
from kubetrain.jobs.trainjob import (
    envinjection,
    failurepolicy,
    jobfields,
    jobsetpolicy,
    podfailurepolicy,
    volumeclaims,
)
from kubetrain.jobs.trainjob.validate import num_proc_per_node, positive

Obj = dict[str, Any]

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
    if isinstance(template, Mapping):
        warnings += jobsetpolicy.jobset_warnings(template, "spec.template")
    rjobs = (template.get("spec") or {}).get("replicatedJobs")
    for i, rjob in enumerate(rjobs if isinstance(rjobs, list) else []):
        rjob_template = (rjob or {}).get("template") if isinstance(rjob, Mapping) else None
        if isinstance(rjob_template, Mapping):
            where = f"spec.template.spec.replicatedJobs[{i}].template"
            warnings += exclusive.runtime_warnings(obj, rjob_template, where)
            warnings += jobfields.metadata_warnings(rjob_template, where)
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
    positive(ml_policy.get("numNodes"), "spec.mlPolicy.numNodes", errors)
    gangs = spec.get("podGroupPolicy")
    if isinstance(gangs, Mapping) and all(gangs.get(k) is not None for k in ("coscheduling", "volcano")):
        errors.append(invalid("spec.podGroupPolicy", ONE_POD_GROUP_POLICY_MESSAGE))  # the CRD's rule
    implementation = (ml_policy.get("mpi") or {}).get("mpiImplementation")
    if implementation not in (None, "", "OpenMPI"):  # Trainer's CRD enum
        errors.append(not_supported("spec.mlPolicy.mpi.mpiImplementation", implementation, ("OpenMPI",)))
    for source in ("mpi", "flux"):  # Trainer's CRD rules, with their messages
        num_proc_per_node(
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
    errors += jobsetpolicy.managed_by_errors(jobset_spec, "spec.template.spec")
    errors += volumeclaims.validate(jobset_spec, "spec.template.spec")
    errors += failurepolicy.validate(jobset_spec, "spec.template.spec")
    errors += podfailurepolicy.validate(jobset_spec, "spec.template.spec")
    for i, rjob in enumerate(rjobs if isinstance(rjobs, list) else []):
        job_spec = ((rjob or {}).get("template") or {}).get("spec") if isinstance(rjob, Mapping) else None
        if isinstance(job_spec, Mapping):
            errors += jobsuccess.validate(job_spec, f"{path}[{i}].template.spec")
            errors += jobfields.validate(job_spec, f"{path}[{i}].template.spec")
    return errors
