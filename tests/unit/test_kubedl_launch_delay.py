"""KubeDL's launch-delay histograms (kubetrain.operator.kubedllaunch): a dashboard reading
`kubedl_jobs_first_pod_launch_delay_seconds` / `kubedl_jobs_all_pods_launch_delay_seconds` gets
one observation per job, from its creation to its first / last pod Running and Ready, and the
series of deleted jobs go."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import generate_latest

from kubetrain.operator import kubedllaunch
from kubetrain.serving.metrics import REGISTRY, forget_job, forget_namespace

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FIRST = "kubedl_jobs_first_pod_launch_delay_seconds"
ALL = "kubedl_jobs_all_pods_launch_delay_seconds"


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def kubedl_job(
    namespace: str, name: str = "j", workers: int = 2, group: str = "training.kubedl.io"
) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1alpha1" if group == "training.kubedl.io" else f"{group}/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": at(0),
        },
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": workers}}},
    }


def status(running: bool = True) -> dict[str, Any]:
    conditions = [{"type": "Created", "status": "True"}]
    if running:
        conditions.append({"type": "Running", "status": "True"})
    return {"conditions": conditions}


def pod(
    phase: str = "Running", ready_at: float | None = None, ready: bool = True, **meta: Any
) -> dict[str, Any]:
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": str(ready), "lastTransitionTime": at(ready_at)})
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


def sample(name: str, suffix: str, job: dict[str, Any], **extra: str) -> float | None:
    meta = job["metadata"]
    labels = {"kind": job["kind"], "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]}
    return REGISTRY.get_sample_value(name + suffix, {**labels, **extra})


@pytest.fixture
def ns() -> str:
    return f"ns-{uuid.uuid4().hex[:8]}"


def test_first_pod_is_the_earliest_running_and_ready_pod() -> None:
    pods = [
        pod("Pending"),
        pod("Running", ready_at=30, ready=False),  # Running, not Ready: not launched
        pod("Running", ready_at=12),
        pod("Running", ready_at=9, deletionTimestamp=at(20)),  # going away
        pod("Running", ready_at=20),
    ]
    assert kubedllaunch.first_pod_ready(pods) == T0 + timedelta(seconds=12)
    assert kubedllaunch.first_pod_ready([pod("Pending"), pod("Succeeded", ready_at=1)]) is None


def test_all_pods_needs_every_wanted_pod_running_and_ready() -> None:
    ready = [pod(ready_at=5), pod(ready_at=17), pod(ready_at=11)]
    assert kubedllaunch.all_pods_ready(ready, 3) == T0 + timedelta(seconds=17)
    assert kubedllaunch.all_pods_ready(ready[:2], 3) is None  # one not created yet
    assert kubedllaunch.all_pods_ready([*ready[:2], pod("Pending")], 3) is None
    assert kubedllaunch.all_pods_ready([*ready[:2], pod(ready_at=40, ready=False)], 3) is None
    # A failed pod being replaced does not count; its replacement does once Ready.
    assert kubedllaunch.all_pods_ready([*ready, pod("Failed", ready_at=2)], 3) == T0 + timedelta(seconds=17)


def test_observed_once_per_job_when_running(ns: str) -> None:
    job = kubedl_job(ns)  # 3 pods wanted
    first_ready = [pod(ready_at=4), pod("Pending"), pod("Pending")]
    kubedllaunch.observe(job, status(running=False), first_ready)  # not Running yet: nothing
    assert sample(FIRST, "_count", job) is None

    kubedllaunch.observe(job, status(), first_ready)
    assert sample(FIRST, "_count", job) == 1
    assert sample(FIRST, "_sum", job) == 4
    assert sample(FIRST, "_bucket", job, le="2.5") == 0
    assert sample(FIRST, "_bucket", job, le="5.0") == 1
    assert sample(ALL, "_count", job) is None  # two pods still Pending

    all_ready = [pod(ready_at=4), pod(ready_at=7), pod(ready_at=25)]
    for _ in range(3):  # every later reconcile: no second observation of either
        kubedllaunch.observe(job, status(), all_ready)
    assert sample(FIRST, "_count", job) == 1
    assert sample(ALL, "_count", job) == 1
    assert sample(ALL, "_sum", job) == 25
    assert sample(ALL, "_bucket", job, le="10.0") == 0
    assert sample(ALL, "_bucket", job, le="+Inf") == 1

    forget_job("PyTorchJob", ns, "j")  # the job deleted: its series go
    assert sample(FIRST, "_count", job) is None
    assert sample(ALL, "_count", job) is None


def test_kubedl_names_help_and_go_default_buckets(ns: str) -> None:
    job = kubedl_job(ns, workers=0)
    kubedllaunch.observe(job, status(), [pod(ready_at=0.0)])
    text = generate_latest(REGISTRY).decode()
    assert (
        "# HELP kubedl_jobs_first_pod_launch_delay_seconds Histogram for recording launch delay "
        "duration(from job created to first pod running)." in text
    )
    assert (
        "# HELP kubedl_jobs_all_pods_launch_delay_seconds Histogram for recording sync launch delay "
        "duration(from job created to all pods running)." in text
    )
    buckets = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith(f"{FIRST}_bucket") and f'namespace="{ns}"' in line
    ]
    # Go's prometheus.DefBuckets; the kind as KubeDL's controllers name it.
    assert buckets == [
        "0.005",
        "0.01",
        "0.025",
        "0.05",
        "0.1",
        "0.25",
        "0.5",
        "1.0",
        "2.5",
        "5.0",
        "10.0",
        "+Inf",
    ]
    assert f'kind="PyTorchJob",name="j",namespace="{ns}"' in text


def test_other_groups_jobs_get_no_series(ns: str) -> None:
    for group in ("kubeflow.org", "kubetrain.io"):
        job = kubedl_job(ns, workers=0, group=group)
        kubedllaunch.observe(job, status(), [pod(ready_at=3)])
        assert sample(FIRST, "_count", job) is None
        assert sample(ALL, "_count", job) is None


def test_bounded_least_recently_reconciled_first(ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubedllaunch.JOBS, "limit", 2)
    a, b, c = (kubedl_job(ns, name, workers=0) for name in "abc")
    ready = [pod(ready_at=1)]
    kubedllaunch.observe(a, status(), ready)
    kubedllaunch.observe(b, status(), ready)
    kubedllaunch.observe(a, status(), ready)  # a reconciled again: b is now the oldest
    kubedllaunch.observe(c, status(), ready)
    assert [sample(FIRST, "_count", j) for j in (a, b, c)] == [1, None, 1]
    assert sample(ALL, "_count", b) is None
    assert forget_namespace(ns) >= 2
    assert [sample(FIRST, "_count", j) for j in (a, c)] == [None, None]
