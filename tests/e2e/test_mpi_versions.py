"""MPIJobs in kubeflow.org on a real kube-apiserver (the cluster $KUBECONFIG names), with
`kubetrain run` serving the group behind the chart's webhooks and mpijobs.kubeflow.org's
conversion webhook at /convert: training-operator's v1 examples and mpi-operator's v2beta1
examples apply unchanged, pass through the conversion webhook both ways (stored as v2beta1,
listed at v1 and v2beta1) and, where pods are simulated, run to Succeeded. The mutating webhook
records the version each was created at from the API server's requestKind, and the Launcher
carries that version's operator's job-role (v1: `master`, training-operator's; v2beta1:
`launcher`, mpi-operator's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e import scenarios_support as support

from kubetrain.kube.resources import ResourceRef

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "kubeflow.org")  # what the operator serves (the `cluster` fixture)

DATA = Path(__file__).resolve().parents[1] / "data"
V1 = ResourceRef("kubeflow.org", "v1", "mpijobs", "MPIJob", True)
V2 = ResourceRef("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)
EXAMPLES = [
    ("v1", DATA / "training-operator-mpi" / "examples" / "mpi" / "tensorflow-mnist.yaml"),
    ("v2beta1", DATA / "mpi-operator" / "examples" / "v2beta1" / "pi" / "pi.yaml"),
]


def manifest(version: str, path: Path) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(path.read_text())
    obj["apiVersion"] = f"kubeflow.org/{version}"  # the corpus copy of mpi-operator's says kubetrain.io/v1
    return obj


@pytest.mark.parametrize(("version", "path"), EXAMPLES, ids=["training-operator-v1", "mpi-operator-v2beta1"])
async def test_mpijob_examples_convert_both_ways_and_run(cluster: Any, version: str, path: Path) -> None:
    client, ns = cluster.client, cluster.namespace
    obj = manifest(version, path)
    name = obj["metadata"]["name"]
    warnings: list[str] = []
    created = await client.create(V1 if version == "v1" else V2, obj, namespace=ns, warnings=warnings)
    assert created["apiVersion"] == f"kubeflow.org/{version}"
    if version == "v1":
        assert any("not through kubectl exec" in w for w in warnings), warnings
    stored = await client.get(V2, ns, name)
    as_v1 = await client.get(V1, ns, name)
    # kube-apiserver's requestKind names the version the client wrote.
    assert stored["metadata"]["annotations"]["kubetrain.io/created-api-version"] == f"kubeflow.org/{version}"
    assert stored["spec"]["mpiReplicaSpecs"] == as_v1["spec"]["mpiReplicaSpecs"]
    assert "sshAuthMountPath" in stored["spec"] and "sshAuthMountPath" not in as_v1["spec"]
    for ref in (V1, V2):
        page = await client.list(ref, ns)
        assert name in [i["metadata"]["name"] for i in page["items"]]
        assert {i["apiVersion"] for i in page["items"]} == {f"kubeflow.org/{ref.version}"}
    if cluster.simulator is None:
        pytest.skip("real kubelets: the MPI images run on their own; the conversion is checked")
    pods = await cluster.wait_pods(name, 3, running=True)
    roles = {
        p["metadata"]["name"]: p["metadata"]["labels"].get("training.kubeflow.org/job-role") for p in pods
    }
    assert roles[f"{name}-launcher-0"] == ("master" if version == "v1" else "launcher")
    await cluster.simulator.finish(ns, f"{name}-launcher-0")

    async def succeeded() -> dict[str, Any] | None:
        job = await client.get(V1, ns, name)
        return job if support.has_condition(job, "Succeeded") else None

    done = await support.eventually(succeeded, within=90, what=f"MPIJob {name} Succeeded")
    assert done["apiVersion"] == "kubeflow.org/v1"
