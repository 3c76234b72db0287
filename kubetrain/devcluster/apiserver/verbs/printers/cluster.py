"""Built-in kinds outside core/v1, as kube-apiserver prints them (k8s.io/kubernetes
pkg/printers/internalversion/printers.go; each row function names the upstream one it follows),
and the kinds without a printer of their own (Roles, ClusterRoles, CustomResourceDefinitions):
k8s.io/apiserver's `defaultTableConvertor`, NAME and CREATED AT."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import (
    AGE,
    NAME,
    age,
    col,
    count,
    field,
    items,
    name,
    quantity,
)

LEASE_COLUMNS = [NAME, col("Holder"), AGE]


def lease_row(obj: Obj, now: datetime) -> list[Any]:
    """`printLease`: HOLDER is `spec.holderIdentity`, empty when unset."""
    return [name(obj), str(field(obj, "spec", "holderIdentity") or ""), age(obj, now)]


PRIORITYCLASS_COLUMNS = [
    NAME,
    col("Value", "integer"),
    col("Global-Default", "boolean"),
    AGE,
    col("PreemptionPolicy"),
]


def priorityclass_row(obj: Obj, now: datetime) -> list[Any]:
    """`printPriorityClass` (with PREEMPTIONPOLICY, since Kubernetes 1.32)."""
    return [
        name(obj),
        int(obj.get("value") or 0),
        obj.get("globalDefault") is True,
        age(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


WEBHOOK_COLUMNS = [NAME, col("Webhooks", "integer"), AGE]


def webhooks_row(obj: Obj, now: datetime) -> list[Any]:
    """`printMutatingWebhook` / `printValidatingWebhook`: WEBHOOKS counts `webhooks`."""
    return [name(obj), count(obj.get("webhooks")), age(obj, now)]


BINDING_COLUMNS = [
    NAME,
    col("Role"),
    AGE,
    col("Users", priority=1),
    col("Groups", priority=1),
    col("ServiceAccounts", priority=1),
]


def binding_row(obj: Obj, now: datetime) -> list[Any]:
    """`printRoleBinding` / `printClusterRoleBinding`: ROLE is `kind/name`; the subjects as
    rbac `SubjectsStrings` splits them (service accounts as `namespace/name`), `, `-joined."""
    ref = obj.get("roleRef") or {}
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in items(obj.get("subjects")):
        if not isinstance(subject, dict):
            continue
        kind, who = subject.get("kind"), str(subject.get("name", ""))
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace', '')}/{who}")
        elif kind == "User":
            users.append(who)
        elif kind == "Group":
            groups.append(who)
    return [
        name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


HPA_COLUMNS = [
    NAME,
    col("Reference"),
    col("Targets"),
    col("MinPods"),
    col("MaxPods"),
    col("Replicas"),
    AGE,
]


def _q(value: Any) -> str:
    """`(*resource.Quantity).String()`: `<nil>` for an unset quantity."""
    return "<nil>" if value is None else quantity(value)


def _percent(value: Any, unset: str) -> str:
    return f"{value}%" if isinstance(value, int) else unset


def _metric(spec: Obj, status: Obj | None) -> str:
    """One metric of `formatHPAMetrics` (autoscaling/v2 field names)."""
    kind = spec.get("type")
    source_key = {
        "External": "external",
        "Pods": "pods",
        "Object": "object",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(str(kind))
    if source_key is None:
        return "<unknown type>"
    source = spec.get(source_key) or {}
    target = source.get("target") or {}
    current_source = (status or {}).get(source_key)
    current = (current_source or {}).get("current") or {} if isinstance(current_source, dict) else None
    if kind in ("External", "Object"):
        if target.get("averageValue") is not None:
            now = (
                _q(current.get("averageValue"))
                if current and current.get("averageValue") is not None
                else "<unknown>"
            )
            return f"{now}/{_q(target.get('averageValue'))} (avg)"
        now = _q(current.get("value")) if current is not None else "<unknown>"
        return f"{now}/{_q(target.get('value'))}"
    if kind == "Pods":
        now = _q(current.get("averageValue")) if current is not None else "<unknown>"
        return f"{now}/{_q(target.get('averageValue'))}"
    resource = source.get("name", "")
    if target.get("averageValue") is not None:
        now = _q(current.get("averageValue")) if current is not None else "<unknown>"
        return f"{resource}: {now}/{_q(target.get('averageValue'))}"
    now = _percent(current.get("averageUtilization"), "<unknown>") if current is not None else "<unknown>"
    return f"{resource}: {now}/{_percent(target.get('averageUtilization'), '<auto>')}"


def format_hpa_metrics(specs: Any, statuses: Any) -> str:
    """`formatHPAMetrics`: each metric `current/target` (a resource's prefixed with its name),
    the first two shown and ` + N more...`; `<none>` without metrics."""
    metrics = [m for m in items(specs) if isinstance(m, dict)]
    if not metrics:
        return "<none>"
    current = items(statuses)
    shown = [
        _metric(m, current[i] if i < len(current) and isinstance(current[i], dict) else None)
        for i, m in enumerate(metrics)
    ]
    text = ", ".join(shown[:2])
    return f"{text} + {len(shown) - 2} more..." if len(shown) > 2 else text


def hpa_row(obj: Obj, now: datetime) -> list[Any]:
    """`printHorizontalPodAutoscaler`: REFERENCE is `kind/name`, MINPODS `<unset>` when unset."""
    spec = obj.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    low = spec.get("minReplicas")
    return [
        name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_hpa_metrics(spec.get("metrics"), field(obj, "status", "currentMetrics")),
        "<unset>" if low is None else str(low),
        int(spec.get("maxReplicas") or 0),
        int(field(obj, "status", "currentReplicas") or 0),
        age(obj, now),
    ]


INGRESS_COLUMNS = [NAME, col("Class"), col("Hosts"), col("Address"), col("Ports"), AGE]


def ingress_hosts(rules: Any) -> str:
    """`formatHosts`: up to three rule hosts then ` + N more...` (N counts rules), `*` for none."""
    rules = items(rules)
    shown: list[str] = []
    more = False
    for rule in rules:
        if len(shown) == 3:
            more = True
        host = rule.get("host") if isinstance(rule, dict) else None
        if not more and host:
            shown.append(str(host))
    if not shown:
        return "*"
    text = ",".join(shown)
    return f"{text} + {len(rules) - 3} more..." if more else text


def ingress_row(obj: Obj, now: datetime) -> list[Any]:
    """`printIngress`: CLASS `<none>` when unset; ADDRESS the load balancer's IPs, else
    hostnames, sorted (`ingressLoadBalancerStatusStringer`, wide so never clipped); PORTS `80`,
    or `80, 443` with TLS."""
    spec = obj.get("spec") or {}
    addresses: set[str] = set()
    for ingress in items(field(obj, "status", "loadBalancer", "ingress")):
        if isinstance(ingress, dict) and (ingress.get("ip") or ingress.get("hostname")):
            addresses.add(str(ingress.get("ip") or ingress.get("hostname")))
    return [
        name(obj),
        str(spec["ingressClassName"]) if spec.get("ingressClassName") is not None else "<none>",
        ingress_hosts(spec.get("rules")),
        ",".join(sorted(addresses)),
        "80, 443" if items(spec.get("tls")) else "80",
        age(obj, now),
    ]


DEFAULT_COLUMNS = [NAME, col("Created At", "date")]


def created_at(obj: Obj) -> str:
    """The CREATED AT cell: the creation time in UTC, RFC 3339 (Go's zero time when unset)."""
    when = parse_time(obj["metadata"].get("creationTimestamp"))
    if when is None:
        return "0001-01-01T00:00:00Z"
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_row(obj: Obj, now: datetime) -> list[Any]:
    """k8s.io/apiserver pkg/registry/rest `defaultTableConvertor.ConvertToTable`."""
    return [name(obj), created_at(obj)]


PDB_COLUMNS = [
    NAME,
    col("Min Available"),
    col("Max Unavailable"),
    col("Allowed Disruptions", "integer"),
    AGE,
]


def pdb_row(obj: Obj, now: datetime) -> list[Any]:
    """`printPodDisruptionBudget`: each bound as written (`IntOrString.String`), `N/A` when unset."""
    bounds = [field(obj, "spec", key) for key in ("minAvailable", "maxUnavailable")]
    shown = ["N/A" if value is None else str(value) for value in bounds]
    return [name(obj), *shown, int(field(obj, "status", "disruptionsAllowed") or 0), age(obj, now)]


ENDPOINTSLICE_COLUMNS = [NAME, col("AddressType"), col("Ports"), col("Endpoints"), AGE]


def _list_with_more(shown: list[str], total: int) -> str:
    """`listWithMoreString` with a maximum of three."""
    text = ",".join(shown)
    if total > 3:
        return f"{text} + {total - 3} more..."
    return text or "<unset>"


def endpointslice_row(obj: Obj, now: datetime) -> list[Any]:
    """`printEndpointSlice`: `formatDiscoveryPorts` (a port's number, else its name, else `*`)
    and `formatDiscoveryEndpoints` (every address of every endpoint)."""
    ports = [p for p in items(obj.get("ports")) if isinstance(p, dict)]
    port_texts = [str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*") for p in ports]
    addresses = [
        str(a) for e in items(obj.get("endpoints")) if isinstance(e, dict) for a in items(e.get("addresses"))
    ]
    return [
        name(obj),
        str(obj.get("addressType") or ""),
        _list_with_more(port_texts[:3], len(port_texts)),
        _list_with_more(addresses[:3], len(addresses)),
        age(obj, now),
    ]
