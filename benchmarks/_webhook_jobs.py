"""The jobs the webhook benchmarks send (not a benchmark itself): small (1 replica type, 1
container), large (a TFJob with 4 replica types x 4 containers, each with env, volumes,
resources) and xlarge (4 x 16 = 64 such containers), and the AdmissionReview body of each.
Used by bench_webhook.py and bench_webhook_kopf.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.review import request_review

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/jobs.py, the job builder
from jobs import big_tf_job


def small_job() -> dict[str, Any]:
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "small", "namespace": "bench"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.3"}]}
                    },
                }
            }
        },
    }


def large_job() -> dict[str, Any]:
    """4 replica types x 4 containers = 16 containers (~20 KB AdmissionReview)."""
    return big_tf_job("large", 4)


def xlarge_job() -> dict[str, Any]:
    """4 replica types x 16 containers = 64 containers, each like the large job's (~75 KB)."""
    return big_tf_job("xlarge", 16)


JOBS = {"small": small_job, "large": large_job, "xlarge": xlarge_job}


def parse_jobs(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in JOBS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--jobs takes a comma-separated subset of {','.join(JOBS)}")
    return names


def count_containers(job: dict[str, Any]) -> int:
    specs = next(iter(job["spec"].values()))
    return sum(len(s["template"]["spec"]["containers"]) for s in specs.values())


def review_body(job: dict[str, Any], path: str) -> bytes:
    """The AdmissionReview request for `job` at `path`: /validate gets the job already defaulted
    (as kube-apiserver sends it after mutation), /mutate gets it as submitted."""
    return json.dumps(request_review(default_job(job).obj if path == "/validate" else job)).encode()
