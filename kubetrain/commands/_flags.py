"""The flags `kubetrain run`, `kubetrain controller` and `kubetrain webhook` share.

```python
from kubetrain.commands._flags import add_common_flags, add_webhook_flags, add_controller_flags
parser = sub.add_parser("run", ...)
add_common_flags(parser)       # --kubeconfig --gang-scheduler --scheduler-name --metrics-port
                               # --metrics-secure --metrics-cert-dir --log-level --cluster-domain
add_controller_flags(parser)   # --namespaces --workers --qps --burst --leader-elect ...
add_webhook_flags(parser)      # --webhook-port --cert-mode --cert-dir --cert-secret ...
```

Defaults are the contract between the chart, the controller and the webhook (docs/operations.md,
"`kubetrain run` flags", lists each flag with the chart value that sets it).
`configure_logging(args)` applies `--log-level`; `pod_namespace()` is `$POD_NAMESPACE` (the
chart sets it from the downward API).
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from kubetrain.api import clusterdomain
from kubetrain.api.clusterdomain import ClusterDomain
from kubetrain.api.errors import QUOTE
from kubetrain.api.gangschedulers import CHOICES, NONE
from kubetrain.api.groups import KUBETRAIN_GROUP, SERVABLE_GROUPS
from kubetrain.api.servicemode import HEADLESS, SERVICE_MODES
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS

GANG_SCHEDULERS = CHOICES
CERT_MODES = ("directory", "self-managed")
LOG_LEVELS = ("debug", "info", "warning", "error")


def pod_namespace() -> str | None:
    return os.environ.get("POD_NAMESPACE") or None


def _int_within(value: str, low: int, high: int | None, what: str, valid: str) -> int:
    """`value` as an integer from `low` to `high` (None: no upper bound); else an argparse error
    saying it is not `what`, or, out of range, what is `valid`."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} is not {what}") from None
    if n < low or (high is not None and n > high):
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} {valid}")
    return n


def _positive_int(value: str) -> int:
    return _int_within(value, 1, None, "an integer", "must be at least 1")


def _non_negative_int(value: str) -> int:
    return _int_within(value, 0, None, "an integer", "must be 0 or more")


def _positive_float(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} is not a number of seconds") from None
    if not n > 0 or n == float("inf"):
        raise argparse.ArgumentTypeError(f"{QUOTE.encode(value)} must be a positive number of seconds")
    return n


def _port(value: str) -> int:
    return _int_within(value, 0, 65535, "a port number", "is not a port number (0-65535)")


def _namespaces(value: str) -> list[str]:
    return [ns.strip() for ns in value.split(",") if ns.strip()]


def api_groups_arg(text: str) -> list[str]:
    """`--api-groups`: a comma-separated list of the API groups kubetrain can serve."""
    groups = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in groups if g not in SERVABLE_GROUPS]
    if not groups or unknown:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or repr(text)}: must be a comma-separated list of "
            f"{', '.join(SERVABLE_GROUPS)}"
        )
    return list(dict.fromkeys(groups))


class _FromEnv(str):
    """A flag's default taken from the environment: its errors name the variable."""

    variable: str

    def __new__(cls, value: str, variable: str) -> _FromEnv:
        self = super().__new__(cls, value)
        self.variable = variable
        return self


def cluster_domain_arg(value: str) -> ClusterDomain:
    """`--cluster-domain` (or, for its default, `$CUSTOM_CLUSTER_DOMAIN`): a DNS subdomain, or
    empty for "not set"."""
    try:
        return clusterdomain.cluster_domain(value)
    except ValueError as exc:
        source = f"${value.variable}=" if isinstance(value, _FromEnv) else ""
        raise argparse.ArgumentTypeError(f"{source}{exc}") from None


def add_cluster_domain_flag(g: Any) -> None:
    """`--cluster-domain`, its default `$CUSTOM_CLUSTER_DOMAIN` (training-operator's variable),
    read when the parser is built; argparse checks a string default as it checks the flag."""
    env = clusterdomain.ENV_VAR
    g.add_argument(
        clusterdomain.FLAG,
        type=cluster_domain_arg,
        default=_FromEnv(os.environ.get(env, ""), env),
        metavar="DOMAIN",
        help=f"the cluster's DNS domain, the kubelet's --cluster-domain (default ${env}, else "
        f"{clusterdomain.DEFAULT_CLUSTER_DOMAIN}): MPIJob workers' DNS search, Flux brokers' "
        "names and the webhook certificate use it; when set (by the flag or the variable) "
        "TF_CONFIG and MPIJob hostfile names end in .svc.DOMAIN as in training-operator and "
        "mpi-operator, else in .svc",
    )


