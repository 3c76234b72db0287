"""MXNet environment (DMLC_*, MX_CONFIG) per docs/behaviour.md §4, and the MXJob success rule (§5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jobs import cluster_env, laid_out

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import job, replica

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.mxnet import FRAMEWORK as MX


def env(obj: dict[str, Any], rtype: str, index: int) -> dict[str, str]:
    return dict(cluster_env(obj, MX, rtype, index))


def dist() -> dict[str, Any]:
    return job(
        "MXJob",
        {
            "Scheduler": replica("MXJob", 1),
            "Server": replica("MXJob", 2),
            "Worker": replica("MXJob", 3),
        },
        name="mx",
        namespace="ml",
        jobMode="MXTrain",
    )


def test_worker_env_and_mx_config() -> None:
    e = env(dist(), "Worker", 2)
    cfg = json.loads(e.pop("MX_CONFIG"))
    assert e == {
        "DMLC_PS_ROOT_URI": "mx-scheduler-0.mx.ml.svc",
        "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_NUM_SERVER": "2",
        "DMLC_NUM_WORKER": "3",
        "DMLC_ROLE": "worker",
        "DMLC_USE_KUBERNETES": "1",
        "DMLC_WORKER_ID": "2",
    }
    assert cfg == {
        "cluster": {
            "scheduler": [{"url": "mx-scheduler-0.mx.ml.svc", "port": 9091}],
            "server": [
                {"url": "mx-server-0.mx.ml.svc", "port": 9091},
                {"url": "mx-server-1.mx.ml.svc", "port": 9091},
            ],
            "worker": [{"url": f"mx-worker-{i}.mx.ml.svc", "port": 9091} for i in range(3)],
        },
        "labels": {"scheduler": "", "server": "", "worker": ""},
        "task": {"type": "worker", "index": 2},
    }


def test_roles_and_worker_id_only_on_workers() -> None:
    assert env(dist(), "Scheduler", 0)["DMLC_ROLE"] == "scheduler"
    server = env(dist(), "Server", 1)
    assert server["DMLC_ROLE"] == "server" and "DMLC_WORKER_ID" not in server
    assert json.loads(server["MX_CONFIG"])["task"] == {"type": "server", "index": 1}


def test_local_job_gets_mx_config_and_dmlc() -> None:
    local = job("MXJob", {"Worker": replica("MXJob", 1)}, name="mx", namespace="ml", jobMode="MXTrain")
    e = env(local, "Worker", 0)
    assert json.loads(e.pop("MX_CONFIG")) == {
        "cluster": {"worker": [{"url": "mx-worker-0.mx.ml.svc", "port": 9091}]},
        "labels": {"worker": ""},
        "task": {"type": "worker", "index": 0},
    }
    assert e == {
        "DMLC_PS_ROOT_URI": "",
        "DMLC_PS_ROOT_PORT": "0",
        "DMLC_NUM_SERVER": "0",
        "DMLC_NUM_WORKER": "1",
        "DMLC_ROLE": "worker",
        "DMLC_USE_KUBERNETES": "1",
        "DMLC_WORKER_ID": "0",
    }


def test_success_rules() -> None:
    def done(**by_type: set[int]) -> dict[str, ReplicaCounts]:
        return {
            t: ReplicaCounts(succeeded=len(i), succeeded_indices=frozenset(i)) for t, i in by_type.items()
        }

    assert MX.succeeded(laid_out(dist(), MX), done(Scheduler={0}))
    assert not MX.succeeded(laid_out(dist(), MX), done(Worker={0, 1, 2}, Server={0, 1}))
    local = job("MXJob", {"Worker": replica("MXJob", 1)})
    assert MX.succeeded(laid_out(local, MX), done(Worker={0}))
    tune = job(
        "MXJob",
        {
            "TunerTracker": replica("MXJob", 1),
            "TunerServer": replica("MXJob", 1),
            "Tuner": replica("MXJob", 1),
        },
        jobMode="MXTune",
    )
    assert not MX.succeeded(laid_out(tune, MX), done(TunerServer={0}))
    assert MX.succeeded(laid_out(tune, MX), done(Tuner={0}))
