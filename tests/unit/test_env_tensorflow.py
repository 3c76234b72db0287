"""TF_CONFIG exactly as docs/behaviour.md §4 says, and the TFJob success rule (§5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jobs import laid_out

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import env_of, job, replica

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.tensorflow import FRAMEWORK as TF
from kubetrain.operator.children import build_pods


def ps_job():  # type: ignore[no-untyped-def]
    return job(
        "TFJob",
        {
            "Worker": replica("TFJob", 2),
            "PS": replica("TFJob", 1),
            "Chief": replica("TFJob", 1),
            "Evaluator": replica("TFJob", 1),
        },
        name="mnist",
        namespace="team-a",
    )


def test_tf_config_for_ps_worker_chief_evaluator() -> None:
    pods = {p["metadata"]["name"]: p for p in build_pods(laid_out(ps_job(), TF), TF)}
    assert list(pods) == [
        "mnist-chief-0",
        "mnist-ps-0",
        "mnist-worker-0",
        "mnist-worker-1",
        "mnist-evaluator-0",
    ]
    raw = env_of(pods["mnist-worker-1"])["TF_CONFIG"]
    assert json.loads(raw) == {
        "cluster": {
            "chief": ["mnist-chief-0.mnist.team-a.svc:2222"],
            "ps": ["mnist-ps-0.mnist.team-a.svc:2222"],
            "worker": ["mnist-worker-0.mnist.team-a.svc:2222", "mnist-worker-1.mnist.team-a.svc:2222"],
            "evaluator": ["mnist-evaluator-0.mnist.team-a.svc:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    # Compact JSON, keys in a stable order: the same job always renders the same pods.
    assert raw.startswith('{"cluster":{"chief":["mnist-chief-0.mnist.team-a.svc:2222"],"ps":')
    assert json.loads(env_of(pods["mnist-evaluator-0"])["TF_CONFIG"])["task"] == {
        "type": "evaluator",
        "index": 0,
    }
    assert json.loads(env_of(pods["mnist-chief-0"])["TF_CONFIG"])["task"] == {"type": "chief", "index": 0}


def test_tf_config_uses_each_types_named_port() -> None:
    obj = ps_job()
    ps = obj["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]
    ps["ports"] = [{"name": "tfjob-port", "containerPort": 3333}]
    cfg = json.loads(TF.cluster_env(laid_out(obj, TF), "Worker", 0)[0]["value"])
    assert cfg["cluster"]["ps"] == ["mnist-ps-0.mnist.team-a.svc:3333"]
    assert cfg["cluster"]["worker"][0].endswith(":2222")


def test_user_set_tf_config_wins_and_is_kept_once() -> None:
    obj = ps_job()
    c = obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    c["env"] = [{"name": "TF_CONFIG", "value": "mine"}]
    pods = build_pods(laid_out(obj, TF), TF)
    worker = next(p for p in pods if p["metadata"]["name"] == "mnist-worker-0")
    assert worker["spec"]["containers"][0]["env"] == [{"name": "TF_CONFIG", "value": "mine"}]


def test_tf_config_only_in_the_tensorflow_container() -> None:
    obj = job(
        "TFJob",
        {
            "Worker": replica(
                "TFJob",
                2,
                containers=[{"name": "tensorflow", "image": "a"}, {"name": "sidecar", "image": "b"}],
            )
        },
    )
    pod0 = build_pods(laid_out(obj, TF), TF)[0]
    assert "TF_CONFIG" in env_of(pod0, 0) and "TF_CONFIG" not in env_of(pod0, 1)
    # The framework container need not be the first one.
    obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].reverse()
    pod0 = build_pods(laid_out(obj, TF), TF)[0]
    assert "TF_CONFIG" not in env_of(pod0, 0) and "TF_CONFIG" in env_of(pod0, 1)


def test_standalone_tfjob_gets_no_tf_config() -> None:
    obj = job("TFJob", {"Worker": replica("TFJob", 1)})
    assert TF.cluster_env(laid_out(obj, TF), "Worker", 0) == []
    assert "env" not in build_pods(laid_out(obj, TF), TF)[0]["spec"]["containers"][0]


def counts(**by_type: set[int]) -> dict[str, ReplicaCounts]:
    return {t: ReplicaCounts(succeeded=len(ix), succeeded_indices=frozenset(ix)) for t, ix in by_type.items()}


def test_success_rule_chief_decides() -> None:
    lay = laid_out(ps_job(), TF)
    assert not TF.succeeded(lay, counts(Worker={0, 1}))
    assert TF.succeeded(lay, counts(Chief={0}))


def test_success_rule_worker0_unless_all_workers() -> None:
    obj = job("TFJob", {"Worker": replica("TFJob", 3), "PS": replica("TFJob", 1)})
    assert TF.succeeded(laid_out(obj, TF), counts(Worker={0}))
    assert not TF.succeeded(laid_out(obj, TF), counts(Worker={1, 2}))
    obj["spec"]["successPolicy"] = "AllWorkers"
    assert not TF.succeeded(laid_out(obj, TF), counts(Worker={0, 1}))
    assert TF.succeeded(laid_out(obj, TF), counts(Worker={0, 1, 2}))
