"""`kubetrain render`: the exact children the controller creates, as YAML; clear errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from kubetrain.cli import main

PT_JOB = """
apiVersion: kubetrain.io/v1
kind: PyTorchJob
metadata:
  name: ddp
spec:
  pytorchReplicaSpecs:
    master:
      template:
        spec:
          containers:
          - name: pytorch
            image: example.com/train:1
            resources: {requests: {cpu: "2", memory: 4Gi}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: pytorch
            image: example.com/train:1
            resources: {requests: {cpu: "2", memory: 4Gi}}
"""


def render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *args: str
) -> tuple[int, list, str]:  # type: ignore[type-arg]
    path = tmp_path / "job.yaml"
    path.write_text(text)
    code = main(["render", str(path), *args])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None], err


def test_render_service_and_pods_with_env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = render(tmp_path, capsys, PT_JOB, "-n", "team-a")
    assert code == 0, err
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Service", "ddp"),
        ("Pod", "ddp-master-0"),
        ("Pod", "ddp-worker-0"),
        ("Pod", "ddp-worker-1"),
    ]
    assert all(d["metadata"]["namespace"] == "team-a" for d in docs)
    env = {e["name"]: e["value"] for e in docs[3]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "ddp-master-0.ddp.team-a.svc"
    assert (env["RANK"], env["WORLD_SIZE"], env["PET_NPROC_PER_NODE"]) == ("2", "3", "auto")
    assert docs[1]["spec"]["restartPolicy"] == "OnFailure"  # defaulted like the webhook does
    assert "uid" not in docs[0]["metadata"]["ownerReferences"][0]


def test_render_namespace_from_manifest_wins_and_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_ns = PT_JOB.replace("  name: ddp\n", "  name: ddp\n  namespace: ml\n")
    _, docs, _ = render(tmp_path, capsys, with_ns, "-n", "other")
    assert {d["metadata"]["namespace"] for d in docs} == {"ml"}
    _, docs, _ = render(tmp_path, capsys, PT_JOB)
    assert {d["metadata"]["namespace"] for d in docs} == {"default"}


def test_render_with_volcano_pod_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = render(tmp_path, capsys, PT_JOB, "--gang-scheduler", "volcano")
    assert code == 0
    group = docs[1]
    assert group["kind"] == "PodGroup" and group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "6", "memory": "12Gi"}}
    assert docs[2]["spec"]["schedulerName"] == "volcano"


def test_render_tf_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tf = """
apiVersion: kubetrain.io/v1
kind: TFJob
metadata: {name: tf, namespace: ml}
spec:
  tfReplicaSpecs:
    PS: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf:2}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf:2}]}}}
"""
    code, docs, _ = render(tmp_path, capsys, tf)
    assert code == 0
    env = {e["name"]: e["value"] for e in docs[2]["spec"]["containers"][0]["env"]}
    assert json.loads(env["TF_CONFIG"])["task"] == {"type": "worker", "index": 0}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: [unclosed", "not valid YAML"),
        (PT_JOB.replace("replicas: 2", "replicas: -1"), "spec.pytorchReplicaSpecs[Worker].replicas"),
        ("apiVersion: kubetrain.io/v1\nkind: Mystery\nmetadata: {name: x}\n", "kind"),
    ],
)
def test_render_bad_input_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    code, docs, err = render(tmp_path, capsys, text)
    assert code == 1 and docs == []
    assert expected in err and "Traceback" not in err


def test_render_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "/nonexistent/job.yaml"]) == 1
    assert "no such file" in capsys.readouterr().err


ELASTIC_JOB = """
apiVersion: kubetrain.io/v1
kind: PyTorchJob
metadata:
  name: el
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 4
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: pytorch
            image: example.com/train:1
"""


def test_render_elastic_job_with_metrics_shows_its_hpa(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, _ = render(tmp_path, capsys, ELASTIC_JOB)
    assert code == 0
    hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
    target = {"apiVersion": "kubetrain.io/v1", "kind": "PyTorchJob", "name": "el"}
    assert hpa["spec"]["scaleTargetRef"] == target
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Pod"] == ["el-worker-0", "el-worker-1"]


@pytest.mark.parametrize("gang", ["none", "scheduler-plugins"])
def test_render_prints_what_the_planner_creates(gang: str) -> None:
    # One desired_children(...) serves both: the first reconcile of a job creates exactly the
    # children `render` prints (scheduler-plugins: PodGroup and pods in the same reconcile).
    from kubetrain.commands.render import render_job
    from kubetrain.operator.plan import Observed, PlannerConfig, plan

    job = yaml.safe_load(PT_JOB)
    job["metadata"].update(namespace="ml", uid="uid-7", generation=1)
    rendered, errors = render_job(job, gang_scheduler=gang)
    assert errors == []
    first = plan(job, Observed(pods=[]), planner_now(), PlannerConfig(gang_scheduler=gang))
    created = [first.create_service, first.create_pod_group, *first.create_pods]
    assert [c for c in created if c is not None] == rendered


def planner_now() -> datetime:
    return datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
