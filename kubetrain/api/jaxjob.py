"""JAXJob: multi-process JAX (`jax.distributed.initialize`) — Workers, Worker 0 coordinating."""

from __future__ import annotations

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec


class JAXJobSpec(JobSpecBase):
    jax_replica_specs: dict[str, ReplicaSpec] | None = None

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.jax_replica_specs


class JAXJob(JobBase):
    spec: JAXJobSpec
