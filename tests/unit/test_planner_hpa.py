"""plan() and docs/behaviour.md §4/§7: the HorizontalPodAutoscaler of an elastic PyTorchJob with
`elasticPolicy.metrics` — created, replaced when the bounds or metrics change, deleted when the
job finishes or the metrics are removed; none for a job without metrics."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, elastic_pytorch, job, replica

from kubetrain.api.labels import ANNOTATION_HPA_SPEC_HASH

CPU = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]


def elastic(metrics: list[dict[str, Any]] | None = CPU, **policy: Any) -> dict[str, Any]:
    elastic_policy: dict[str, Any] = {"minReplicas": 1, "maxReplicas": 4, **policy}
    if metrics is not None:
        elastic_policy["metrics"] = copy.deepcopy(metrics)
    return elastic_pytorch(elastic_policy, uid="uid-el")


def test_elastic_job_with_metrics_gets_its_hpa() -> None:
    sim = Sim(elastic())
    p = sim.step(at(0))
    hpa = p.create_hpa
    assert hpa is not None and p.update_hpa is None and not p.delete_hpa
    assert (hpa["apiVersion"], hpa["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    meta = hpa["metadata"]
    assert (meta["name"], meta["namespace"]) == ("el", "ml")
    assert meta["labels"] == {
        "kubetrain.io/job-name": "el",
        "kubetrain.io/job-kind": "PyTorchJob",
        "app.kubernetes.io/managed-by": "kubetrain",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "name": "el",
            "uid": "uid-el",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "name": "el"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": CPU,
    }
    assert meta["annotations"][ANNOTATION_HPA_SPEC_HASH]
    # Created once: later reconciles leave it as it is.
    for t in (1, 2):
        p = sim.step(at(t))
        assert (p.create_hpa, p.update_hpa, p.delete_hpa) == (None, None, False)
    assert sim.hpa_writes == 1


def test_bounds_default_from_the_elastic_policy() -> None:
    obj = elastic()
    del obj["spec"]["elasticPolicy"]["minReplicas"]
    obj["spec"]["elasticPolicy"]["maxReplicas"] = 3  # defaulting: minReplicas = maxReplicas
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    p = Sim(obj).step(at(0))
    assert p.create_hpa is not None
    assert (p.create_hpa["spec"]["minReplicas"], p.create_hpa["spec"]["maxReplicas"]) == (3, 3)


def test_no_hpa_without_metrics_or_without_elastic_policy() -> None:
    for obj in (
        elastic(metrics=None),
        elastic(metrics=[]),
        job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)}),
    ):
        sim = Sim(obj)
        for t in (0, 1):
            p = sim.step(at(t))
            assert (p.create_hpa, p.update_hpa, p.delete_hpa) == (None, None, False)


def bump(sim: Sim, **policy: Any) -> None:
    """A spec change as the API server stores it: new generation."""
    sim.job["spec"]["elasticPolicy"].update(policy)
    sim.job["metadata"]["generation"] += 1


def test_changed_bounds_or_metrics_replace_the_hpa_with_its_resource_version() -> None:
    sim = Sim(elastic())
    sim.step(at(0))
    assert sim.hpa is not None
    # What the API server and the HPA controller add is kept through the replacement.
    sim.hpa["metadata"]["labels"]["team"] = "a"
    sim.hpa["metadata"]["uid"] = "hpa-uid"
    sim.hpa["status"] = {"currentReplicas": 2, "desiredReplicas": 2}
    bump(sim, maxReplicas=6)
    p = sim.step(at(1))
    assert p.create_hpa is None and not p.delete_hpa
    assert p.update_hpa is not None
    meta = p.update_hpa["metadata"]
    assert meta["resourceVersion"] == "1" and meta["uid"] == "hpa-uid"
    assert meta["labels"]["team"] == "a" and meta["labels"]["kubetrain.io/job-name"] == "el"
    assert p.update_hpa["spec"]["maxReplicas"] == 6 and p.update_hpa["spec"]["minReplicas"] == 1
    assert "status" not in p.update_hpa  # a PUT of the main resource does not write status
    assert sim.step(at(2)).update_hpa is None  # the new hash is stored: no second write
    memory = [
        {
            "type": "Resource",
            "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "2Gi"}},
        }
    ]
    bump(sim, metrics=memory)
    p = sim.step(at(3))
    assert p.update_hpa is not None and p.update_hpa["spec"]["metrics"] == memory
    assert sim.step(at(4)).update_hpa is None
    assert sim.hpa_writes == 3


def test_server_normalisation_of_the_stored_spec_causes_no_write() -> None:
    sim = Sim(elastic())
    sim.step(at(0))
    assert sim.hpa is not None
    # e.g. an API server that prints a quantity canonically or adds defaults: same hash, no PUT.
    sim.hpa["spec"]["metrics"][0]["resource"]["target"]["extra"] = "x"
    assert sim.step(at(1)).update_hpa is None


def test_removing_the_metrics_deletes_the_hpa() -> None:
    sim = Sim(elastic())
    sim.step(at(0))
    assert sim.hpa is not None
    sim.job["spec"]["elasticPolicy"].pop("metrics")
    sim.job["metadata"]["generation"] += 1
    p = sim.step(at(1))
    assert p.delete_hpa and p.create_hpa is None and p.update_hpa is None
    assert sim.hpa is None
    assert not sim.step(at(2)).delete_hpa


def test_finishing_the_job_deletes_the_hpa() -> None:
    sim = Sim(elastic())
    sim.step(at(0))
    for name in list(sim.pods):
        sim.set_phase(name, "Running")
    sim.step(at(1))
    assert sim.hpa is not None
    sim.set_phase("el-worker-0", "Succeeded", exit_code=0)  # elastic: any Worker succeeding
    p = sim.step(at(2))
    assert sim.is_true("Succeeded")
    assert p.delete_hpa and p.create_hpa is None
    assert sim.hpa is None
    p = sim.step(at(3))
    assert (p.create_hpa, p.update_hpa, p.delete_hpa) == (None, None, False)


def test_suspended_job_keeps_its_hpa() -> None:
    sim = Sim(elastic())
    sim.step(at(0))
    sim.job["spec"].setdefault("runPolicy", {})["suspend"] = True
    sim.job["metadata"]["generation"] += 1
    p = sim.step(at(1))
    assert not p.delete_hpa and p.update_hpa is None and sim.hpa is not None


def test_invalid_job_gets_no_hpa_and_loses_one() -> None:
    obj = elastic()
    obj["spec"]["elasticPolicy"]["maxReplicas"] = 0  # invalid: Failed at once
    sim = Sim(obj)
    p = sim.step(at(0))
    assert sim.is_true("Failed") and p.create_hpa is None
    sim.hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "el",
            "namespace": "ml",
            "ownerReferences": [{"kind": "PyTorchJob", "name": "el", "uid": "uid-el", "controller": True}],
        },
    }
    assert sim.step(at(1)).delete_hpa


def test_an_hpa_the_job_does_not_own_is_left_alone() -> None:
    sim = Sim(elastic())
    foreign = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "el", "namespace": "ml", "resourceVersion": "7"},
        "spec": {"minReplicas": 1, "maxReplicas": 9},
    }
    sim.hpa = copy.deepcopy(foreign)
    p = sim.step(at(0))
    assert (p.create_hpa, p.update_hpa, p.delete_hpa) == (None, None, False)
    assert p.create_pods  # the job itself runs
    sim.job["spec"]["elasticPolicy"].pop("metrics")
    assert not sim.step(at(1)).delete_hpa
    assert sim.hpa == foreign


def test_a_scaled_down_worker_failing_as_it_terminates_fails_nothing() -> None:
    """Kubeflow Trainer pull request 1593: when the HPA scaled Workers down, the pod being
    removed reached phase Failed (SIGTERM, exit 143) before it was gone, and that failed the
    PyTorchJob. A pod of an index the spec no longer has is deleted and counts for nothing."""
    obj = elastic_pytorch({"minReplicas": 1, "maxReplicas": 4})
    workers = obj["spec"]["pytorchReplicaSpecs"]["Worker"]
    workers.update(replicas=3, restartPolicy="Never")
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    workers = sim.job["spec"]["pytorchReplicaSpecs"]["Worker"]
    workers["replicas"] = 2
    sim.job["metadata"]["generation"] = 2
    assert sim.plan(at(2)).delete_pods == ["el-worker-2"]
    # The kubelet stops it: Failed with 143 while it is still terminating, then Failed in the API.
    sim.pods["el-worker-2"]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:02Z"
    sim.set_phase("el-worker-2", "Failed", exit_code=143)
    assert sim.step(at(3)).delete_pods == []
    del sim.pods["el-worker-2"]["metadata"]["deletionTimestamp"]
    p = sim.step(at(4))
    assert p.delete_pods == ["el-worker-2"] and p.create_pods == []
    assert not sim.is_true("Failed") and sim.restarts("Worker") == 0
