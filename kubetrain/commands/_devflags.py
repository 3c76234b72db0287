"""The flags of `kubetrain run` that change what the operator does, offered by `kubetrain dev` too
(same names, types, defaults and help), so anything an install can be configured to do can be
tried without a cluster. `RUN_ONLY` lists the `kubetrain run` flags `kubetrain dev` does not take
and why: they say how the process is deployed (certificates, ports, leader election, metrics,
client rate limits, the webhook's process model), not how jobs behave.
`tests/unit/test_dev_flags.py` fails when `kubetrain run` gains a flag that is in neither list.
"""

from __future__ import annotations

import argparse
from typing import Any

from kubetrain.api.servicemode import HEADLESS, SERVICE_MODES
from kubetrain.commands._flags import _namespaces, _positive_int, add_cluster_domain_flag
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS

# `kubetrain run` flags `kubetrain dev` takes too (besides --gang-scheduler and --api-groups,
# which it always had), with the DevStackOptions field each sets.
SHARED = {
    "--service-mode": "service_mode",
    "--cluster-domain": "cluster_domain",
    "--scheduler-name": "scheduler_name",
    "--max-replicas-per-job": "max_replicas",
    "--training-policies": "training_policies",
    "--namespaces": "namespaces",
    "--workers": "workers",
}

RUN_ONLY = {
    "--kubeconfig": "dev serves its own emulated cluster",
    "--log-level": "log verbosity, not behaviour",
    "--metrics-bind-address": "metrics endpoint: deployment",
    "--metrics-port": "metrics endpoint: deployment",
    "--metrics-secure": "metrics endpoint: deployment",
    "--metrics-cert-dir": "metrics endpoint: deployment",
    "--qps": "client rate limit of the process: dev runs unthrottled",
    "--burst": "client rate limit of the process: dev runs unthrottled",
    "--leader-elect": "one replica in dev",
    "--leader-election-id": "one replica in dev",
    "--leader-election-namespace": "one replica in dev",
    "--webhook-host": "dev binds the webhook to loopback",
    "--webhook-port": "dev picks a free port",
    "--webhook-namespace": "the Service the certificate names: deployment",
    "--webhook-service": "the Service the certificate names: deployment",
    "--webhook-max-request-bytes": "request size limit of the server process: deployment",
    "--webhook-review-processes": "the webhook's process model: deployment",
    "--webhook-review-time-limit": "the webhook's process model: deployment",
    "--webhook-workers": "the webhook's process model: deployment",
    "--cert-mode": "dev generates its own certificate",
    "--cert-dir": "dev generates its own certificate",
    "--cert-secret": "dev generates its own certificate",
    "--cert-extra-dns": "dev generates its own certificate",
    "--cert-extra-ip": "dev generates its own certificate",
    "--mutating-webhook-config": "dev registers its own webhook configurations",
    "--validating-webhook-config": "dev registers its own webhook configurations",
    # `kubetrain dev` always serves the training-progress endpoint, on a free loopback port with
    # its own certificate, and injects its URL into pods.
    "--status-server-port": "dev serves the progress endpoint on a free loopback port",
    "--status-server-url": "dev injects its loopback endpoint's URL",
    "--status-server-cert-dir": "dev generates its own certificate",
    "--status-server-interval": "write rate of the server process: deployment (dev uses 5 s)",
    "--status-server-process": "dev serves the endpoint in its one process, next to devcluster",
}


def add_behaviour_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("operator behaviour (as `kubetrain run` and the chart set it)")
    g.add_argument(
        "--service-mode",
        choices=SERVICE_MODES,
        default=HEADLESS,
        help="how pods are addressed unless a job's kubetrain.io/service-mode annotation says: "
        "headless (one headless Service per job; the default) or per-pod (one Service per pod, "
        "the bare pod name resolves, as with Kubeflow's operator); chart serviceMode",
    )
    add_cluster_domain_flag(g)
    g.add_argument(
        "--scheduler-name",
        metavar="NAME",
        default=None,
        help="schedulerName set on pods (default: the gang scheduler's, else the cluster default); "
        "without --gang-scheduler the simulated kubelet binds pods of that scheduler too",
    )
    g.add_argument(
        "--max-replicas-per-job",
        type=_positive_int,
        default=DEFAULT_MAX_REPLICAS,
        metavar="N",
        help=f"refuse jobs with more than N replicas in total, at admission and in the controller "
        f"(default {DEFAULT_MAX_REPLICAS}); chart maxReplicasPerJob",
    )
    g.add_argument(
        "--training-policies",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="apply matching TrainingPolicies' defaults and limits (default on)",
    )
    g.add_argument(
        "--namespaces",
        type=_namespaces,
        default=[],
        metavar="NS1,NS2",
        help="the controller watches only these namespaces (default: all); a job elsewhere is "
        "admitted but never reconciled, as with the chart's watchNamespaces",
    )
    g.add_argument("--workers", type=_positive_int, default=4, help="concurrent reconciles (default 4)")


def devstack_options(args: argparse.Namespace) -> dict[str, Any]:
    """The DevStackOptions fields the behaviour flags set."""
    values = {field: getattr(args, flag[2:].replace("-", "_")) for flag, field in SHARED.items()}
    values["namespaces"] = tuple(values["namespaces"])
    return values
