"""An elastic PyTorchJob with a Master (Kubeflow Trainer issue 2277): the env stays Kubeflow's,
and admission (mutating webhook, `kubetrain validate`) warns, in every group serving PyTorchJob."""

from __future__ import annotations

import io
from typing import Any

import pytest
from jobs import cluster_env, job

from kubetrain.commands.validate import Document, check_document
from kubetrain.frameworks.pytorch import FRAMEWORK as PT
from kubetrain.jobs.defaulting import default_job

GROUPS = ("kubetrain.io/v1", "kubeflow.org/v1", "training.kubedl.io/v1alpha1")

WARNING_2_4 = (
    "spec.pytorchReplicaSpecs[Master]: in an elastic job (spec.elasticPolicy) the Master gets the "
    "rendezvous env like the Workers and, running torchrun, joins the rendezvous too: up to 5 nodes "
    "(maxReplicas 4 + the Master) while PET_NNODES=2:4 counts the Workers only (as Kubeflow's "
    "operator sets it), so torchrun can leave one node waiting outside the rendezvous or start a "
    "world that includes the Master; remove the Master, which an elastic job does not need: the "
    "rendezvous is at Worker 0 (PET_RDZV_ENDPOINT), not the Master (Kubeflow Trainer issue 2277)"
)


def pytorch(replicas: dict[str, Any], api_version: str = "kubetrain.io/v1", **spec: Any) -> dict[str, Any]:
    return job("PyTorchJob", "el", replicas, namespace="ml", api_version=api_version, spec_extra=spec)


def master_warnings(obj: dict[str, Any]) -> list[str]:
    return [w for w in default_job(obj).warnings if "Kubeflow Trainer issue 2277" in w]


@pytest.mark.parametrize("api_version", GROUPS)
def test_elastic_job_with_master_is_warned_in_every_group(api_version: str) -> None:
    obj = pytorch({"Master": 1, "Worker": 2}, api_version, elasticPolicy={"minReplicas": 2, "maxReplicas": 4})
    assert master_warnings(obj) == [WARNING_2_4]


def test_warning_states_the_env_the_pods_get() -> None:
    """What the warning says of the env holds: every pod, the Master too, gets PET_NNODES=min:max
    of the Workers and Worker 0's rendezvous endpoint (Kubeflow's generateEnvNnodes and
    generateEnvRDZVEndpoint)."""
    obj = pytorch({"Master": 1, "Worker": 2}, elasticPolicy={"minReplicas": 2, "maxReplicas": 4})
    for rtype, index in (("Master", 0), ("Worker", 0), ("Worker", 1)):
        env = dict(cluster_env(default_job(obj).obj, PT, rtype, index))
        assert env["PET_NNODES"] == "2:4"
        assert env["PET_RDZV_ENDPOINT"] == "el-worker-0.el.ml.svc:23456"


def test_defaulted_bounds_are_the_workers() -> None:
    """Without minReplicas/maxReplicas both default to the Worker count (§2), the Master left out."""
    (warning,) = master_warnings(pytorch({"Master": 1, "Worker": 3}, elasticPolicy={}))
    assert "up to 4 nodes (maxReplicas 3 + the Master) while PET_NNODES=3:3 counts" in warning


def test_rdzv_host_is_named_as_the_rendezvous() -> None:
    obj = pytorch({"Master": 1, "Worker": 2}, elasticPolicy={"maxReplicas": 2, "rdzvHost": "etcd.infra"})
    (warning,) = master_warnings(obj)
    assert "the rendezvous is at spec.elasticPolicy.rdzvHost (PET_RDZV_ENDPOINT), not the Master" in warning
    assert "PET_NNODES=2:2" in warning


@pytest.mark.parametrize(
    ("replicas", "spec"),
    [
        ({"Master": 1, "Worker": 2}, {}),  # not elastic: PET_NNODES counts every pod
        ({"Worker": 2}, {"elasticPolicy": {"minReplicas": 1, "maxReplicas": 4}}),  # elastic, no Master
        ({"Master": 0, "Worker": 2}, {"elasticPolicy": {}}),  # no Master pod (validation refuses 0)
    ],
)
def test_no_warning_without_both_master_and_elastic_policy(
    replicas: dict[str, Any], spec: dict[str, Any]
) -> None:
    assert master_warnings(pytorch(replicas, **spec)) == []


@pytest.mark.parametrize("api_version", GROUPS)
def test_kubetrain_validate_prints_the_warning(api_version: str) -> None:
    obj = pytorch({"Master": 1, "Worker": 2}, api_version, elasticPolicy={"minReplicas": 2, "maxReplicas": 4})
    report = io.StringIO()
    group = api_version.split("/")[0]
    ok, _ = check_document(Document("job.yaml", obj), report, groups=(group,))
    assert ok
    lines = report.getvalue().splitlines()
    assert sum(WARNING_2_4 in line for line in lines) == 1, lines