def add_process_flags(g: Any) -> None:
    """The API server, the metrics port and logging: every long-running command has them."""
    g.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)",
    )
    g.add_argument(
        "--metrics-port",
        type=_port,
        default=8080,
        help="port serving /metrics, /healthz and /readyz (default 8080; plain HTTP unless --metrics-secure)",
    )
    g.add_argument(
        "--metrics-bind-address",
        metavar="ADDRESS",
        default="0.0.0.0",
        help="address the /metrics, /healthz and /readyz port listens on (default 0.0.0.0; the "
        "kubelet's probes need the pod IP, so 127.0.0.1 only fits without probes on this port)",
    )
    g.add_argument(
        "--metrics-secure",
        action="store_true",
        help="serve the metrics port over HTTPS (TLS 1.2+) and answer /metrics only to a bearer "
        "token whose user may get the non-resource URL /metrics (TokenReview + "
        "SubjectAccessReview, decisions cached 10 s); /healthz and /readyz stay unauthenticated",
    )
    g.add_argument(
        "--metrics-cert-dir",
        metavar="DIR",
        default=None,
        help="with --metrics-secure: tls.crt/tls.key of the metrics port, reloaded when they "
        "change (default: a self-signed certificate generated at start)",
    )
    # A --webhook-workers child also serves its metrics here, for the parent to add up.
    g.add_argument("--metrics-unix-socket", metavar="PATH", default=None, help=argparse.SUPPRESS)
    g.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="log level (default info)")


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """Flags every long-running command that handles jobs has."""
    g = parser.add_argument_group("cluster and process")
    add_process_flags(g)
    g.add_argument(
        "--gang-scheduler",
        choices=GANG_SCHEDULERS,
        default=NONE,
        help="gang scheduling through PodGroups of this scheduler (default: none); the "
        "webhook then defaults runPolicy.schedulingPolicy.minAvailable",
    )
    g.add_argument(
        "--scheduler-name",
        metavar="NAME",
        default=None,
        help="schedulerName set on pods (default: the gang scheduler's, else the cluster default)",
    )
    g.add_argument(
        "--max-replicas-per-job",
        type=_positive_int,
        default=DEFAULT_MAX_REPLICAS,
        metavar="N",
        help=f"refuse jobs with more than N replicas in total (elastic Workers counted at maxReplicas), "
        f"at admission and in the controller (default {DEFAULT_MAX_REPLICAS})",
    )
    add_cluster_domain_flag(g)


def add_scope_flags(g: Any) -> None:
    """What a process watches and how fast it may call the API server: `--namespaces`,
    `--api-groups`, `--qps`, `--burst` (the controller's, and `kubetrain status-server`'s)."""
    g.add_argument(
        "--namespaces",
        type=_namespaces,
        default=[],
        metavar="NS1,NS2",
        help="watch only these namespaces (default: all)",
    )
    g.add_argument(
        "--api-groups",
        type=api_groups_arg,
        default=[KUBETRAIN_GROUP],
        metavar="GROUP[,GROUP]",
        help="API groups whose job kinds are served: kubetrain.io (default), kubeflow.org "
        "(replacing Kubeflow's training operator; its CRDs from `kubetrain crds --group "
        "kubeflow.org`), training.kubedl.io (KubeDL's jobs; CRDs from `kubetrain crds --group "
        "training.kubedl.io`), trainer.kubeflow.org (Kubeflow Trainer v2's TrainJob and runtimes; "
        "CRDs from `kubetrain crds --group trainer.kubeflow.org`), apps.kubedl.io (KubeDL's Cron "
        "beside TrainingCron; CRD from `kubetrain crds --group apps.kubedl.io`), in any combination",
    )
    g.add_argument("--qps", type=float, default=150.0, help="client-side API request rate (default 150)")
    g.add_argument("--burst", type=_positive_int, default=300, help="client-side API burst (default 300)")


