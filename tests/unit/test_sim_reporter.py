"""The simulated training code's reports (devcluster/kubelet/reporter.py): who reports, what it
sends, and where it reads the URL, token and CA from — pure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.kubelet.reporter import endpoint, report_body, wants_report

NOW = datetime(2026, 11, 25, 21, 0, tzinfo=UTC)
ENV = [
    {"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "https://127.0.0.1:1/apis/x/status"},
    {"name": "KUBEFLOW_TRAINER_SERVER_TOKEN", "value": "/var/run/secrets/kubeflow/trainer/token"},
    {"name": "KUBEFLOW_TRAINER_SERVER_CA_CERT", "value": "/var/run/secrets/kubeflow/trainer/ca.crt"},
]


def pod(
    annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None, env: Any = None
) -> Any:
    return {
        "metadata": {"annotations": annotations or {}, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "env": ENV if env is None else env}]},
    }


ON = {"sim.kubetrain.io/report-progress": "true"}


def test_only_asked_rank0_pods_with_the_endpoint_env_report() -> None:
    assert wants_report(pod(ON), by_default=False)
    assert not wants_report(pod(), by_default=False)  # off unless asked
    assert wants_report(pod(), by_default=True)
    assert not wants_report(pod({"sim.kubetrain.io/report-progress": "false"}), by_default=True)
    assert not wants_report(pod(ON, env=[]), by_default=False)  # no URL injected: nothing to call
    assert not wants_report(pod(ON, {"kubetrain.io/replica-index": "1"}), by_default=False)
    assert wants_report(pod(ON, {"kubetrain.io/replica-index": "0"}), by_default=False)
    assert not wants_report(pod(ON, {"batch.kubernetes.io/job-completion-index": "2"}), by_default=False)
    assert not wants_report(pod(ON, env=[*ENV, {"name": "RANK", "value": "3"}]), by_default=False)
    assert not wants_report(pod(ON, env=[*ENV, {"name": "PET_NODE_RANK", "value": "1"}]), by_default=False)


def test_the_body_is_the_sdk_wire_format_rising_with_run_time() -> None:
    start = report_body(0, 20, NOW)["trainerStatus"]
    mid = report_body(5, 20, NOW)["trainerStatus"]
    end = report_body(25, 20, NOW)["trainerStatus"]
    assert set(start) == {"progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime"}
    assert (start["progressPercentage"], mid["progressPercentage"], end["progressPercentage"]) == (0, 25, 100)
    assert (start["estimatedRemainingSeconds"], mid["estimatedRemainingSeconds"]) == (20, 15)
    assert end["estimatedRemainingSeconds"] == 0
    loss = [float(next(m["value"] for m in s["metrics"] if m["name"] == "loss")) for s in (start, mid, end)]
    assert loss[0] > loss[1] > loss[2] > 0
    assert all(isinstance(m["value"], str) for m in mid["metrics"])  # the SDK sends strings
    assert start["lastUpdatedTime"] == "2026-11-25T21:00:00+00:00"
    unknown = report_body(30, None, NOW)["trainerStatus"]  # no planned run time: metrics only
    assert "progressPercentage" not in unknown and "estimatedRemainingSeconds" not in unknown


def test_the_token_and_ca_are_read_from_the_files_the_env_names() -> None:
    files = {
        "/var/run/secrets/kubeflow/trainer/token": "tok\n",
        "/var/run/secrets/kubeflow/trainer/ca.crt": "CA",
    }
    target = endpoint(pod(ON), files)
    assert target is not None
    assert (target.url, target.token, target.ca_pem) == ("https://127.0.0.1:1/apis/x/status", "tok", "CA")
    assert endpoint(pod(ON), {}) is None  # not mounted (yet): nothing sent
