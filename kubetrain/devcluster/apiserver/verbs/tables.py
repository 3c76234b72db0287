"""Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`) as kubectl get asks for it.

Every built-in kind devcluster serves gets kube-apiserver's columns, priorities (the `-o wide`
ones are priority 1) and cells (printers/: core.py nodes, services, endpoints, namespaces,
secrets, configmaps, serviceaccounts, PVCs; pods.py; events.py core/v1 and events.k8s.io/v1
Events; cluster.py leases, priorityclasses, HPAs, ingresses, role bindings, webhook
configurations, and NAME CREATED AT for roles, cluster roles and CRDs); custom resources their
additionalPrinterColumns (printers/custom.py). Rows are in the order of the list. As kube-apiserver
does, every cell is sent, the wide ones too; kubectl hides priority-1 columns unless asked. A
finished pod's row carries kube-apiserver's `Completed` row condition (kubectl prints the row all
the same: `kubectl get` does not read row conditions).
"""

from __future__ import annotations

from datetime import UTC, datetime

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.core import Target
from kubetrain.devcluster.apiserver.verbs.printers import columns_and_rows, row_conditions


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def table(
    t: Target, items: list[Obj], list_meta: Obj, include_object: str | None, now: datetime | None = None
) -> Obj:
    cols, rows = columns_and_rows(t.rt, items, now or datetime.now(UTC))
    out_rows = []
    for obj, cells in zip(items, rows, strict=True):
        if include_object == "Object":
            embedded: Obj = {**obj, "apiVersion": t.api_version, "kind": t.rt.kind}
        elif include_object == "None":
            embedded = {}
        else:
            embedded = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        out_row: Obj = {"cells": cells}
        conditions = row_conditions(t.rt, obj)
        if conditions:  # `conditions,omitempty`
            out_row["conditions"] = conditions
        out_row["object"] = embedded
        out_rows.append(out_row)
    md = {k: v for k, v in list_meta.items() if k in ("resourceVersion", "continue", "remainingItemCount")}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": md,
        "columnDefinitions": cols,
        "rows": out_rows,
    }
