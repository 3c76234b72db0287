"""`kubetrain render FILE [-n NS] [--gang-scheduler …]`: the children the controller would create.

Prints, as a multi-document YAML stream, exactly the headless Service, the PodGroup (with
`--gang-scheduler volcano|scheduler-plugins`) and every pod, with its environment (TF_CONFIG,
MASTER_ADDR, PET_*, DMLC_*, MX_CONFIG…), that the controller creates for each job in FILE. The
job is defaulted first, as the mutating webhook and the controller do. The namespace is the
manifest's, else `-n/--namespace`, else `default`. A job read from a file has no uid yet, so
the ownerReferences are printed without one (the API server assigns it on create).

A cron (TrainingCron, KubeDL's Cron) renders as the job it creates at its next scheduled time,
followed by that job's children.

A Kubeflow Trainer TrainJob renders against the runtime it names — a TrainingRuntime or
ClusterTrainingRuntime of an earlier document (printed nothing for itself), or one of Trainer's
default ClusterTrainingRuntimes: its runtime snapshot ConfigMap, PVCs, headless Service,
PodGroup (when the runtime's podGroupPolicy is the one `--gang-scheduler` serves), the ML
policy's ConfigMaps and Secrets, and every pod of every step.

Bad input (unreadable file, invalid YAML, unknown kind, invalid job) → the problems on stderr,
nothing on stdout, exit status 1.
"""

from __future__ import annotations

import argparse
import copy
import sys
from datetime import UTC, datetime
from typing import Any

import yaml

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.cron import CRON_KINDS
from kubetrain.api.errors import QUOTE
from kubetrain.api.gangschedulers import CHOICES, NONE, defaults_min_available
from kubetrain.api.labels import ANNOTATION_CRON_SCHEDULED_TIMESTAMP
from kubetrain.api.servicemode import HEADLESS, SERVICE_MODES
from kubetrain.api.trainer import constants as tc
from kubetrain.commands._flags import add_cluster_domain_flag
from kubetrain.commands._trainervalidate import (
    Runtimes,
    keep_runtime,
    known_runtimes,
    trainjob_errors,
    unknown_fields,
)
from kubetrain.commands.validate import read_documents
from kubetrain.cron.decide import next_job
from kubetrain.cron.shape import read_cron, validate_cron
from kubetrain.jobs.trainjob.children import STATE_KEY, build_snapshot, jobset_spec
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.shape import trainjob_shape
from kubetrain.jobs.trainjob.validate import default_trainjob
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job
from kubetrain.operator.statusprojection import TRAINER
from kubetrain.operator.tensorboard import tensorboard_children


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the Service, PodGroup and pods (with env) the controller would create for a job",
        description=(
            "Print as YAML the exact children the controller creates for each job in FILE: "
            "the headless Service, the PodGroup (with --gang-scheduler) and every pod with its "
            "cluster environment (TF_CONFIG, MASTER_ADDR, PET_*, DMLC_*, MX_CONFIG)."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", help="job manifest (YAML, may hold several jobs); '-' reads stdin"
    )
    parser.add_argument(
        "-n", "--namespace", default=None, help="namespace when the manifest has none (default: default)"
    )
    parser.add_argument(
        "--gang-scheduler",
        choices=CHOICES,
        default=NONE,
        help="render as an operator with this gang scheduler (adds the PodGroup and pod decorations)",
    )
    parser.add_argument(
        "--scheduler-name", default=None, help="schedulerName the operator is configured with"
    )
    parser.add_argument(
        "--service-mode",
        choices=SERVICE_MODES,
        default=HEADLESS,
        help="the operator's --service-mode (a job's kubetrain.io/service-mode annotation wins)",
    )
    add_cluster_domain_flag(parser)
    parser.set_defaults(func=run)


