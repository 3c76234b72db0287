"""The PodGroup CRDs of the two gang schedulers kubetrain integrates with, trimmed.

Field names and types follow the upstream definitions:

- Volcano `config/crd/bases/scheduling.volcano.sh_podgroups.yaml`, version `v1beta1`:
  spec `minMember` (int32), `minResources` (quantities), `minTaskMember`, `queue`,
  `priorityClassName`; status `phase`, `conditions`, `running`/`succeeded`/`failed`.
- scheduler-plugins `manifests/crds/scheduling.x-k8s.io_podgroups.yaml`, version `v1alpha1`:
  spec `minMember`, `minResources`, `scheduleTimeoutSeconds`; status `phase`, `occupiedBy`,
  `scheduled`/`running`/`succeeded`/`failed`, `scheduleStartTime`.

Trimmed: descriptions are short and the v1 (unserved-by-kubetrain) Volcano version is left out.
Both have the `status` subresource, so the gang scheduler (or a test) writes status through
`podgroups/status` and the operator's spec writes never touch it.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"

# A resource quantity (the apimachinery `resource.Quantity` pattern), as controller-gen writes it.
_QUANTITY: Obj = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
_INT32: Obj = {"type": "integer", "format": "int32"}
_RESOURCES: Obj = {"type": "object", "additionalProperties": _QUANTITY}


def _crd(group: str, version: str, short_names: list[str], columns: list[Obj], spec: Obj, status: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": "PodGroup",
                "listKind": "PodGroupList",
                "plural": "podgroups",
                "singular": "podgroup",
                "shortNames": short_names,
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "description": "PodGroup is a collection of Pod; used for batch workload.",
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "properties": spec},
                                "status": {"type": "object", "properties": status},
                            },
                        }
                    },
                }
            ],
        },
    }


def volcano_podgroup_crd() -> Obj:
    """`podgroups.scheduling.volcano.sh`, version v1beta1."""
    condition = {
        "type": "object",
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string"},
            "reason": {"type": "string"},
            "status": {"type": "string"},
            "transitionID": {"type": "string"},
            "type": {"type": "string"},
        },
    }
    return _crd(
        "scheduling.volcano.sh",
        "v1beta1",
        ["pg", "podgroup-v1beta1"],
        [
            {"name": "STATUS", "type": "string", "jsonPath": ".status.phase"},
            {"name": "minMember", "type": "integer", "jsonPath": ".spec.minMember"},
            {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running"},
            {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            {"name": "QUEUE", "type": "string", "priority": 1, "jsonPath": ".spec.queue"},
        ],
        {
            "minMember": dict(_INT32),
            "minResources": copy.deepcopy(_RESOURCES),
            "minTaskMember": {"type": "object", "additionalProperties": dict(_INT32)},
            "priorityClassName": {"type": "string"},
            "queue": {"type": "string"},
        },
        {
            "conditions": {"type": "array", "items": condition},
            "phase": {"type": "string"},
            "running": dict(_INT32),
            "succeeded": dict(_INT32),
            "failed": dict(_INT32),
        },
    )


def scheduler_plugins_podgroup_crd() -> Obj:
    """`podgroups.scheduling.x-k8s.io`, version v1alpha1 (the coscheduling plugin's)."""
    return _crd(
        "scheduling.x-k8s.io",
        "v1alpha1",
        ["pg", "pgs"],
        [
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
            {"name": "Running", "type": "string", "jsonPath": ".status.running"},
            {"name": "Succeeded", "type": "string", "jsonPath": ".status.succeeded"},
            {"name": "Failed", "type": "string", "jsonPath": ".status.failed"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        {
            "minMember": dict(_INT32),
            "minResources": copy.deepcopy(_RESOURCES),
            "scheduleTimeoutSeconds": dict(_INT32),
        },
        {
            "phase": {"type": "string"},
            "occupiedBy": {"type": "string"},
            "scheduled": dict(_INT32),
            "running": dict(_INT32),
            "succeeded": dict(_INT32),
            "failed": dict(_INT32),
            "scheduleStartTime": {"type": "string", "format": "date-time"},
        },
    )


def podgroup_crd(gang_scheduler: str) -> Obj:
    """The PodGroup CRD of `volcano` or `scheduler-plugins` (ValueError for anything else)."""
    if gang_scheduler == VOLCANO:
        return volcano_podgroup_crd()
    if gang_scheduler == SCHEDULER_PLUGINS:
        return scheduler_plugins_podgroup_crd()
    raise ValueError(
        f"gang scheduler {gang_scheduler!r} has no PodGroup CRD (valid: volcano, scheduler-plugins)"
    )
