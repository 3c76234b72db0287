"""KubeDL's TensorBoard TTL as its console writes the annotation: `updateTimestamp` (the time the
config was last applied) is accepted, and a TensorBoard asked for after the job finished lives
`ttlSecondsAfterJobFinished` from that time, as KubeDL's `cleanupAndCheckNeedSync`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica, ts

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

TB = "kubedl.io/tensorboard-config"


def finished_job() -> Sim:
    sim = Sim(job("TFJob", {"Worker": replica("TFJob", 1)}, name="tf"))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("tf-worker-0", "Succeeded", exit_code=0)
    sim.step(at(50))
    assert sim.is_true("Succeeded") and sim.job["status"]["completionTime"] == ts(at(50))
    return sim


def annotate(sim: Sim, **config: Any) -> None:
    sim.job["metadata"].setdefault("annotations", {})[TB] = json.dumps({"logDir": "/logs", **config})


def board_created(p: Any) -> bool:
    return any(pod["metadata"]["name"] == "tf-tensorboard-0" for pod in p.create_pods)


def test_a_tensorboard_applied_after_the_job_finished_lives_its_ttl_from_the_update() -> None:
    sim = finished_job()
    annotate(sim, ttlSecondsAfterJobFinished=600, updateTimestamp=ts(at(1000)))
    p = sim.step(at(1000))
    assert board_created(p)
    assert p.requeue_at == at(1600)
    assert sim.job["status"]["tensorBoard"]["expireTime"] == ts(at(1600))
    assert sim.plan(at(1599)).requeue_at == at(1600)
    gone = sim.step(at(1600))
    assert "tf-tensorboard-0" in gone.delete_pods
    assert sim.job["status"]["tensorBoard"]["phase"] == "Deleted"


def test_an_update_before_the_job_finished_counts_from_the_completion() -> None:
    sim = finished_job()
    annotate(sim, ttlSecondsAfterJobFinished=600, updateTimestamp=ts(at(10)))
    assert sim.step(at(60)).requeue_at == at(650)
    assert sim.job["status"]["tensorBoard"]["expireTime"] == ts(at(650))


def test_without_update_timestamp_the_ttl_counts_from_the_completion() -> None:
    sim = finished_job()
    annotate(sim, ttlSecondsAfterJobFinished=600)
    p = sim.step(at(1000))
    assert not board_created(p)
    assert sim.job["status"]["tensorBoard"] == {"phase": "Deleted", "expireTime": ts(at(650))}


def tf_job(config: dict[str, Any]) -> dict[str, Any]:
    obj = job("TFJob", {"Worker": replica("TFJob", 1)}, name="tf")
    obj["metadata"]["annotations"] = {TB: json.dumps({"logDir": "/logs", **config})}
    return obj


@pytest.mark.parametrize("stamp", ["2024-05-01T12:00:00Z", "2024-05-01T20:00:00+08:00", None])
def test_the_consoles_update_timestamp_is_accepted(stamp: Any) -> None:
    assert validate_job(default_job(tf_job({"updateTimestamp": stamp})).obj).errors == []


@pytest.mark.parametrize("stamp", ["yesterday", 1714564800])
def test_a_malformed_update_timestamp_is_refused_naming_the_field(stamp: Any) -> None:
    errors = validate_job(default_job(tf_job({"updateTimestamp": stamp})).obj).errors
    assert [e.path for e in errors] == [f"metadata.annotations[{TB}].updateTimestamp"]
    assert "RFC 3339" in str(errors[0])


def test_reapplying_the_same_config_keeps_the_pod() -> None:
    # KubeDL's syncPod compares configs ignoring updateTimestamp: a re-apply (which moves the
    # TTL's start) does not replace the running TensorBoard; another option does.
    sim = Sim(tf_job({"updateTimestamp": ts(at(0))}))
    assert board_created(sim.step(at(0)))
    sim.all_phase("Running")
    annotate(sim, updateTimestamp=ts(at(30)))
    assert "tf-tensorboard-0" not in sim.step(at(30)).delete_pods
    annotate(sim, updateTimestamp=ts(at(40)), image="tensorflow/tensorflow:2.16.1")
    assert "tf-tensorboard-0" in sim.step(at(40)).delete_pods
