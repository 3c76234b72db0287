"""The replaced operators' Prometheus series (kubetrain.operator.upstreammetrics): a dashboard or
alert rule written against training-operator's, mpi-operator's or KubeDL's metric names finds
the same names, label names and label values on kubetrain's /metrics after the same moments."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from prometheus_client import generate_latest

from kubetrain.operator import kubedlgauges, upstreammetrics
from kubetrain.operator.jobcounts import count_job
from kubetrain.serving.metrics import REGISTRY, forget_job, forget_namespace


def job(api_version: str, kind: str, namespace: str, name: str = "j", **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "uid": str(uuid.uuid4())}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def launcher_pod(namespace: str, job_name: str, operator: str = "mpi-operator") -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": namespace,
            "name": f"{job_name}-launcher-0",
            "labels": {
                "training.kubeflow.org/operator-name": operator,
                "training.kubeflow.org/job-name": job_name,
                "training.kubeflow.org/job-role": "launcher",
            },
            "ownerReferences": [
                {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": job_name, "controller": True}
            ],
        }
    }


def exposition() -> str:
    return generate_latest(REGISTRY).decode()


def lines_of(prefix: str, namespace: str) -> list[str]:
    """The samples of `namespace` whose name starts with `prefix` (without the `_created`
    timestamps prometheus_client adds to each counter)."""
    return sorted(
        line
        for line in exposition().splitlines()
        if line.startswith(prefix)
        and f'"{namespace}"' in line
        and not line.split("{")[0].endswith("_created")
    )


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def ns() -> str:
    return f"ns-{uuid.uuid4().hex[:8]}"


def test_training_operator_series_per_namespace_and_framework(ns: str) -> None:
    torch = job("kubeflow.org/v1", "PyTorchJob", ns)
    tf = job("kubeflow.org/v1", "TFJob", ns, "tf")
    mpi_v1 = job(
        "kubeflow.org/v1", "MPIJob", ns, "m", **{"kubetrain.io/created-api-version": "kubeflow.org/v1"}
    )
    for j in (torch, tf, mpi_v1):
        count_job(j, "created")
    count_job(torch, "restarted", 2)
    count_job(torch, "succeeded")
    count_job(tf, "failed")
    count_job(mpi_v1, "deleted")  # the controller deleted it (TTL)
    count_job(tf, "gone")  # seen deleted: training-operator does not count that
    assert lines_of("training_operator_jobs_", ns) == sorted(
        [
            f'training_operator_jobs_created_total{{framework="mpi",job_namespace="{ns}"}} 1.0',
            f'training_operator_jobs_created_total{{framework="pytorch",job_namespace="{ns}"}} 1.0',
            f'training_operator_jobs_created_total{{framework="tensorflow",job_namespace="{ns}"}} 1.0',
            f'training_operator_jobs_restarted_total{{framework="pytorch",job_namespace="{ns}"}} 2.0',
            f'training_operator_jobs_successful_total{{framework="pytorch",job_namespace="{ns}"}} 1.0',
            f'training_operator_jobs_failed_total{{framework="tensorflow",job_namespace="{ns}"}} 1.0',
            f'training_operator_jobs_deleted_total{{framework="mpi",job_namespace="{ns}"}} 1.0',
        ]
    )
    # kubetrain's own series count the same moments, once.
    assert value("kubetrain_jobs_created_total", kind="PyTorchJob", namespace=ns) == 1
    assert value("kubetrain_jobs_restarted_total", kind="PyTorchJob", namespace=ns) == 2


def test_mpi_operator_counters_and_job_info(ns: str) -> None:
    mpijob = job("kubeflow.org/v2beta1", "MPIJob", ns, "pi")
    before = {e: value(f"mpi_operator_jobs_{e}_total") for e in ("created", "successful", "failed")}
    count_job(mpijob, "created")
    count_job(mpijob, "restarted", 3)  # mpi-operator has no restart counter
    count_job(mpijob, "succeeded")
    count_job(job("kubeflow.org/v2beta1", "MPIJob", ns, "bad"), "failed")
    assert value("mpi_operator_jobs_created_total") == before["created"] + 1
    assert value("mpi_operator_jobs_successful_total") == before["successful"] + 1
    assert value("mpi_operator_jobs_failed_total") == before["failed"] + 1
    assert lines_of("training_operator_", ns) == []  # an mpi-operator MPIJob is not training-operator's

    upstreammetrics.observe_pod(launcher_pod(ns, "pi"))
    upstreammetrics.observe_pod(launcher_pod(ns, "pi"))  # seen again (a relist): still one series
    upstreammetrics.observe_pod(
        launcher_pod(ns, "v1job", operator="mpijob-controller")
    )  # training-operator's
    assert lines_of("mpi_operator_job_info", ns) == [
        f'mpi_operator_job_info{{launcher="pi-launcher",namespace="{ns}"}} 1.0'
    ]
    forget_job("MPIJob", ns, "pi")
    assert lines_of("mpi_operator_job_info", ns) == []


def test_job_info_is_bounded_least_recently_seen_first(ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstreammetrics.JOB_INFO, "limit", 2)
    for name in ("a", "b"):
        upstreammetrics.observe_pod(launcher_pod(ns, name))
    upstreammetrics.observe_pod(launcher_pod(ns, "a"))  # a seen again: b is now the oldest
    upstreammetrics.observe_pod(launcher_pod(ns, "c"))
    assert [line.split('"')[1] for line in lines_of("mpi_operator_job_info", ns)] == [
        "a-launcher",
        "c-launcher",
    ]
    forget_namespace(ns)
    assert lines_of("mpi_operator_job_info", ns) == []


def test_kubedl_series_keep_kubedls_exact_names(ns: str) -> None:
    def kubedl(event: str) -> float:
        return value(f"kubedl_jobs_{event}", kind="xgboostjob")

    events = ("created", "deleted", "successful", "failed", "restarted")
    before = {e: kubedl(e) for e in events}
    xgb = job("training.kubedl.io/v1alpha1", "XGBoostJob", ns)
    count_job(xgb, "created")
    count_job(xgb, "restarted")
    count_job(xgb, "failed")
    count_job(xgb, "deleted")  # KubeDL counts the deletion when it sees it: "gone"
    count_job(xgb, "gone")
    assert {e: kubedl(e) - before[e] for e in events} == {
        "created": 1,
        "deleted": 1,
        "successful": 0,
        "failed": 1,
        "restarted": 1,
    }
    text = exposition()
    assert "# TYPE kubedl_jobs_created untyped" in text
    assert f'kubedl_jobs_created{{kind="xgboostjob"}} {before["created"] + 1}' in text
    assert "kubedl_jobs_created_total" not in text


def upstream_samples() -> list[str]:
    prefixes = ("training_operator_", "mpi_operator_", "kubedl_")
    return [line for line in exposition().splitlines() if line.startswith(prefixes)]


def test_other_groups_count_in_kubetrains_series_only(ns: str) -> None:
    before = upstream_samples()
    count_job(job("kubetrain.io/v1", "PyTorchJob", ns), "created")
    count_job(job("trainer.kubeflow.org/v1alpha1", "TrainJob", ns), "failed")
    assert value("kubetrain_jobs_created_total", kind="PyTorchJob", namespace=ns) == 1
    assert value("kubetrain_jobs_failed_total", kind="TrainJob", namespace=ns) == 1
    assert upstream_samples() == before


def test_deleted_namespace_drops_the_training_operator_series(ns: str) -> None:
    count_job(job("kubeflow.org/v1", "JAXJob", ns), "created")
    assert lines_of("training_operator_jobs_created_total", ns)
    assert forget_namespace(ns) >= 2  # kubetrain's series and training-operator's
    assert lines_of("training_operator_jobs_", ns) == []


def test_an_unknown_event_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown job event 'finished': one of created, succeeded"):
        count_job(job("kubeflow.org/v1", "PyTorchJob", "x"), "finished")


def kubedl_job(kind: str, *conditions: tuple[str, str]) -> dict[str, Any]:
    job_ = job("training.kubedl.io/v1alpha1", kind, "x")
    job_["status"] = {"conditions": [{"type": t, "status": s} for t, s in conditions]}
    return job_


def test_kubedl_running_and_pending_gauges_follow_the_cache() -> None:
    jobs = {
        "TFJob": [
            kubedl_job("TFJob", ("Created", "True")),  # pending: its only condition is Created
            kubedl_job("TFJob", ("Created", "True"), ("Running", "True")),
            kubedl_job("TFJob", ("Created", "True"), ("Running", "False"), ("Succeeded", "True")),
            kubedl_job("TFJob"),  # not even Created yet: neither
        ],
        "XDLJob": [],
    }
    handle = kubedlgauges.KUBEDL_GAUGES.serve(jobs, lambda: jobs)
    try:
        assert value("kubedl_jobs_running", kind="tfjob") == 1
        assert value("kubedl_jobs_pending", kind="tfjob") == 1
        text = exposition()
        assert 'kubedl_jobs_running{kind="xdljob"} 0.0' in text
        assert 'kubedl_jobs_pending{kind="xdljob"} 0.0' in text
        for event in ("created", "deleted", "successful", "failed", "restarted"):
            assert f'kubedl_jobs_{event}{{kind="xdljob"}} 0.0' in text  # KubeDL's series exist from the start
        jobs["TFJob"][1]["status"]["conditions"][1]["status"] = "False"  # read at each scrape
        assert value("kubedl_jobs_running", kind="tfjob") == 0
    finally:
        kubedlgauges.KUBEDL_GAUGES.stop(handle)
    assert 'kubedl_jobs_running{kind="tfjob"}' not in exposition()
