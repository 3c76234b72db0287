"""KubeDL's spec layout in a job kind's CRD schema (training.kubedl.io): the run policy fields
inline, and the KubeDL fields kubetrain refuses kept with KubeDL's types (not pruned by the API
server), so the webhook can say why (kubetrain.jobs.kubedllayout)."""

from __future__ import annotations

from typing import Any

from kubetrain.frameworks.base import Framework
from kubetrain.jobs import listkeys
from kubetrain.jobs.kubedllayout import (
    LEGACY_MPI,
    LEGACY_MPI_WHY,
    REFUSED,
    RUN_POLICY_FIELDS,
    SCHEDULING,
    SPOT,
    SPOT_WHY,
)


def kubedl_schema(schema: dict[str, Any], framework: Framework) -> None:
    """KubeDL's spec layout in a job schema (kubetrain.jobs.kubedllayout): the run policy fields
    inline, and the fields kubetrain refuses kept (not pruned) so the webhook can say why, with
    KubeDL's types."""
    spec = schema["properties"]["spec"]["properties"]
    run_policy = spec["runPolicy"]["properties"]
    for key in RUN_POLICY_FIELDS:
        spec[key] = run_policy[key]
    scheduling = dict(run_policy[SCHEDULING])
    scheduling["properties"] = {
        **scheduling["properties"],
        "priorityClassName": {
            "type": "string",
            "description": "KubeDL's name for the PriorityClass of the job's pods.",
        },
        "priority": {
            "type": "integer",
            "format": "int32",
            "description": "A numeric priority: refused by kubetrain; name a PriorityClass in "
            "priorityClassName instead.",
        },
    }
    spec[SCHEDULING] = scheduling
    run_policy[SCHEDULING] = scheduling
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    for key, why in REFUSED.items():
        spec[key] = {**free, "description": f"KubeDL's {key}, refused by kubetrain: {why}."}
    spec["mainContainer"] = {
        "type": "string",
        "description": "The container that runs the framework; accepted when it is the one "
        "kubetrain uses (the kind's container name, or container 0) in every template.",
    }
    run_policy["cronPolicy"] = {**free, "description": f"Refused by kubetrain: {REFUSED['cronPolicy']}."}
    replica = listkeys.node(schema, f"spec.{framework.replica_field}{{}}")
    replica["properties"][SPOT] = {**free, "description": f"Refused: {SPOT_WHY}."}
    if framework.kind == "MPIJob":
        types = {"launcherOnMaster": "boolean", "processingResourceType": "string", "template": "object"}
        for key in LEGACY_MPI:
            spec[key] = {"type": types.get(key, "integer"), "description": f"Refused: {LEGACY_MPI_WHY}."}
            spec[key].update({"format": "int32"} if spec[key]["type"] == "integer" else {})
        spec["template"]["x-kubernetes-preserve-unknown-fields"] = True
        spec["mpiDistribution"] = {
            "type": "string",
            "description": "KubeDL's MPI distribution, one of OpenMPI, IntelMPI or MPICH: read as "
            "mpiImplementation OpenMPI, Intel or MPICH.",
        }
