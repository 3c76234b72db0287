"""Manifests are read as kubectl reads them: date-like scalars stay strings (validate, dev,
render), and a job with metadata.generateName renders."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml

from kubetrain.api.manifests import load, load_all
from kubetrain.cli import main
from kubetrain.commands._devmanifests import load_jobs

GET_OUTPUT = """\
apiVersion: kubetrain.io/v1
kind: TFJob
metadata:
  creationTimestamp: 2021-09-06T11:48:09Z
  annotations:
    build-date: 2024-01-01
  labels:
    released: 2024-01-01
  name: tfjob-simple
  namespace: kubeflow
  resourceVersion: "5764004"
  uid: 3a67a9a9-cb89-4c1f-a189-f49f0b581e29
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        metadata:
          creationTimestamp: null
        spec:
          containers:
          - name: tensorflow
            image: example.com/tf:1
status:
  startTime: 2021-09-06T11:48:10Z
  conditions:
  - lastTransitionTime: 2021-09-06T11:48:09Z
    type: Created
    status: "True"
"""


def test_timestamps_stay_strings() -> None:
    docs = load_all("a: 2024-01-01\nb: 2021-09-06T11:48:09Z\nc: !!timestamp 2020-01-01\nd: 7\ne: true\n---\n")
    assert docs == [
        {"a": "2024-01-01", "b": "2021-09-06T11:48:09Z", "c": "2020-01-01", "d": 7, "e": True},
        None,
    ]
    assert load("x: 2024-01-01") == {"x": "2024-01-01"}
    # PyYAML's own safe loader is left as it is.
    assert not isinstance(yaml.safe_load("x: 2024-01-01")["x"], str)


def test_validate_accepts_kubectl_get_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GET_OUTPUT)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr()
    assert "datetime" not in out.out + out.err
    assert main(["render", str(path)]) == 0


def test_dev_reads_dates_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GET_OUTPUT)
    (job,) = load_jobs(argparse.Namespace(file=str(path), example="pytorch-ddp"))
    assert job["metadata"]["annotations"]["build-date"] == "2024-01-01"
    json.dumps(job)  # what the client sends: no date object left in it


def test_render_names_a_generate_name_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GET_OUTPUT.replace("  name: tfjob-simple\n", "  generateName: tfjob-\n"))
    assert main(["render", str(path)]) == 0
    out = capsys.readouterr()
    pods = [d for d in yaml.safe_load_all(out.out) if d["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == ["tfjob-xxxxx-worker-0", "tfjob-xxxxx-worker-1"]
    assert 'metadata.generateName: rendered as "tfjob-xxxxx"' in out.err
