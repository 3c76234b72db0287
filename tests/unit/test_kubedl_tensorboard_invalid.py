"""A TensorBoard annotation made invalid while the job runs (an annotation-only edit stored
without the webhook, which refuses it — tests/unit/test_kubedl_annotation_updates.py): the controller
says so — a Warning event and `status.tensorBoard.error` naming the annotation and its field —
and leaves the TensorBoard as the last valid config made it, instead of silently deleting it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

TB = "kubedl.io/tensorboard-config"


def running(**config: Any) -> Sim:
    obj = job("TFJob", {"Worker": replica("TFJob", 1)}, name="tf")
    obj["metadata"]["annotations"] = {TB: json.dumps({"logDir": "/logs", **config})}
    sim = Sim(obj)
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    assert "tf-tensorboard-0" in sim.pods and sim.job["status"]["tensorBoard"]["phase"] == "Running"
    return sim


def invalid_events(sim: Sim) -> list[Any]:
    return [e for e in sim.events if e.reason == "InvalidTensorBoardConfig"]


def test_bad_json_keeps_the_tensorboard_and_says_which_annotation() -> None:
    sim = running(ingressSpec={"host": "tb.example.com"})
    address = sim.job["status"]["tensorBoard"]["address"]
    sim.job["metadata"]["annotations"][TB] = '{"logDir": "/logs",'
    p = sim.step(at(2))
    assert "tf-tensorboard-0" not in p.delete_pods and p.tensorboard_deletes == []
    assert p.tensorboard_creates == [] and p.tensorboard_replaces == []
    (event,) = invalid_events(sim)
    assert event.type == "Warning"
    assert f"metadata.annotations[{TB}]: Invalid: not valid JSON" in event.message
    record = sim.job["status"]["tensorBoard"]
    assert record["address"] == address and record["phase"] == "Running"
    assert record["error"].startswith(f"metadata.annotations[{TB}]: Invalid: not valid JSON")
    # Once per distinct mistake: the next reconciles neither repeat the event nor rewrite status.
    writes = sim.status_writes
    sim.step(at(3))
    assert len(invalid_events(sim)) == 1 and sim.status_writes == writes


def test_an_unknown_field_is_named_and_fixing_it_clears_the_error() -> None:
    sim = running()
    sim.job["metadata"]["annotations"][TB] = json.dumps({"logDir": "/logs", "ttl": 60})
    sim.step(at(2))
    (event,) = invalid_events(sim)
    assert f"metadata.annotations[{TB}].ttl: Invalid: unknown field" in event.message
    sim.job["metadata"]["annotations"][TB] = json.dumps({"logDir": "/logs", "ttlSecondsAfterJobFinished": 60})
    sim.step(at(3))
    assert "error" not in sim.job["status"]["tensorBoard"]
    assert "tf-tensorboard-0" in sim.deleted  # the new config replaces the pod


def test_the_last_valid_ttl_still_ends_it_after_the_job_finished() -> None:
    sim = running(ttlSecondsAfterJobFinished=100)
    sim.set_phase("tf-worker-0", "Succeeded", exit_code=0)
    sim.step(at(10))
    assert sim.job["status"]["tensorBoard"]["expireTime"] == "2024-05-01T12:01:50Z"
    sim.job["metadata"]["annotations"][TB] = "not json"
    assert sim.step(at(20)).requeue_at == at(110)
    gone = sim.step(at(110))
    assert "tf-tensorboard-0" in gone.delete_pods
    assert sim.job["status"]["tensorBoard"]["phase"] == "Deleted"
