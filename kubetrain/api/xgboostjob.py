"""XGBoostJob: distributed XGBoost (Rabit) and LightGBM training — one Master and Workers."""

from __future__ import annotations

from pydantic import Field

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec


class XGBoostJobSpec(JobSpecBase):
    xgb_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The XGBoostJob's pods by replica type (one Master, Workers): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.xgb_replica_specs


class XGBoostJob(JobBase):
    spec: XGBoostJobSpec = Field(
        description="The XGBoostJob's desired state: its replica types and run policy."
    )
