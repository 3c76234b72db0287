"""What a controller is configured with (`kubetrain controller`'s flags, `kubetrain dev`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.gangschedulers import NONE
from kubetrain.api.groups import KUBETRAIN_GROUP
from kubetrain.api.servicemode import HEADLESS
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS
from kubetrain.operator.progressenv import ProgressInjection


@dataclass
class ControllerConfig:
    namespaces: list[str] = field(default_factory=list)  # empty: every namespace
    workers: int = 4
    gang_scheduler: str = NONE  # a --gang-scheduler value (kubetrain.api.gangschedulers)
    scheduler_name: str | None = None
    service_mode: str = HEADLESS  # jobs without a kubetrain.io/service-mode annotation
    cluster_domain: ClusterDomain = UNSET  # --cluster-domain, else $CUSTOM_CLUSTER_DOMAIN
    # API groups whose job kinds are reconciled (kubetrain.api.groups): kubetrain.io, kubeflow.org
    api_groups: tuple[str, ...] = (KUBETRAIN_GROUP,)
    # Coalescing of pod events and status-only job updates per job: the window is
    # `event_batch_factor` times the job's last decision time, at most `event_batch_max` seconds
    # (so re-planning a job from its pods' events takes at most ~1/factor of a core).
    event_batch_factor: float = 50.0
    event_batch_max: float = 1.0
    max_replicas: int = DEFAULT_MAX_REPLICAS  # --max-replicas-per-job
    progress: ProgressInjection | None = None  # what pods get to report progress (--status-server-url)
