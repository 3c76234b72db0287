"""JAXJob: multi-process JAX (`jax.distributed.initialize`) — Workers, Worker 0 coordinating."""

from __future__ import annotations

from pydantic import Field

from kubetrain.api.common import JobBase, JobSpecBase, ReplicaSpec


class JAXJobSpec(JobSpecBase):
    jax_replica_specs: dict[str, ReplicaSpec] | None = Field(
        None,
        description="The JAXJob's pods by replica type (Worker only; Worker 0 coordinates): "
        "each a count, a pod template and a restartPolicy.",
    )

    def replica_specs(self) -> dict[str, ReplicaSpec] | None:
        return self.jax_replica_specs


class JAXJob(JobBase):
    spec: JAXJobSpec = Field(description="The JAXJob's desired state: its replica types and run policy.")
