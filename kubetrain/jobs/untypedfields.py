"""Fields kubetrain adds to a `kubeflow.org` job that Kubeflow's API types lack, kept on an
update that leaves them out (docs/behaviour.md §3, "On update only").

Clients that read and write these jobs through Kubeflow's types — Kueue (training-operator
v1.9's and mpi-operator's Go structs), Kubeflow's Python SDK models — send back only the fields
those types have: Kueue's admission and eviction updates of a job with
`runPolicy.podFailurePolicy` (kubetrain's failure rules) would otherwise drop the rules. So an
UPDATE of a `kubeflow.org` job whose `runPolicy` lacks such a field keeps the stored value;
setting it (e.g. `podFailurePolicy: {rules: []}`) still changes it. Jobs of other groups are
written with kubetrain's own types and are taken as sent. Pure, copy-on-write."""

from __future__ import annotations

from typing import Any

from kubetrain.api.groups import KUBEFLOW_GROUP, group_of

Obj = dict[str, Any]
# runPolicy fields no Kubeflow type of any kubeflow.org kind has.
UNTYPED_RUN_POLICY_FIELDS = ("podFailurePolicy",)


def keep_untyped_fields(obj: Obj, old: Obj | None) -> Obj:
    """`obj` with the stored `old` job's untyped runPolicy fields it leaves out (the same object
    when there are none to keep)."""
    if not isinstance(old, dict) or group_of(obj.get("apiVersion")) != KUBEFLOW_GROUP:
        return obj
    spec, old_spec = obj.get("spec"), old.get("spec")
    if not isinstance(spec, dict) or not isinstance(old_spec, dict):
        return obj
    run_policy, old_run_policy = spec.get("runPolicy"), old_spec.get("runPolicy")
    if not isinstance(run_policy, dict) or not isinstance(old_run_policy, dict):
        return obj
    kept = {
        k: old_run_policy[k] for k in UNTYPED_RUN_POLICY_FIELDS if k in old_run_policy and k not in run_policy
    }
    if not kept:
        return obj
    return {**obj, "spec": {**spec, "runPolicy": {**run_policy, **kept}}}
