"""Pure builders of the other objects a kubelet and a scheduler write: the Node a kubelet
registers, its status (heartbeats), and the Binding of a pod to a node."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.devcluster.kubelet.podstatus import timestamp


def binding(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """The v1 Binding a scheduler POSTs to pods/NAME/binding."""
    meta = pod.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid")},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


NODE_CAPACITY = {
    "cpu": "64",
    "memory": "256Gi",
    "pods": "250",
    "ephemeral-storage": "1Ti",
    "nvidia.com/gpu": "8",
}


def node_object(name: str, address: str, now: datetime) -> dict[str, Any]:
    """A Ready Node as a kubelet registers it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "sim.kubetrain.io/simulated": "true",
            },
        },
        "spec": {},
        "status": node_status(name, address, now),
    }


def node_status(name: str, address: str, now: datetime) -> dict[str, Any]:
    stamp = timestamp(now)
    return {
        "capacity": dict(NODE_CAPACITY),
        "allocatable": dict(NODE_CAPACITY),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        ],
        "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
        "nodeInfo": {
            "kubeletVersion": "v1.36.4-kubetrain-sim",
            "containerRuntimeVersion": "containerd://sim",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "osImage": "kubetrain pod simulator",
            "kernelVersion": "",
            "kubeProxyVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }
