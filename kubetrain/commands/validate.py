"""`kubetrain validate FILE...`: default and validate job manifests offline.

Every document of every file (multi-document YAML; `-` reads stdin; a `kind: List` is expanded)
is defaulted exactly as the mutating webhook would, then validated exactly as the validating
webhook would. Each error is printed on its own line, prefixed by the file and the document
(`pytorch.yaml#2 (PyTorchJob/mnist): spec.pytorchReplicaSpecs[Master].replicas: Forbidden: …`),
warnings likewise. Exit status: 1 when any document is invalid or a file cannot be read or
parsed or holds no document, else 0.

With `--policy FILE` (repeatable) the TrainingPolicies in FILE are applied too, as the webhooks
would (kubetrain.policy.offline): their defaults after the built-in ones, then their limits;
a Deny-mode violation is an error, a Warn-mode one a warning. `--namespace-labels k=v,...`
says which namespace the jobs are meant for (without it every policy applies). A
TrainingPolicy document among the FILEs is validated as a policy, a TrainingCron (or KubeDL's
Cron) as the cron webhook does: schedule, time zone and the template's job rules.

With `--show-defaults` the defaulted objects are printed to stdout as a YAML stream and the
findings go to stderr, so the output can be piped into `kubectl apply -f -`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, TextIO

import yaml

from kubetrain.api.cron import CRON_KINDS
from kubetrain.api.groups import JOB_GROUPS, KUBETRAIN_GROUP, TRAINER_GROUP, group_of
from kubetrain.api.manifests import load_all, metadata_errors, yaml_problem
from kubetrain.api.policy import KIND as POLICY_KIND
from kubetrain.api.policy import TrainingPolicy
from kubetrain.commands._flags import api_groups_arg
from kubetrain.commands._trainervalidate import Runtimes, check_trainer_document, known_runtimes
from kubetrain.cron.shape import validate_cron
from kubetrain.frameworks.registry import known_kinds
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.typemeta import check_type_meta
from kubetrain.jobs.validation import validate_job
from kubetrain.policy.offline import evaluate_offline, parse_namespace_labels
from kubetrain.policy.validate_policy import InvalidPolicyError, parse_policy


@dataclass
class Document:
    label: str  # "file.yaml#2 (PyTorchJob/mnist)"
    obj: Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="default and validate job manifests (exit 1 if any is invalid)",
        description=f"Default and validate {'/'.join(known_kinds())} manifests like the webhooks do.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML file(s); '-' reads stdin")
    parser.add_argument(
        "--show-defaults",
        action="store_true",
        help="print the defaulted objects as YAML on stdout (findings then go to stderr)",
    )
    parser.add_argument(
        "--gang-scheduling",
        action="store_true",
        help="default as an operator with gang scheduling enabled (fills schedulingPolicy.minAvailable)",
    )
    parser.add_argument(
        "--api-groups",
        type=api_groups_arg,
        default=[KUBETRAIN_GROUP],
        metavar="GROUP[,GROUP]",
        help="accept jobs of these API groups, as an operator run with the same --api-groups "
        "(default kubetrain.io; kubeflow.org: Kubeflow's group)",
    )
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="FILE",
        help="apply the TrainingPolicies in FILE (defaults, then limits) like the webhooks; repeatable",
    )
    parser.add_argument(
        "--namespace-labels",
        metavar="K=V,...",
        help="labels of the jobs' namespace, to select which --policy policies apply (default: all)",
    )
    parser.set_defaults(func=run)


def load_policies(names: list[str], report: TextIO) -> tuple[list[TrainingPolicy], bool]:
    """The TrainingPolicies of the --policy files; False when any file or policy is bad."""
    policies: list[TrainingPolicy] = []
    ok = True
    for name in names:
        documents, problem = read_documents(name)
        if problem is not None:
            print(problem, file=report)
            ok = False
        for doc in documents:
            kind = doc.obj.get("kind") if isinstance(doc.obj, dict) else None
            if kind != POLICY_KIND:
                print(f"{doc.label}: --policy files hold TrainingPolicy objects only", file=report)
                ok = False
                continue
            try:
                policies.append(parse_policy(doc.obj))
            except InvalidPolicyError as exc:
                for error in exc.errors:
                    print(f"{doc.label}: {error}", file=report)
                ok = False
    return policies, ok


def run(args: argparse.Namespace) -> int:
    report: TextIO = sys.stderr if args.show_defaults else sys.stdout
    policies, policies_ok = load_policies(args.policy, report)
    failed = not policies_ok
    namespace_labels: dict[str, str] | None = None
    if args.namespace_labels is not None:
        try:
            namespace_labels = parse_namespace_labels(args.namespace_labels)
        except ValueError as exc:
            print(f"--namespace-labels: {exc}", file=sys.stderr)
            return 1
    defaulted_docs: list[Any] = []
    runtimes = known_runtimes()
    for name in args.files:
        documents, problem = read_documents(name)
        if problem is not None:
            print(problem, file=report)
            failed = True
            continue
        if not documents:  # as `kubectl apply -f` refuses a file with no objects
            print(f"{_display(name)}: no documents", file=report)
            failed = True
            continue
        for doc in documents:
            ok, defaulted = check_document(
                doc,
                report,
                gang_scheduling=args.gang_scheduling,
                groups=tuple(args.api_groups),
                policies=policies if args.policy else None,
                namespace_labels=namespace_labels,
                runtimes=runtimes,
            )
            failed = failed or not ok
            if defaulted is not None:
                defaulted_docs.append(defaulted)
    if args.show_defaults and defaulted_docs:
        sys.stdout.write(yaml.safe_dump_all(defaulted_docs, sort_keys=False, default_flow_style=False))
    return 1 if failed else 0


def _display(name: str) -> str:
    return "<stdin>" if name == "-" else name


def read_documents(name: str) -> tuple[list[Document], str | None]:
    """The documents of one file, or a one-line description of why it cannot be read."""
    shown = _display(name)
    try:
        if name == "-":
            text = sys.stdin.read()
        else:
            with open(name, encoding="utf-8") as handle:
                text = handle.read()
    except FileNotFoundError:
        return [], f"{shown}: cannot read: no such file"
    except IsADirectoryError:
        return [], f"{shown}: cannot read: is a directory"
    except PermissionError:
        return [], f"{shown}: cannot read: permission denied"
    except UnicodeDecodeError:
        return [], f"{shown}: cannot read: not UTF-8 text"
    except OSError as exc:
        return [], f"{shown}: cannot read: {exc.strerror or exc}"
    try:
        raw = load_all(text)
    except yaml.YAMLError as exc:
        return [], f"{shown}: not valid YAML: {yaml_problem(exc)}"
    documents: list[Document] = []
    for index, obj in enumerate(raw, start=1):
        if obj is None:
            continue  # an empty document (`---` at the end of a file)
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            for i, item in enumerate(obj["items"]):
                documents.append(Document(_label(f"{shown}#{index} items[{i}]", item), item))
        else:
            documents.append(Document(_label(f"{shown}#{index}", obj), obj))
    return documents, None


def _label(prefix: str, obj: Any) -> str:
    if not isinstance(obj, dict):
        return prefix
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "?"
    metadata = obj.get("metadata")
    name = None
    if isinstance(metadata, dict):
        name = metadata.get("name") or metadata.get("generateName")
    return f"{prefix} ({kind}/{name})" if name else f"{prefix} ({kind})"


def check_document(
    doc: Document,
    report: TextIO,
    *,
    gang_scheduling: bool = False,
    groups: tuple[str, ...] = (KUBETRAIN_GROUP,),
    policies: list[TrainingPolicy] | None = None,
    namespace_labels: dict[str, str] | None = None,
    runtimes: Runtimes | None = None,
) -> tuple[bool, dict[str, Any] | None]:
    """Print the findings for one document; (valid?, the defaulted object or None).
    `runtimes`: the Trainer runtimes TrainJobs may name (earlier documents add theirs)."""
    obj = doc.obj
    if not isinstance(obj, dict):
        kind = "a list" if isinstance(obj, list) else f"a {type(obj).__name__}"
        print(
            f"{doc.label}: is {kind}, not a Kubernetes object (a mapping with apiVersion and kind)",
            file=report,
        )
        return False, None
    decode_errors = metadata_errors(obj)
    if decode_errors:
        for error in decode_errors:
            print(f"{doc.label}: {error}", file=report)
        return False, None
    if obj.get("kind") == POLICY_KIND:
        try:
            parse_policy(obj)
        except InvalidPolicyError as exc:
            for error in exc.errors:
                print(f"{doc.label}: {error}", file=report)
            return False, None
        print(f"{doc.label}: valid", file=report)
        return True, obj
    if group_of(obj.get("apiVersion")) == TRAINER_GROUP:
        return check_trainer_document(
            obj, doc.label, report, runtimes if runtimes is not None else known_runtimes()
        )
    if obj.get("kind") in CRON_KINDS.values():
        # a TrainingCron (KubeDL's Cron): its schedule, time zone and template, as the webhook
        cron_errors = validate_cron(obj, groups=tuple(g for g in groups if g in JOB_GROUPS) or JOB_GROUPS)
        for error in cron_errors:
            print(f"{doc.label}: {error}", file=report)
        if not cron_errors:
            print(f"{doc.label}: valid", file=report)
        return not cron_errors, obj if not cron_errors else None
    type_errors = check_type_meta(obj, groups)
    if type_errors:
        for error in type_errors:
            print(f"{doc.label}: {error}", file=report)
        return False, None
    defaulted = default_job(obj, gang_scheduling=gang_scheduling)
    final, denials, policy_warnings = defaulted.obj, list[str](), list[str]()
    if policies is not None:
        verdict = evaluate_offline(
            obj,
            defaulted.obj,
            policies,
            namespace_labels=namespace_labels,
            gang_scheduling=True if gang_scheduling else None,
        )
        final, denials, policy_warnings = verdict.obj, verdict.denials, verdict.warnings
    result = validate_job(final, groups=groups)
    for warning in dict.fromkeys([*defaulted.warnings, *result.warnings, *policy_warnings]):
        print(f"{doc.label}: warning: {warning}", file=report)
    for line in [*map(str, result.errors), *denials]:
        print(f"{doc.label}: {line}", file=report)
    ok = result.ok and not denials
    if ok:
        print(f"{doc.label}: valid", file=report)
    return ok, final
