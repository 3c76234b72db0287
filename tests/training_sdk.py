"""Kubeflow's v1 training SDK (`kubeflow.training`) models for the tests of every tier. Import
with `from training_sdk import v1_mpijob` (tests/ is on pytest's `pythonpath`) after the module's
`pytest.importorskip` of the SDK (a dev dependency)."""

from __future__ import annotations

from typing import Any


def v1_mpijob(
    models: Any, name: str, image: str, launcher: list[str] | None, worker: list[str] | None, workers: int = 2
) -> Any:
    """A `kubeflow.org/v1` MPIJob as the SDK's models build it: one Launcher running `launcher`,
    `workers` Workers running `worker` (None: the image's command), container `mpi`,
    cleanPodPolicy Running."""

    def replica(replicas: int, command: list[str] | None) -> Any:
        container = models.V1Container(name="mpi", image=image, command=command)
        return models.KubeflowOrgV1ReplicaSpec(
            replicas=replicas,
            template=models.V1PodTemplateSpec(spec=models.V1PodSpec(containers=[container])),
        )

    return models.KubeflowOrgV1MPIJob(
        api_version="kubeflow.org/v1",
        kind="MPIJob",
        metadata=models.V1ObjectMeta(name=name),
        spec=models.KubeflowOrgV1MPIJobSpec(
            mpi_replica_specs={"Launcher": replica(1, launcher), "Worker": replica(workers, worker)},
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="Running"),
        ),
    )
