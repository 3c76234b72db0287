"""TFJob: TensorFlow training (parameter-server or multi-worker, optional Chief/Evaluator)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec

SuccessPolicy = Literal["", "AllWorkers"]


class TFJobSpec(JobSpecBase):
    success_policy: SuccessPolicy | None = Field(
        None,
        description='When the job succeeds without a Chief or Master: "" (the default) when '
        "Worker 0 succeeds, AllWorkers when every Worker has. Immutable.",
    )
    enable_dynamic_worker: bool | None = Field(
        None,
        description="true gives each Worker a sparse TF_CONFIG (the PS list and its own address "
        "only), so Workers can be added or removed while the job runs.",
    )
    tf_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The TFJob's pods by replica type (Chief, Master, PS, Worker, Evaluator): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.tf_replica_specs


class TFJob(JobBase):
    spec: TFJobSpec = Field(description="The TFJob's desired state: its replica types and run policy.")
