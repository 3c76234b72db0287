"""Server-side printing's columns and cells for each kind devcluster serves, as kube-apiserver's
table convertors make them (one module per group of kinds: pods.py, core.py, events.py,
cluster.py, custom.py; common.py holds what they share)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj, ResourceType
from kubetrain.devcluster.apiserver.verbs.printers import cluster, core, custom, events, pods
from kubetrain.devcluster.apiserver.verbs.printers.common import Row

# resource key (`plural` or `plural.group`) -> (column definitions, row function)
PRINTERS: dict[str, tuple[list[Obj], Row]] = {
    "pods": (pods.COLUMNS, pods.row),
    "events": (events.COLUMNS, events.row),
    "events.events.k8s.io": (events.COLUMNS, events.events_k8s_io_row),
    "nodes": (core.NODE_COLUMNS, core.node_row),
    "services": (core.SERVICE_COLUMNS, core.service_row),
    "endpoints": (core.ENDPOINTS_COLUMNS, core.endpoints_row),
    "endpointslices.discovery.k8s.io": (cluster.ENDPOINTSLICE_COLUMNS, cluster.endpointslice_row),
    "namespaces": (core.NAMESPACE_COLUMNS, core.namespace_row),
    "secrets": (core.SECRET_COLUMNS, core.secret_row),
    "configmaps": (core.CONFIGMAP_COLUMNS, core.configmap_row),
    "serviceaccounts": (core.SERVICEACCOUNT_COLUMNS, core.serviceaccount_row),
    "persistentvolumeclaims": (core.PVC_COLUMNS, core.pvc_row),
    "resourcequotas": (core.RESOURCEQUOTA_COLUMNS, core.resourcequota_row),
    "leases.coordination.k8s.io": (cluster.LEASE_COLUMNS, cluster.lease_row),
    "priorityclasses.scheduling.k8s.io": (cluster.PRIORITYCLASS_COLUMNS, cluster.priorityclass_row),
    "poddisruptionbudgets.policy": (cluster.PDB_COLUMNS, cluster.pdb_row),
    "horizontalpodautoscalers.autoscaling": (cluster.HPA_COLUMNS, cluster.hpa_row),
    "ingresses.networking.k8s.io": (cluster.INGRESS_COLUMNS, cluster.ingress_row),
    "rolebindings.rbac.authorization.k8s.io": (cluster.BINDING_COLUMNS, cluster.binding_row),
    "clusterrolebindings.rbac.authorization.k8s.io": (cluster.BINDING_COLUMNS, cluster.binding_row),
    "mutatingwebhookconfigurations.admissionregistration.k8s.io": (
        cluster.WEBHOOK_COLUMNS,
        cluster.webhooks_row,
    ),
    "validatingwebhookconfigurations.admissionregistration.k8s.io": (
        cluster.WEBHOOK_COLUMNS,
        cluster.webhooks_row,
    ),
}


# resource key -> the table row's conditions of one object (`TableRow.conditions`); kinds not
# listed send none, as kube-apiserver's printers for them do.
ROW_CONDITIONS: dict[str, Callable[[Obj], list[Obj]]] = {"pods": pods.row_conditions}


def row_conditions(rt: ResourceType, obj: Obj) -> list[Obj]:
    conditions = ROW_CONDITIONS.get(rt.key)
    return conditions(obj) if conditions and not rt.custom else []


def columns_and_rows(rt: ResourceType, items: list[Obj], now: datetime) -> tuple[list[Obj], list[list[Any]]]:
    """The table's column definitions and one row of cells per item. Roles, ClusterRoles and
    CustomResourceDefinitions (and any other kind without a printer) get NAME and CREATED AT, as
    kube-apiserver's default table convertor prints them; a custom resource its CRD's columns."""
    if rt.custom:  # without printer columns: NAME AGE (apiextensions `serveDefaultColumnsIfEmpty`)
        return custom.columns_and_rows(rt.printer_columns or [], items, now)
    columns, row = PRINTERS.get(rt.key, (cluster.DEFAULT_COLUMNS, cluster.default_row))
    return columns, [row(o, now) for o in items]
