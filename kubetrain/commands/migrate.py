"""`kubetrain migrate FILE...`: older Kubeflow job layouts rewritten as kubetrain.io/v1 (or, with
`--group kubeflow.org`, kubeflow.org/v1) — kubetrain.jobs.migrate says what is converted.

The converted documents go to stdout as YAML (pipe them to `kubectl apply -f -`); what changed,
and why a document cannot be converted, go to stderr, one line each, prefixed by file, document
number and kind/name. Exit status 1 when any document was refused or any file unreadable."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from kubetrain.api.groups import KUBETRAIN_GROUP
from kubetrain.commands.validate import read_documents
from kubetrain.jobs.migrate import MIGRATION_GROUPS, migrate_job


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="rewrite older Kubeflow job layouts (v1alpha2, v1beta1, v1beta2, spec-level run policy, "
        "training-operator's v1 MPIJob) as the current one",
        description="Rewrite Kubeflow TFJob/PyTorchJob/MXJob manifests of older versions and layouts "
        "as kubetrain.io/v1 (or kubeflow.org/v1), and training-operator's kubeflow.org/v1 MPIJobs "
        "in mpi-operator's layout (kubetrain.io/v1, or kubeflow.org/v2beta1): converted YAML on "
        "stdout, changes and refusals on stderr.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML file(s); '-' reads stdin")
    parser.add_argument(
        "--group",
        choices=MIGRATION_GROUPS,
        default=KUBETRAIN_GROUP,
        help="API group of the result (default kubetrain.io; kubeflow.org for an operator serving it)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    converted: list[dict[str, Any]] = []
    failed = False
    for name in args.files:
        documents, problem = read_documents(name)
        if problem is not None:
            print(problem, file=sys.stderr)
            failed = True
            continue
        for doc in documents:
            migration = migrate_job(doc.obj, args.group)
            for change in migration.changes:
                print(f"{doc.label}: {change}", file=sys.stderr)
            for refusal in migration.refusals:
                print(f"{doc.label}: cannot convert: {refusal}", file=sys.stderr)
            if migration.obj is None:
                failed = True
                continue
            if not migration.changes:
                print(f"{doc.label}: already {migration.obj['apiVersion']}, unchanged", file=sys.stderr)
            converted.append(migration.obj)
    if converted:
        sys.stdout.write(yaml.safe_dump_all(converted, sort_keys=False, default_flow_style=False))
    return 1 if failed else 0
