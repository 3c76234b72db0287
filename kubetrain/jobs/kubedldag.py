"""KubeDL's DAG scheduling for `training.kubedl.io` jobs: which replica types wait for which.

KubeDL's `DAGScheduling` feature gate (on by default, `pkg/features/features.go`) gives a
replica type `DependOn` conditions in its defaulting (`apis/training/v1alpha1/*_defaults.go`,
`setDefault<Kind>DAGCondition(s)`), and its job controller creates a type's pods only once every
upstream type has all its `replicas` pods and each is at least at `OnPhase: Running` — Running,
Succeeded or Failed (`pkg/job_controller/dag_sched.go`, `upstreamReplicasReady`,
`phaseComparator`):

- TFJob: Worker, Chief and Master wait for PS;
- PyTorchJob: Worker waits for Master;
- XGBoostJob: Worker waits for Master;
- MPIJob: Launcher waits for Worker

(each framework's `Framework.kubedl_dag`). A rule applies only when the job has both types.
KubeDL issue 82 gives the reason: a PyTorch Worker that starts before its Master cannot reach it
and crashes, an MPI Launcher that starts before its Workers exits.

Not under a gang scheduler: a gang that counts the waiting pods can never form (KubeDL issue 180,
DAG and Volcano deadlocked, worked around there by turning the gate off), and one that leaves
them out would not gang-schedule them. With a PodGroup every pod is created at once and the
scheduler starts them together. Pure.
"""

from __future__ import annotations

from collections.abc import Collection

from kubetrain.frameworks.base import Framework


def dependencies(
    framework: Framework, replica_types: Collection[str], *, gang_scheduling: bool
) -> dict[str, tuple[str, ...]]:
    """Replica type -> the types whose pods must all have started before its pods are created,
    for a `training.kubedl.io` job of `framework` with `replica_types` (canonical names); none
    under a gang scheduler."""
    if gang_scheduling:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for downstream, upstream in framework.kubedl_dag:
        if downstream in replica_types and upstream in replica_types:
            out[downstream] = (*out.get(downstream, ()), upstream)
    return out
