"""MXJob: MXNet training (local or parameter-server) and tuning (MXTune) jobs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec

JobMode = Literal["MXTrain", "MXTune"]


class MXJobSpec(JobSpecBase):
    job_mode: JobMode | None = Field(
        None,
        description="MXTrain (training: Scheduler, Server, Worker; the default) or MXTune "
        "(tuning: TunerTracker, TunerServer, Tuner).",
    )
    mx_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The MXJob's pods by replica type (Scheduler, Server, Worker or the tuner types): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.mx_replica_specs


class MXJob(JobBase):
    spec: MXJobSpec = Field(description="The MXJob's desired state: its replica types and run policy.")
