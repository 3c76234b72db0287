"""XGBoostJob: distributed XGBoost (Rabit) and LightGBM training — one Master and Workers."""

from __future__ import annotations

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec


class XGBoostJobSpec(JobSpecBase):
    xgb_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.xgb_replica_specs


class XGBoostJob(JobBase):
    spec: XGBoostJobSpec
