"""TFJob: TensorFlow training (parameter-server or multi-worker, optional Chief/Evaluator)."""

from __future__ import annotations

from typing import Literal

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec

SuccessPolicy = Literal["", "AllWorkers"]


class TFJobSpec(JobSpecBase):
    success_policy: SuccessPolicy | None = None
    enable_dynamic_worker: bool | None = None
    tf_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.tf_replica_specs


class TFJob(JobBase):
    spec: TFJobSpec
