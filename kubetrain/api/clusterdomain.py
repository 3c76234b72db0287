"""The cluster domain: the kubelet's `--cluster-domain` (`cluster.local` unless the cluster says
otherwise), the suffix of every Service and pod DNS name (`<svc>.<ns>.svc.<domain>`).

The operator is told it once per process (`kubetrain run|controller|webhook --cluster-domain`,
else `$CUSTOM_CLUSTER_DOMAIN`, training-operator's variable; the chart's `clusterDomain`), and
every DNS name kubetrain writes into a pod or its config follows one of two rules:

- names that always carry a domain use the domain in effect — the configured one, else
  `cluster.local` (`ClusterDomain.name`, `service_fqdn`): MPIJob workers' DNS search
  (mpi-operator hard-codes `cluster.local`), Trainer's Flux broker config (so does Trainer),
  the webhook certificate's SANs;
- names that upstream writes short (`….svc`) and qualifies only when a domain was configured
  (`ClusterDomain.qualify`): TF_CONFIG's hosts, as training-operator with
  `CUSTOM_CLUSTER_DOMAIN`; MPIJob's hostfile and discover_hosts.sh, as mpi-operator with
  `--cluster-domain`. Nothing configured: they stay exactly as before.

Every other name (PyTorch MASTER_ADDR, JAX's coordinator, Paddle, XGBoost, MXNet, Trainer's
hostfile and torch env) is a short name resolved through the pod's DNS search path, which the
kubelet builds from its own cluster domain, so it carries none. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.dnsnames import (
    MAX_LABEL_LENGTH,
    MAX_SUBDOMAIN_LENGTH,
    is_dns1123_subdomain,
)
from kubetrain.api.errors import QUOTE

DEFAULT_CLUSTER_DOMAIN = "cluster.local"  # the kubelet's default
ENV_VAR = "CUSTOM_CLUSTER_DOMAIN"  # training-operator v1's variable (pkg/controller.v1/tensorflow)
FLAG = "--cluster-domain"
VALID = (
    "must be a DNS subdomain such as cluster.local: lower-case letters, digits, '-' and '.', "
    f"labels of 1-{MAX_LABEL_LENGTH} characters starting and ending with a letter or digit, at "
    f"most {MAX_SUBDOMAIN_LENGTH} characters in all"
)


def domain_error(value: str) -> str | None:
    """Why `value` cannot be a cluster domain (None: it can). Empty means "not set" and is fine."""
    if not value:
        return None
    if not is_dns1123_subdomain(value):
        return f"{QUOTE.encode(value)}: {VALID}"
    if any(len(label) > MAX_LABEL_LENGTH for label in value.split(".")):
        return f"{QUOTE.encode(value)}: {VALID}"
    return None


@dataclass(frozen=True, slots=True)
class ClusterDomain:
    """The cluster domain as the operator was configured; `configured` is "" when nothing set it.
    Build it through `cluster_domain` (validated)."""

    configured: str = ""

    @property
    def name(self) -> str:
        """The domain in effect: the configured one, else `cluster.local`."""
        return self.configured or DEFAULT_CLUSTER_DOMAIN

    def service_fqdn(self, service: str, namespace: str) -> str:
        """`<service>.<namespace>.svc.<domain>`: a Service's (or a headless Service's
        subdomain's) fully qualified name, with the domain in effect."""
        return f"{service}.{namespace}.svc.{self.name}"

    def qualify(self, host: str) -> str:
        """`<host>.<domain>` for a `….svc` name when a domain was configured; `host` unchanged
        otherwise (the upstream rule for TF_CONFIG and MPI hostfiles)."""
        if self.configured and host.endswith(".svc"):
            return f"{host}.{self.configured}"
        return host


UNSET = ClusterDomain()


def cluster_domain(value: str | None) -> ClusterDomain:
    """A validated `ClusterDomain`; ValueError (the message says what is valid) for a bad one."""
    text = value or ""
    problem = domain_error(text)
    if problem is not None:
        raise ValueError(problem)
    return ClusterDomain(text)