def add_controller_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of the controller (`kubetrain run`, `kubetrain controller`)."""
    g = parser.add_argument_group("controller")
    add_scope_flags(g)
    g.add_argument(
        "--service-mode",
        choices=SERVICE_MODES,
        default=HEADLESS,
        help="how pods are addressed unless a job's kubetrain.io/service-mode annotation says: "
        "headless (one headless Service per job, <pod>.<job>.<ns>.svc; the default) or per-pod "
        "(one Service per pod, the bare pod name resolves, as with Kubeflow's operator)",
    )
    g.add_argument("--workers", type=_positive_int, default=4, help="concurrent reconciles (default 4)")
    g.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect a leader through a coordination.k8s.io Lease (default: on)",
    )
    g.add_argument(
        "--leader-election-namespace",
        metavar="NS",
        default=pod_namespace(),
        help="namespace of the Lease (default: $POD_NAMESPACE)",
    )
    g.add_argument(
        "--leader-election-id",
        metavar="NAME",
        default="kubetrain-controller",
        help="name of the Lease (default kubetrain-controller)",
    )


def add_webhook_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of the admission webhook server (`kubetrain run`, `kubetrain webhook`)."""
    g = parser.add_argument_group("webhook and certificates")
    g.add_argument(
        "--webhook-port", type=_port, default=9443, help="HTTPS port of /mutate and /validate (default 9443)"
    )
    g.add_argument(
        "--webhook-host",
        metavar="ADDRESS",
        default="0.0.0.0",
        help="address the webhook listens on (default 0.0.0.0)",
    )
    g.add_argument(
        "--webhook-max-request-bytes",
        type=_positive_int,
        default=7 * 1024 * 1024,
        metavar="BYTES",
        help="largest AdmissionReview body accepted (default 7340032 = 7 MiB: kube-apiserver stores "
        "objects up to 3 MiB and an UPDATE review carries the new and the old object)",
    )
    g.add_argument(
        "--webhook-workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="processes serving the webhook port (SO_REUSEPORT; default 1): N > 1 uses N CPUs for "
        "admission reviews",
    )
    g.add_argument(
        "--webhook-review-processes",
        type=_non_negative_int,
        default=2,
        metavar="N",
        help="worker processes that decode and decide reviews over 256 KiB, so a huge review never "
        "pauses /healthz, small reviews or the controller (default 2; 0: decide them in a thread)",
    )
    g.add_argument(
        "--webhook-review-time-limit",
        type=_positive_float,
        default=5.0,
        metavar="SECONDS",
        help="a review process still deciding after this long is killed and replaced; the review "
        "gets HTTP 503 and kube-apiserver applies the failurePolicy (default 5)",
    )
    # Set on the extra processes `--webhook-workers` starts (they share the port).
    g.add_argument("--webhook-reuse-port", action="store_true", help=argparse.SUPPRESS)
    g.add_argument(
        "--cert-mode",
        choices=CERT_MODES,
        default="directory",
        help="directory: tls.crt/tls.key in --cert-dir, hot-reloaded (a mounted Secret, also what "
        "cert-manager fills); self-managed: generate, keep in --cert-secret, inject caBundle",
    )
    g.add_argument(
        "--cert-dir",
        metavar="DIR",
        default="/tmp/kubetrain/certs",
        help="directory of tls.crt and tls.key (default /tmp/kubetrain/certs)",
    )
    g.add_argument(
        "--cert-secret",
        metavar="NAME",
        default="kubetrain-webhook-certs",
        help="self-managed: Secret holding the CA and serving certificate (default kubetrain-webhook-certs)",
    )
    g.add_argument(
        "--webhook-service",
        metavar="NAME",
        default="kubetrain-webhook",
        help="Service in front of the webhook; names the serving certificate (default kubetrain-webhook)",
    )
    g.add_argument(
        "--webhook-namespace",
        metavar="NS",
        default=pod_namespace(),
        help="namespace of the Service and the Secret (default: $POD_NAMESPACE)",
    )
    g.add_argument(
        "--mutating-webhook-config",
        metavar="NAME",
        default=None,
        help="self-managed: MutatingWebhookConfiguration to keep the caBundle of",
    )
    g.add_argument(
        "--validating-webhook-config",
        metavar="NAME",
        default=None,
        help="self-managed: ValidatingWebhookConfiguration to keep the caBundle of",
    )
    g.add_argument(
        "--cert-extra-dns",
        metavar="NAME",
        action="append",
        default=[],
        help="self-managed: extra DNS name in the serving certificate (repeatable)",
    )
    g.add_argument(
        "--cert-extra-ip",
        metavar="IP",
        action="append",
        default=[],
        help="self-managed: extra IP address in the serving certificate (repeatable)",
    )
    g.add_argument(
        "--training-policies",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="watch TrainingPolicies and Namespaces and apply matching policies' defaults and limits "
        "(default on; /readyz waits for both caches)",
    )


def configure_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
