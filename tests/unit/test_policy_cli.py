"""`kubetrain validate --policy FILE`: a platform team's CI applies its policies offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrain.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"

JOB = """
apiVersion: kubetrain.io/v1
kind: PyTorchJob
metadata: {name: bert, namespace: vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: registry.example.com/ml/bert:1}]}}
    Worker:
      replicas: WORKERS
      template:
        spec:
          containers:
            - name: pytorch
              image: IMAGE
              resources: {limits: {nvidia.com/gpu: 8}}
"""


def job_file(tmp_path: Path, workers: int = 6, image: str = "registry.example.com/ml/bert:1") -> str:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("WORKERS", str(workers)).replace("IMAGE", image))
    return str(path)


def policy_args(*names: str) -> list[str]:
    out: list[str] = []
    for name in names:
        out += ["--policy", str(EXAMPLES / f"{name}.yaml")]
    return out


def test_deny_policy_fails_the_job_with_policy_field_and_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["validate", job_file(tmp_path), *policy_args("gpu-quota")])
    out = capsys.readouterr().out
    assert code == 1
    assert (
        '(PyTorchJob/bert): policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: '
        "total nvidia.com/gpu 48 exceeds 32" in out
    )


def test_namespace_labels_select_the_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["validate", job_file(tmp_path), *policy_args("gpu-quota")]
    assert main([*args, "--namespace-labels", "team=nlp"]) == 0
    assert "(PyTorchJob/bert): valid" in capsys.readouterr().out
    assert main([*args, "--namespace-labels", "team=vision"]) == 1
    assert main([*args, "--namespace-labels", "team"]) == 1
    assert '--namespace-labels: "team" is not KEY=VALUE' in capsys.readouterr().err


def test_warn_policy_only_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["validate", job_file(tmp_path, workers=2, image="quay.io/x/y:1"), *policy_args("allowed-registries")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert (
        'warning: policy "allowed-registries": spec.pytorchReplicaSpecs[Worker].template.spec.containers[0]'
        in out
    )


def test_policy_defaults_appear_in_the_shown_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["validate", job_file(tmp_path), "--show-defaults", *policy_args("team-default-queue")])
    captured = capsys.readouterr()
    assert code == 0
    job = yaml.safe_load(captured.out)
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "nlp"
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert job["metadata"]["labels"] == {"team": "nlp"}


def test_invalid_policy_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubetrain.io/v1\nkind: TrainingPolicy\nmetadata: {name: bad}\n"
        "spec: {limits: {maxReplicasPerJob: -3}}\n"
    )
    code = main(["validate", job_file(tmp_path, workers=1), "--policy", str(bad)])
    out = capsys.readouterr().out
    assert code == 1
    assert "bad.yaml#1 (TrainingPolicy/bad): spec.limits.maxReplicasPerJob: Invalid: -3" in out
    # A TrainingPolicy among the files is validated as a policy.
    assert main(["validate", str(bad), str(EXAMPLES / "gpu-quota.yaml")]) == 1
    out = capsys.readouterr().out
    assert "(TrainingPolicy/gpu-quota): valid" in out
    assert "(TrainingPolicy/bad): spec.limits.maxReplicasPerJob" in out


def test_policy_file_with_a_job_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = job_file(tmp_path, workers=1)
    assert main(["validate", path, "--policy", path]) == 1
    assert "--policy files hold TrainingPolicy objects only" in capsys.readouterr().out
