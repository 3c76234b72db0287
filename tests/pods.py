"""One builder for bare pod manifests (pods no job owns), shared by every tier: the kube client,
informer, simulated kubelet, token and admission tests. A job's pods come from the planner
(tests/unit/planner_builders.py `pod` builds them as the informer shows them); `watched_pod` is
the bare minimum of one as a pod event carries it, for the controller's event handling. Import
with `from pods import pod_manifest` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def pod_manifest(
    name: str,
    *,
    namespace: str = "default",
    container: str = "main",
    image: str = "busybox",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    restart_policy: str | None = "Never",
    **spec: Any,
) -> Obj:
    """A Pod of one container; `spec` fields (camelCase) are added to its spec, and
    `restart_policy=None` leaves `restartPolicy` out."""
    metadata: Obj = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    pod_spec: Obj = {"containers": [{"name": container, "image": image}], **spec}
    if restart_policy is not None:
        pod_spec["restartPolicy"] = restart_policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def watched_pod(name: str, rv: str, status: Obj, api_version: str = "kubetrain.io/v1") -> Obj:
    """Pod `name` at resourceVersion `rv` in namespace `ns` with `status`, controlled by the
    PyTorchJob `big` (uid `u1`) of `api_version`: what the controller's pod handlers key on."""
    owner = {"apiVersion": api_version, "kind": "PyTorchJob", "name": "big", "uid": "u1", "controller": True}
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "ownerReferences": [owner]},
        "status": status,
    }
