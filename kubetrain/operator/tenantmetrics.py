"""Jobs per tenant (KubeDL's `kubedl.io/tenancy`), as a Prometheus counter with a cardinality cap.

`kubetrain_tenant_jobs_total{tenant, event}` counts jobs created (first seen by the controller),
succeeded and failed, by the job's tenant: its `tenancy.kubetrain.io/tenant` label, else the
tenant of its `kubedl.io/tenancy` annotation; a job without one counts as tenant "". Tenants are
chosen by users, so the number of series is capped: the first `MAX_TENANTS` distinct tenants a
process sees get their own series, every later one is counted under tenant `_other` (and a
warning is logged once). The cap is per process and lasts until restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter

from kubetrain.api.errors import QUOTE
from kubetrain.api.labels import LABEL_TENANT
from kubetrain.jobs.tenancy import tenancy_labels
from kubetrain.serving.metrics import REGISTRY

log = logging.getLogger(__name__)

MAX_TENANTS = 100
OTHER_TENANT = "_other"

TENANT_JOBS = Counter(
    "kubetrain_tenant_jobs_total",
    "Jobs created, succeeded and failed per tenant (kubedl.io/tenancy); tenants past the cap "
    f"count as {OTHER_TENANT}.",
    ["tenant", "event"],
    registry=REGISTRY,
)


class TenantLabels:
    """The `tenant` label value of each job: its tenant while fewer than `cap` are known."""

    def __init__(self, cap: int = MAX_TENANTS) -> None:
        self.cap = cap
        self._known: set[str] = set()
        self._warned = False
        self._lock = threading.Lock()

    def value(self, tenant: str) -> str:
        with self._lock:
            if tenant in self._known or tenant == "":
                return tenant
            if len(self._known) < self.cap:
                self._known.add(tenant)
                return tenant
            if not self._warned:
                self._warned = True
                log.warning(
                    "more than %d tenants: kubetrain_tenant_jobs_total counts tenant %s and later ones as %s",
                    self.cap,
                    QUOTE.encode(tenant),
                    QUOTE.encode(OTHER_TENANT),
                )
            return OTHER_TENANT


TENANTS = TenantLabels()


def tenant_of(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    value = labels.get(LABEL_TENANT) if isinstance(labels, Mapping) else None
    if isinstance(value, str) and value:
        return value
    return tenancy_labels(job).get(LABEL_TENANT, "")


def count_tenant_job(job: Mapping[str, Any], event: str) -> None:
    """Count `event` (created, succeeded, failed) for the job's tenant."""
    TENANT_JOBS.labels(tenant=TENANTS.value(tenant_of(job)), event=event).inc()
