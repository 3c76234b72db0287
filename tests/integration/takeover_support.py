"""A job as another operator left it running, for the takeover tests
(tests/integration/test_kubeflow_takeover.py, test_kubedl_takeover.py): its pods and Services
created as that operator builds them, the pods Running, and the status it wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.kube.resources import PODS, SERVICES, ResourceRef

from .controller_support import Harness

Obj = dict[str, Any]
# The slots of the takeover tests' jobs: one Master, two Workers (`<job>-<type>-<index>`).
SLOTS = [("master", 0), ("worker", 0), ("worker", 1)]


def controller_owner(job: Obj) -> Obj:
    """The controller ownerReference both operators give a job's pods and Services
    (training-operator's and KubeDL's GenOwnerReference)."""
    meta = job["metadata"]
    return {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def started_by_another_operator(
    h: Harness,
    ref: ResourceRef,
    ns: str,
    job: Obj,
    child: Callable[[Obj, int, str, int], tuple[Obj, Obj]],
    reasons: tuple[str, str],
) -> dict[str, str]:
    """Create `job` and, for each slot (its position, type, index), the pod and Service `child`
    builds; wait for the pods Running; write the status with the Created and Running `reasons`
    that operator writes. Returns each pod's uid by name."""
    created = await h.kube.create(ref, job, namespace=ns)
    name = created["metadata"]["name"]
    for n, (rtype, i) in enumerate(SLOTS):
        pod, service = child(created, n, rtype, i)
        await h.kube.create(PODS, pod, namespace=ns)
        await h.kube.create(SERVICES, service, namespace=ns)
    uids = {}
    for rtype, i in SLOTS:
        pod = await h.sim.wait_for_phase(ns, f"{name}-{rtype}-{i}", "Running", 30)
        uids[pod["metadata"]["name"]] = pod["metadata"]["uid"]
    created_reason, running_reason = reasons
    status = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": created_reason, "message": "created"},
            {"type": "Running", "status": "True", "reason": running_reason, "message": "running"},
        ],
        "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2}},
        "startTime": "2026-01-01T00:00:00Z",
    }
    await h.kube.patch_status(ref, ns, name, {"status": status})
    return uids
