"""A TrainJob's training progress, pure (progressenv.py and stall.py, through the one planner):
the CA ConfigMap and env its pods get, and stall detection — never for a TrainJob that did not
report in its current attempt (after a restart or a resume), a requeue at the exact deadline, a
whole-gang restart counted against maxRestarts, then Failed."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from trainjobs import RUNTIME, UID, trainjob_pod

from kubetrain.api import trainerstatus as ts
from kubetrain.jobs.trainjob import children as ch
from kubetrain.jobs.trainjob.shape import run_policy_of
from kubetrain.operator import stall
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.groupactive import RESTARTED_AT
from kubetrain.operator.progressenv import ProgressInjection
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
INJECTION = ProgressInjection("https://progress.example:10443", "-----BEGIN CERTIFICATE-----\nX\n")


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def trainjob(deadline: str | None = "60", reported: datetime | None = None, **annotations: str) -> Obj:
    if deadline is not None:
        annotations[ts.ANNOTATION_DEADLINE] = deadline
    job: Obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ns", "uid": UID, "annotations": annotations},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    }
    if reported is not None:
        job["status"] = {"trainerStatus": {"progressPercentage": 30, "lastUpdatedTime": stamp(reported)}}
    return job


def pod(name: str, attempt: int = 0, phase: str = "Running") -> Obj:
    return trainjob_pod(name, phase, attempt)


def runtime(max_restarts: int | None) -> Obj:
    r = copy.deepcopy(RUNTIME)
    if max_restarts is not None:
        r["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    return r


def snapshot(job: Obj, rt: Obj, state: Obj) -> Obj:
    cm = ch.build_snapshot(job, rt, state)
    cm["metadata"]["ownerReferences"][0]["uid"] = UID
    return cm


def ca_map(job: Obj, data: str = INJECTION.ca_pem) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "tj-tls-config",
            "namespace": "ns",
            "ownerReferences": [{"controller": True, "uid": UID}],
        },
        "data": {"ca.crt": data},
    }


def plan(job: Obj, pods: list[Obj], extra: list[Obj], rt: Obj, now: datetime = NOW) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=extra)
    return plan_trainjob(job, observed, rt, now, PlannerConfig(progress=INJECTION))


def test_pods_get_trainers_env_and_the_ca_configmap_comes_first() -> None:
    job = trainjob(deadline=None)
    p = plan(job, [], [], RUNTIME)
    cm = next(c for c in p.create_children if c["metadata"]["name"] == "tj-tls-config")
    assert cm["data"] == {"ca.crt": INJECTION.ca_pem}
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    for new in p.create_pods:
        for container in new["spec"]["containers"]:
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert env[ts.ENV_URL] == (
                "https://progress.example:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status"
            )
        [volume] = [v for v in new["spec"]["volumes"] if v["name"] == ts.VOLUME_NAME]
        sources = volume["projected"]["sources"]
        assert sources[0]["serviceAccountToken"]["audience"] == (
            "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status"
        )
        assert sources[1]["configMap"]["name"] == "tj-tls-config"
    # a changed CA replaces the ConfigMap's data; the same one changes nothing
    snap = snapshot(job, RUNTIME, {"restarts": 0})
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snap, ca_map(job, "old")], RUNTIME)
    assert [c["data"] for c in p.update_children if c["metadata"]["name"] == "tj-tls-config"] == [
        {"ca.crt": INJECTION.ca_pem}
    ]
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snap, ca_map(job)], RUNTIME)
    assert not any(c["metadata"]["name"] == "tj-tls-config" for c in [*p.create_children, *p.update_children])


def test_opted_out_gets_nothing() -> None:
    job = trainjob(deadline=None, **{ts.ANNOTATION_REPORTING: "disabled"})
    p = plan(job, [], [], RUNTIME)
    assert [c["metadata"]["name"] for c in p.create_children] == ["tj-runtime-snapshot"]
    assert all(ts.ENV_URL not in json.dumps(new) for new in p.create_pods)


def test_quiet_past_the_deadline_restarts_the_gang_counted_then_fails() -> None:
    rt = runtime(max_restarts=1)
    pods = [pod("tj-node-0-0"), pod("tj-node-0-1")]
    job = trainjob(reported=NOW - timedelta(seconds=59))
    snap = snapshot(job, rt, {"restarts": 0})
    p = plan(job, pods, [snap, ca_map(job)], rt)
    assert p.delete_pods == [] and p.requeue_at == NOW + timedelta(seconds=1)  # the exact deadline
    p = plan(job, pods, [snap, ca_map(job)], rt, now=NOW + timedelta(seconds=1))
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]
    [event] = [e for e in p.events if e.reason == "ProgressDeadlineExceeded"]
    assert "no progress for 60s" in event.message and "at 30%" in event.message
    assert "restart 1 of maxRestarts 1" in event.message
    [update] = [c for c in p.update_children if c["metadata"]["name"] == "tj-runtime-snapshot"]
    state = json.loads(update["data"]["state"])
    assert state == {
        "restarts": 1,
        "countedRestarts": 1,
        "failures": {},
        "restartedAt": stamp(NOW + timedelta(seconds=1)),
    }
    assert p.status is None or not p.status.get("conditions")  # no Stalled condition on a TrainJob
    # attempt 1: the report is older than the restart — never stalled, however long
    later = NOW + timedelta(hours=1)
    snap = snapshot(job, rt, state)
    new_pods = [pod("tj-node-0-0", attempt=1), pod("tj-node-0-1", attempt=1)]
    p = plan(job, new_pods, [snap, ca_map(job)], rt, now=later)
    assert p.delete_pods == [] and not p.events
    # it reports in attempt 1, then goes quiet: maxRestarts is used up → Failed
    job = trainjob(reported=later)
    p = plan(job, new_pods, [snap, ca_map(job)], rt, now=later + timedelta(seconds=60))
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ProgressDeadlineExceeded" and "at 30%" in failed["message"]
    assert sorted(p.delete_pods) == ["tj-node-0-0", "tj-node-0-1"]


def test_without_a_failure_policy_a_stall_fails_at_once() -> None:
    job = trainjob(reported=NOW - timedelta(seconds=61))
    snap = snapshot(job, RUNTIME, {"restarts": 0})
    p = plan(job, [pod("tj-node-0-0"), pod("tj-node-0-1")], [snap, ca_map(job)], RUNTIME)
    assert (
        next(c for c in p.status["conditions"] if c["type"] == "Failed")["reason"]
        == "ProgressDeadlineExceeded"
    )


def check(job: Obj, record: Obj, pods: list[Obj], now: datetime) -> stall.Verdict:
    """The stall rule as the per-group active part applies it to a TrainJob: its deadline from
    its shape's run policy (the annotation), its current attempt's pods, the run's record."""
    deadline = run_policy_of(job, {}).progress_deadline_seconds
    running = any(p["status"]["phase"] == "Running" for p in pods)
    return stall.check_attempt(
        job.get("status") or {}, deadline, record.get(RESTARTED_AT), running, now, "TrainJob tj"
    )


def test_never_stalled_without_deadline_report_running_pod_or_report_since_resume() -> None:
    old = NOW - timedelta(hours=1)
    running = [pod("tj-node-0-0"), pod("tj-node-0-1")]
    assert not check(trainjob(deadline=None, reported=old), {}, running, NOW).stalled
    assert not check(trainjob(reported=None), {}, running, NOW).stalled
    pending = [pod("tj-node-0-0", phase="Pending")]
    assert not check(trainjob(reported=old), {}, pending, NOW).stalled
    assert check(trainjob(reported=old), {}, running, NOW).stalled
    resumed = trainjob(reported=old)
    resumed["status"]["conditions"] = [
        {
            "type": "Suspended",
            "status": "False",
            "reason": "Resumed",
            "lastTransitionTime": stamp(old + timedelta(seconds=1)),
        }
    ]
    assert not check(resumed, {}, running, NOW).stalled
    assert not check(
        trainjob(reported=old), {RESTARTED_AT: stamp(old + timedelta(seconds=1))}, running, NOW
    ).stalled