def render_job(
    obj: dict[str, Any],
    *,
    namespace: str | None = None,
    gang_scheduler: str = NONE,
    scheduler_name: str | None = None,
    service_mode: str = HEADLESS,
    cluster_domain: ClusterDomain = UNSET,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The children of one job in creation order, or the errors that prevent rendering."""
    job = copy.deepcopy(obj)
    meta = job.get("metadata")
    if isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = namespace or "default"
    prepared = prepare_job(
        job,
        gang_scheduling=defaults_min_available(gang_scheduler),
        service_mode=service_mode,
        cluster_domain=cluster_domain,
    )
    if prepared.shape is None:
        return [], prepared.errors or ["cannot render this object"]
    desired = desired_children(prepared.shape, gang_scheduler=gang_scheduler, scheduler_name=scheduler_name)
    children = desired.all()  # exactly what the planner creates
    children += tensorboard_children(job, prepared.shape.layout)  # kubedl.io/tensorboard-config
    if not prepared.shape.uid:
        for child in children:
            for ref in child["metadata"].get("ownerReferences", []):
                ref.pop("uid", None)
    return children, []


def render_trainjob(
    obj: dict[str, Any],
    runtimes: Runtimes,
    *,
    namespace: str | None = None,
    gang_scheduler: str = NONE,
    cluster_domain: ClusterDomain = UNSET,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The children of one TrainJob in creation order (the first reconcile's, then every pod of
    every step), or the errors that prevent rendering. `runtimes`: by (kind, name)."""
    job = default_trainjob(obj)
    meta = job.get("metadata")
    if isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = namespace or "default"
    runtime, errors = trainjob_errors(job, runtimes)
    if errors or runtime is None:
        return [], [str(e) for e in errors]
    resolved, problems = resolve(job, runtime, cluster_domain=cluster_domain)  # valid: resolves (as checked)
    if resolved is None:
        return [], [str(e) for e in problems]
    shape = trainjob_shape(job, resolved, jobset_spec(runtime), TRAINER, gang_scheduler)
    gang = shape.gang.scheduler if shape.gang is not None else None
    desired = desired_children(shape, gang_scheduler=gang.name if gang is not None else NONE)
    snapshot = build_snapshot(job, runtime, {})
    snapshot["data"].pop(STATE_KEY, None)  # the run's record is the first reconcile's own
    children = [snapshot, *desired.all()]
    if shape.gang is not None and shape.gang.mismatch:
        print(f"TrainJob {resolved.name}: {shape.gang.mismatch}", file=sys.stderr)
    if not resolved.uid:
        for child in children:
            for ref in child["metadata"].get("ownerReferences", []):
                ref.pop("uid", None)
    return children, []


def render_cron_job(
    obj: dict[str, Any], label: str, namespace: str | None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The job a cron (TrainingCron, KubeDL's Cron) creates at its next scheduled time from now,
    printed before its children (a note on stderr says when); or the cron's problems."""
    cron = copy.deepcopy(obj)
    meta = cron.setdefault("metadata", {})
    if isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = namespace or "default"
    errors = [str(e) for e in validate_cron(cron)]
    if errors:
        return None, errors
    planned = next_job(read_cron(cron), datetime.now(UTC))
    if planned is None:
        return None, ["spec.schedule: has no next time"]
    when, job = planned
    for ref in job["metadata"].get("ownerReferences", []):
        if not ref.get("uid"):
            ref.pop("uid", None)
    local = job["metadata"]["annotations"].get(ANNOTATION_CRON_SCHEDULED_TIMESTAMP, when.isoformat())
    print(f"{label}: the job it creates next, at {local}", file=sys.stderr)
    return job, []


GENERATED_SUFFIX = "xxxxx"


def with_generated_name(obj: dict[str, Any], label: str) -> dict[str, Any]:
    """A job with `metadata.generateName` and no name is rendered under the name the API server
    would give it: the prefix and five random characters, shown as `xxxxx` (a note on stderr)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") or not isinstance(meta.get("generateName"), str):
        return obj
    name = meta["generateName"] + GENERATED_SUFFIX
    print(
        f"{label}: metadata.generateName: rendered as {QUOTE.encode(name)}; the API server replaces "
        f"{QUOTE.encode(GENERATED_SUFFIX)} with five random characters",
        file=sys.stderr,
    )
    return {**obj, "metadata": {**meta, "name": name}}


def run(args: argparse.Namespace) -> int:
    documents, problem = read_documents(args.file)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    if not documents:
        print(f"{args.file}: no documents", file=sys.stderr)
        return 1
    output: list[dict[str, Any]] = []
    failed = False
    runtimes = known_runtimes()
    for doc in documents:
        if not isinstance(doc.obj, dict):
            print(f"{doc.label}: not a Kubernetes object (expected a mapping)", file=sys.stderr)
            failed = True
            continue
        obj = with_generated_name(doc.obj, doc.label)
        if str(obj.get("apiVersion", "")).startswith(f"{tc.GROUP}/"):
            errors = _trainer_document(obj, runtimes, output, args)
            for error in errors:
                print(f"{doc.label}: {error}", file=sys.stderr)
            failed = failed or bool(errors)
            continue
        if obj.get("kind") in CRON_KINDS.values():
            job, errors = render_cron_job(obj, doc.label, args.namespace)
            if job is None:
                for error in errors:
                    print(f"{doc.label}: {error}", file=sys.stderr)
                failed = True
                continue
            output.append(job)
            obj = job
        children, errors = render_job(
            obj,
            namespace=args.namespace,
            gang_scheduler=args.gang_scheduler,
            scheduler_name=args.scheduler_name,
            service_mode=args.service_mode,
            cluster_domain=args.cluster_domain,
        )
        for error in errors:
            print(f"{doc.label}: {error}", file=sys.stderr)
        failed = failed or bool(errors)
        output.extend(children)
    if failed:
        return 1
    sys.stdout.write(yaml.safe_dump_all(output, sort_keys=False, default_flow_style=False))
    return 0


def _trainer_document(
    obj: dict[str, Any], runtimes: Runtimes, output: list[dict[str, Any]], args: Any
) -> list[str]:
    """A trainer.kubeflow.org document: a runtime is kept for the TrainJobs after it, a TrainJob's
    children are added to `output`; the problems."""
    kind = obj.get("kind")
    if kind in (tc.TRAINING_RUNTIME, tc.CLUSTER_TRAINING_RUNTIME):
        return [str(e) for e in unknown_fields(obj) + keep_runtime(obj, runtimes)]
    if kind != tc.TRAINJOB:
        return [
            f"kind: Unsupported value: {QUOTE.encode(kind)}: must be one of "
            f"{', '.join(map(QUOTE.encode, tc.KINDS))}"
        ]
    unknown = unknown_fields(obj)
    if unknown:
        return [str(e) for e in unknown]
    children, errors = render_trainjob(
        obj,
        runtimes,
        namespace=args.namespace,
        gang_scheduler=args.gang_scheduler,
        cluster_domain=args.cluster_domain,
    )
    output.extend(children)
    return errors
