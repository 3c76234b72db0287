"""MXJob: MXNet training (local or parameter-server) and tuning (MXTune) jobs."""

from __future__ import annotations

from typing import Literal

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec

JobMode = Literal["MXTrain", "MXTune"]


class MXJobSpec(JobSpecBase):
    job_mode: JobMode | None = None
    mx_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.mx_replica_specs


class MXJob(JobBase):
    spec: MXJobSpec
