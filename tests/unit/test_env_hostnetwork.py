"""Host network mode (`kubetrain.io/network-mode: host`): hostNetwork pods with cluster DNS, one
port per pod from the job's range declared as containerPort and hostPort, and cluster env that
names exactly those ports — for every kind, through `render_job` (what the controller creates)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jobs import rendered

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

HOST = {"kubetrain.io/network-mode": "host"}


def make(
    kind: str, field: str, container: str, types: dict[str, int], name: str = "hn", **ann: str
) -> dict[str, Any]:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "annotations": {**HOST, **ann}},
        "spec": {
            field: {
                t: {"replicas": n, "template": {"spec": {"containers": [{"name": container, "image": "x"}]}}}
                for t, n in types.items()
            }
        },
    }


def pods(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in rendered(obj)}


def port_of(pod: dict[str, Any]) -> int:
    (port,) = pod["spec"]["containers"][0]["ports"]
    assert port["containerPort"] == port["hostPort"]
    return int(port["containerPort"])


def env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


def test_tfjob_pods_get_distinct_ports_and_tf_config_names_them() -> None:
    out = pods(make("TFJob", "tfReplicaSpecs", "tensorflow", {"PS": 1, "Worker": 3}))
    ports = {name: port_of(p) for name, p in out.items()}
    assert len(set(ports.values())) == 4 and all(20000 <= p <= 29999 for p in ports.values())
    for pod in out.values():
        assert pod["spec"]["hostNetwork"] is True and pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
        cluster = json.loads(env(pod)["TF_CONFIG"])["cluster"]
        addresses = [a for group in cluster.values() for a in group]
        assert sorted(addresses) == sorted(f"{n}.hn.ns.svc:{p}" for n, p in ports.items())


def test_pytorch_master_port_is_the_masters_own_port() -> None:
    out = pods(make("PyTorchJob", "pytorchReplicaSpecs", "pytorch", {"Master": 1, "Worker": 2}))
    master = port_of(out["hn-master-0"])
    for pod in out.values():
        assert env(pod)["MASTER_PORT"] == str(master)
    assert len({port_of(p) for p in out.values()}) == 3


def test_mxnet_scheduler_port_and_mx_config() -> None:
    out = pods(make("MXJob", "mxReplicaSpecs", "mxnet", {"Scheduler": 1, "Server": 1, "Worker": 2}))
    scheduler = port_of(out["hn-scheduler-0"])
    for pod in out.values():
        e = env(pod)
        assert e["DMLC_PS_ROOT_PORT"] == str(scheduler)
        cluster = json.loads(e["MX_CONFIG"])["cluster"]
        for entries in cluster.values():
            for entry in entries:
                assert entry["port"] == port_of(out[entry["url"].split(".")[0]])


def test_jobs_with_different_names_start_at_different_ports() -> None:
    starts = {
        min(
            port_of(p)
            for p in pods(make("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker": 2}, name=n)).values()
        )
        for n in ("a", "b", "c", "d")
    }
    assert len(starts) == 4


def test_port_range_annotation_is_used_and_wraps() -> None:
    obj = make(
        "TFJob",
        "tfReplicaSpecs",
        "tensorflow",
        {"Worker": 3},
        **{"kubetrain.io/host-port-range": "31000-31002"},
    )
    assert sorted(port_of(p) for p in pods(obj).values()) == [31000, 31001, 31002]


def test_without_the_annotation_nothing_changes() -> None:
    obj = make("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker": 2})
    obj["metadata"].pop("annotations")
    for pod in pods(obj).values():
        assert "hostNetwork" not in pod["spec"]
        assert pod["spec"]["containers"][0]["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"kubetrain.io/network-mode": "bridge"}, 'must be one of "host"'),
        ({"kubetrain.io/host-port-range": "2-1"}, "1 <= FIRST <= LAST <= 65535"),
        ({"kubetrain.io/host-port-range": "ports"}, "use FIRST-LAST"),
        ({"kubetrain.io/host-port-range": "30000-30001"}, "fewer than the job's 3 pods"),
    ],
)
def test_invalid_annotations(annotations: dict[str, str], message: str) -> None:
    obj = make("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker": 3})
    obj["metadata"]["annotations"].update(annotations)
    errors = validate_job(default_job(obj).obj).errors
    assert any(
        e.path.startswith("metadata.annotations[kubetrain.io/") and message in e.message for e in errors
    )


def test_kubedl_network_mode_annotation_is_the_same_mode() -> None:
    """KubeDL's `kubedl.io/network-mode: host` gives exactly the pods kubetrain's annotation gives."""
    ours = make("TFJob", "tfReplicaSpecs", "tensorflow", {"PS": 1, "Worker": 2})
    kubedl = make("TFJob", "tfReplicaSpecs", "tensorflow", {"PS": 1, "Worker": 2})
    kubedl["metadata"]["annotations"] = {"kubedl.io/network-mode": "host"}
    assert pods(kubedl) == pods(ours)
    assert all(p["spec"]["hostNetwork"] is True for p in pods(kubedl).values())


def test_kubedl_network_mode_other_value_is_refused_naming_the_annotation() -> None:
    obj = make("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker": 1})
    obj["metadata"]["annotations"] = {"kubedl.io/network-mode": "overlay"}
    errors = validate_job(default_job(obj).obj).errors
    assert [e.path for e in errors] == ["metadata.annotations[kubedl.io/network-mode]"]
    assert 'must be one of "host"' in errors[0].message
