"""Children exactly as docs/behaviour.md §4/§8: pods, the headless Service, PodGroups."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from jobs import layout_of

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import container, job, replica

from kubetrain.api.podresources import pod_amounts
from kubetrain.frameworks.env import JobLayout
from kubetrain.frameworks.registry import get_framework
from kubetrain.operator.children import build_pods, build_service
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job


def layout(obj: dict[str, Any]) -> JobLayout:
    fw = get_framework(obj["kind"])
    assert fw is not None
    out, errors = layout_of(obj, fw)
    assert out is not None, errors
    return out


def pod_group(obj: dict[str, Any], gang: str) -> dict[str, Any] | None:
    """The job's PodGroup under `gang`, as the planner builds it (from the job's shape)."""
    shape = prepare_job(obj).shape
    assert shape is not None
    return desired_children(shape, gang_scheduler=gang).pod_group


def pods_of(obj: dict[str, Any], **kw: Any) -> dict[str, dict[str, Any]]:
    fw = get_framework(obj["kind"])
    assert fw is not None
    return {p["metadata"]["name"]: p for p in build_pods(layout(obj), fw, **kw)}


OWNER = {
    "apiVersion": "kubetrain.io/v1",
    "kind": "PyTorchJob",
    "name": "ddp",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def ddp(**kw: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {
            "Master": replica("PyTorchJob", 1, labels={"team": "a", "kubetrain.io/job-name": "spoof"}),
            "Worker": replica("PyTorchJob", 2, "ExitCode"),
        },
        name="ddp",
        namespace="ml",
        uid="uid-1",
        **kw,
    )


def test_pod_name_host_labels_owner_restart_policy_port() -> None:
    pods = pods_of(ddp())
    assert list(pods) == ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"]
    master, worker = pods["ddp-master-0"], pods["ddp-worker-1"]
    assert master["metadata"]["namespace"] == "ml"
    assert master["metadata"]["labels"] == {
        "team": "a",
        "kubetrain.io/job-name": "ddp",  # operator labels override template labels
        "kubetrain.io/job-kind": "PyTorchJob",
        "app.kubernetes.io/managed-by": "kubetrain",
        "kubetrain.io/replica-type": "master",
        "kubetrain.io/replica-index": "0",
        "kubetrain.io/job-role": "master",
    }
    assert "kubetrain.io/job-role" not in worker["metadata"]["labels"]
    assert worker["metadata"]["labels"]["kubetrain.io/replica-index"] == "1"
    assert master["metadata"]["ownerReferences"] == [OWNER]
    assert (worker["spec"]["hostname"], worker["spec"]["subdomain"]) == ("ddp-worker-1", "ddp")
    assert master["spec"]["restartPolicy"] == "OnFailure"  # PyTorch default
    assert worker["spec"]["restartPolicy"] == "Never"  # ExitCode is the operator's policy
    assert worker["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert "schedulerName" not in worker["spec"]


def test_template_is_not_mutated() -> None:
    obj = ddp()
    before = repr(obj)
    pods_of(obj)
    assert repr(obj) == before


def test_worker0_is_master_role_without_chief_and_scheduler_in_mxnet() -> None:
    tf = job("TFJob", {"Worker": replica("TFJob", 2), "PS": replica("TFJob", 1)}, name="t")
    assert pods_of(tf)["t-worker-0"]["metadata"]["labels"]["kubetrain.io/job-role"] == "master"
    chief = job("TFJob", {"Worker": replica("TFJob", 2), "Chief": replica("TFJob", 1)}, name="t")
    roles = {n for n, p in pods_of(chief).items() if "kubetrain.io/job-role" in p["metadata"]["labels"]}
    assert roles == {"t-chief-0"}
    mx = job(
        "MXJob",
        {"Scheduler": replica("MXJob", 1), "Server": replica("MXJob", 1), "Worker": replica("MXJob", 1)},
        name="m",
    )
    roles = {n for n, p in pods_of(mx).items() if "kubetrain.io/job-role" in p["metadata"]["labels"]}
    assert roles == {"m-scheduler-0"}


def test_headless_service() -> None:
    svc = build_service(layout(ddp()))
    assert svc == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "ddp",
            "namespace": "ml",
            "labels": {
                "kubetrain.io/job-name": "ddp",
                "kubetrain.io/job-kind": "PyTorchJob",
                "app.kubernetes.io/managed-by": "kubetrain",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"kubetrain.io/job-name": "ddp"},
            "ports": [{"name": "pytorchjob-port", "port": 23456, "targetPort": 23456, "protocol": "TCP"}],
        },
    }


def test_volcano_pod_group_and_pod_decoration() -> None:
    res = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}}
    obj = job(
        "TFJob",
        {
            "PS": replica("TFJob", 1, resources={"requests": {"cpu": "500m", "memory": "1Gi"}}),
            "Worker": replica("TFJob", 3, resources=res),
            "Chief": replica("TFJob", 1, resources={"limits": {"cpu": "1", "memory": "2Gi"}}),
        },
        name="tf",
        run_policy={"schedulingPolicy": {"minAvailable": 3, "queue": "research", "priorityClass": "high"}},
    )
    pg = pod_group(obj, "volcano")
    assert pg is not None
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == "tf" and pg["metadata"]["ownerReferences"][0]["controller"] is True
    # First 3 pods in priority order: chief-0 (limits), ps-0, worker-0.
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3500m", "memory": "7Gi", "nvidia.com/gpu": "1"},
        "queue": "research",
        "priorityClassName": "high",
    }
    pod = pods_of(obj, gang_scheduler="volcano")["tf-worker-2"]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "tf",
        "volcano.sh/task-spec": "worker",
    }


def test_pod_group_min_resources_count_init_containers_and_sidecars_like_the_scheduler() -> None:
    # A pod reserves max(sum of containers + sidecars, largest init container + sidecars started
    # before it): a PodGroup sized on regular containers only would admit a gang that cannot run.
    init = [
        container("fetch", resources={"requests": {"cpu": "4", "memory": "1Gi"}}),
        container("proxy", restartPolicy="Always", resources={"requests": {"cpu": "250m", "memory": "64Mi"}}),
        container("warm", resources={"requests": {"cpu": "1", "memory": "6Gi"}}),
    ]
    main = container("pytorch", resources={"requests": {"cpu": "2", "memory": "4Gi"}})
    obj = job(
        "PyTorchJob",
        {
            "Master": replica("PyTorchJob", 1, containers=[main], initContainers=init),
            "Worker": replica("PyTorchJob", 1, containers=[main]),
        },
        name="init",
    )
    pg = pod_group(obj, "volcano")
    assert pg is not None
    # Master: cpu max(2 + 0.25, 4, 1 + 0.25) = 4, memory max(4Gi + 64Mi, 1Gi, 6Gi + 64Mi) = 6208Mi;
    # Worker: cpu 2, memory 4Gi.
    assert pg["spec"]["minResources"] == {"cpu": "6", "memory": "10304Mi"}
    master_template = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    assert pod_amounts(master_template) == {"cpu": Fraction(4), "memory": Fraction(6208 * 2**20)}


def test_scheduler_plugins_pod_group_and_labels() -> None:
    obj = ddp(run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 120, "minResources": {"cpu": 8}}})
    pg = pod_group(obj, "scheduler-plugins")
    assert pg is not None
    assert pg["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert pg["spec"] == {"minMember": 3, "minResources": {"cpu": "8"}, "scheduleTimeoutSeconds": 120}
    pod = pods_of(obj, gang_scheduler="scheduler-plugins", scheduler="my-sched")["ddp-worker-0"]
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "ddp"
    assert pod["spec"]["schedulerName"] == "my-sched"
    default = pods_of(obj, gang_scheduler="scheduler-plugins")["ddp-worker-0"]
    assert default["spec"]["schedulerName"] == "scheduler-plugins-scheduler"


def test_user_scheduler_name_is_kept() -> None:
    obj = ddp()
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "custom"
    assert pods_of(obj, gang_scheduler="volcano")["ddp-worker-0"]["spec"]["schedulerName"] == "custom"


@pytest.mark.parametrize("gang", ["none", "bogus"])
def test_no_pod_group_without_gang(gang: str) -> None:
    assert pod_group(ddp(), gang) is None
