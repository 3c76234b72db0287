"""The Framework protocol: everything kubetrain needs to know that differs between frameworks.

Adding a framework = one module implementing this protocol + one line in `registry.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kubetrain.api.common import JobBase
from kubetrain.api.errors import FieldError
from kubetrain.frameworks.env import JobLayout, ReplicaCounts


class Framework(Protocol):
    # --- identity and CRD naming -------------------------------------------------------------
    kind: str  # "TFJob"
    plural: str  # "tfjobs"
    singular: str  # "tfjob"
    short_names: tuple[str, ...]  # ("tfj",)
    job_model: type[JobBase]
    # --- replicas ------------------------------------------------------------------------------
    replica_field: str  # wire name of the replica map: "tfReplicaSpecs"
    replica_types: tuple[str, ...]  # canonical spellings, in priority order (who starts first)
    # Replica types whose pod 0 carries `kubetrain.io/job-role: master` (Chief/Master/Scheduler).
    master_types: tuple[str, ...]
    # --- the framework container -----------------------------------------------------------------
    container_name: str  # "tensorflow"
    port_name: str  # "tfjob-port"
    default_port: int  # 2222
    default_restart_policy: str  # "Never"
    # Environment variable names the operator sets (a user setting one gets a warning).
    operator_env_names: frozenset[str]

    def validate_spec(self, job: JobBase, base_path: str) -> list[FieldError]:
        """Framework-specific rules of docs/behaviour.md §3 on a parsed (defaulted) job."""
        ...

    # --- engine (docs/behaviour.md §4-§5; types in kubetrain.frameworks.env) -------------------------
    def cluster_env(self, job: JobLayout, replica_type: str, index: int) -> list[dict[str, str]]:
        """The cluster variables for pod `index` of `replica_type` (`[{"name", "value"}]`), in a
        stable order; empty (or only process-local settings) for a standalone job."""
        ...

    def succeeded(self, job: JobLayout, counts: Mapping[str, ReplicaCounts]) -> bool:
        """The framework's success rule over the observed per-type pod counts."""
        ...
