"""KubeDL's spec layout in a job kind's CRD schema (training.kubedl.io): the run policy fields
inline, and the KubeDL fields kubetrain refuses kept with KubeDL's types (not pruned by the API
server), so the webhook can say why (kubetrain.jobs.kubedllayout)."""

from __future__ import annotations

from typing import Any

from kubetrain.frameworks.base import Framework
from kubetrain.jobs import listkeys
from kubetrain.jobs.kubedllayout import (
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
    for key, json_type in framework.kubedl_refused_fields:
        spec[key] = {"type": json_type, "description": f"Refused: {framework.kubedl_refused_why}."}
        spec[key].update({"format": "int32"} if json_type == "integer" else {})
        spec[key].update({"x-kubernetes-preserve-unknown-fields": True} if json_type == "object" else {})
    if framework.kubedl_renamed_field is not None:
        name, target, pairs = framework.kubedl_renamed_field
        spec[name] = {
            "type": "string",
            "description": f"KubeDL's name for {target}: "
            + ", ".join(f"{kubedl} is {ours}" for kubedl, ours in pairs)
            + ".",
        }
