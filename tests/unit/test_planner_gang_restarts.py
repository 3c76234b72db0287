"""Upstream gang-scheduling complaints about restarts replayed on the planner (docs/behaviour.md
§6, §8, §12): a retried pod or a whole-gang restart under Volcano keeps the job's PodGroup, and
the pods a gang restart deletes do not set off another restart when they fail on the way out."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at, job, replica

from kubetrain.operator.plan import PlannerConfig

ATTEMPT = "kubetrain.io/attempt"
VOLCANO = PlannerConfig(gang_scheduler="volcano")


def gang_job(**run_policy: Any) -> dict[str, Any]:
    return job(
        "PyTorchJob",
        {"Master": replica("PyTorchJob", 1, "ExitCode"), "Worker": replica("PyTorchJob", 2, "ExitCode")},
        name="vg",
        run_policy=run_policy,
    )


def running_under_volcano(obj: dict[str, Any]) -> Sim:
    """The job with its PodGroup admitted (Inqueue, then Running) and every pod Running."""
    sim = Sim(obj, VOLCANO)
    sim.step(at(0))
    assert sim.pod_group is not None
    sim.pod_group["status"] = {"phase": "Inqueue"}
    assert len(sim.step(at(1)).create_pods) == 3
    sim.all_phase("Running")
    sim.pod_group["status"] = {"phase": "Running", "running": 3}
    sim.step(at(2))
    assert sim.is_true("Running")
    return sim


def created(p: Any) -> tuple[list[str], set[str]]:
    """The names of the pods a plan creates, sorted, and the attempts their labels say."""
    return (
        sorted(x["metadata"]["name"] for x in p.create_pods),
        {x["metadata"]["labels"][ATTEMPT] for x in p.create_pods},
    )


def test_volcano_5385_a_retried_pod_keeps_the_pod_group_and_is_made_again_at_once() -> None:
    """Volcano issue 5385: restarting one pod of a gang also deleted its PodGroup, which came back
    `Pending`, and no pod was made until the scheduler enqueued the group again — the job sat in
    Restarting. Here the Worker that exits with a retryable code is replaced in the next reconcile
    and the PodGroup is neither deleted nor made again."""
    sim = running_under_volcano(gang_job(backoffLimit=3))
    group_uid = sim.pod_group["metadata"].get("uid") if sim.pod_group else None
    sim.set_phase("vg-worker-1", "Failed", exit_code=137)
    p = sim.step(at(5))
    assert p.delete_pods == ["vg-worker-1"] and not p.delete_pod_group and p.create_pod_group is None
    p = sim.step(at(6))
    assert [x["metadata"]["name"] for x in p.create_pods] == ["vg-worker-1"]
    assert not p.delete_pod_group and p.create_pod_group is None
    assert sim.pod_group is not None and sim.pod_group["metadata"].get("uid") == group_uid
    made = p.create_pods[0]
    assert made["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vg"
    assert made["spec"]["schedulerName"] == "volcano"
    assert sim.restarts("Worker") == 1 and not sim.is_true("Failed")


def test_volcano_4814_pods_deleted_by_a_gang_restart_do_not_restart_it_again() -> None:
    """Volcano issue 4814 (pull request 4815): a restart action deleted the other pods, their
    deletion was taken as new failures, and the job restarted itself over and over until it hit
    its retry limit and Failed. Here the peers of the pod that matched the `RestartJob` rule
    crash with the same exit code while kubetrain deletes them (as a distributed job's peers do
    when one rank dies): the job restarts once, counts one restart against `backoffLimit: 1`,
    keeps its PodGroup and starts the new attempt once the old pods are gone."""
    rule = {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    sim = running_under_volcano(gang_job(backoffLimit=1, podFailurePolicy={"rules": [rule]}))
    sim.set_phase("vg-worker-0", "Failed", exit_code=42)
    before = copy.deepcopy(sim.pods)
    p = sim.step(at(5))
    assert sorted(p.delete_pods) == ["vg-master-0", "vg-worker-0", "vg-worker-1"]
    assert not p.delete_pod_group and sim.job["status"]["jobRestarts"] == 1
    # The deleted pods are still terminating, and fail with the rule's exit code on the way out.
    for name in ("vg-master-0", "vg-worker-1"):
        gone = before[name]
        gone["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
        sim.pods[name] = gone
        sim.set_phase(name, "Failed", exit_code=42)
    p = sim.step(at(6))
    assert p.create_pods == [] and p.events == [] and not p.delete_pod_group
    assert sim.job["status"]["jobRestarts"] == 1
    assert sum(sim.restarts(t) for t in ("Master", "Worker")) == 1
    assert not sim.is_true("Failed")
    for name in ("vg-master-0", "vg-worker-1"):
        del sim.pods[name]
    p = sim.step(at(7))
    assert created(p) == (["vg-master-0", "vg-worker-0", "vg-worker-1"], {"1"})
    assert p.create_pod_group is None and sim.pod_group is not None
    assert not sim.is_true("Failed") and sim.job["status"]["jobRestarts"] == 1


def test_a_gang_restart_triggered_by_several_pods_at_once_counts_once() -> None:
    """The same complaint when every rank crashes in the same instant: three pods Failed with the
    rule's code in one reconcile are one restart, not three (`backoffLimit: 1` is not exceeded)."""
    rule = {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    sim = running_under_volcano(gang_job(backoffLimit=1, podFailurePolicy={"rules": [rule]}))
    sim.all_phase("Failed", exit_code=42)
    p = sim.step(at(5))
    assert sorted(p.delete_pods) == ["vg-master-0", "vg-worker-0", "vg-worker-1"]
    assert [e.reason for e in p.events] == ["RestartJob"]
    assert sim.job["status"]["jobRestarts"] == 1
    assert sum(sim.restarts(t) for t in ("Master", "Worker")) == 1
    assert not sim.is_true("Failed")
    p = sim.step(at(6))
    assert len(p.create_pods) == 3 and not p.delete_pod_group


def test_jobset_684_no_pod_of_the_new_attempt_while_one_of_the_old_is_left() -> None:
    """JobSet issues 665 and 684: after a restart, a new pod came up while a straggler of the
    previous attempt was still terminating, connected to it, and failed again (JobSet added
    `BlockingRecreate` for it). Here, without any gang scheduler, a `RestartJob` rule's new
    attempt is made only once every pod of the old one has left the API — none of it while the
    slow Master still terminates, although the Workers' slots are free."""
    rule = {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    sim = Sim(gang_job(backoffLimit=2, podFailurePolicy={"rules": [rule]}))
    sim.step(at(0))
    sim.all_phase("Running")
    sim.step(at(1))
    sim.set_phase("vg-worker-1", "Failed", exit_code=42)
    before = copy.deepcopy(sim.pods)
    p = sim.step(at(5))
    assert sorted(p.delete_pods) == ["vg-master-0", "vg-worker-0", "vg-worker-1"]
    slow = before["vg-master-0"]
    slow["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
    sim.pods["vg-master-0"] = slow  # still shutting down; the Workers are gone
    for t in (6, 30, 90):
        p = sim.step(at(t))
        assert p.create_pods == [] and p.delete_pods == []
    del sim.pods["vg-master-0"]
    p = sim.step(at(91))
    assert created(p) == (["vg-master-0", "vg-worker-0", "vg-worker-1"], {"1"})


def test_kueue_3400_an_mpijob_created_suspended_gets_kueues_node_selector_on_every_pod() -> None:
    """Kueue issue 3400 (mpi-operator issue 770): an MPIJob created suspended had its launcher
    Job made at once from the template as it was then, so after Kueue's admission (node
    selector and tolerations written into every template, `suspend: false`, one update) the
    Launcher pod lacked the flavor's node selector and could land outside the admitted flavor.
    Here nothing is made while the job is suspended, and on resume every pod — Launcher and
    Workers — carries what Kueue wrote."""
    from test_mpi_operator_cases import mpijob
    from test_mpi_operator_cases import sim as mpi_sim

    s = mpi_sim(mpijob(workers=2, run_policy={"suspend": True}))
    p = s.step(at(0))
    assert p.create_pods == [] and s.pods == {}
    toleration = {"key": "flavor", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
    for template in (r["template"] for r in s.job["spec"]["mpiReplicaSpecs"].values()):
        template.setdefault("metadata", {})["labels"] = {"kueue.x-k8s.io/podset": "x"}
        template["spec"].update(nodeSelector={"cloud.example.com/flavor": "a"}, tolerations=[toleration])
    s.job["spec"]["runPolicy"]["suspend"] = False
    s.job["metadata"]["generation"] = 2
    s.step(at(10))
    assert sorted(s.pods) == ["foo-launcher-0", "foo-worker-0", "foo-worker-1"]
    for pod in s.pods.values():
        assert pod["spec"]["nodeSelector"] == {"cloud.example.com/flavor": "a"}
        assert toleration in pod["spec"]["tolerations"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "x"
