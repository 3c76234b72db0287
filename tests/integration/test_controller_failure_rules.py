"""Failure rules and host network mode through the webhooks and the real controller against
devcluster (docs/behaviour.md §4, §6): a RestartJob rule restarts every pod together as one new
attempt and the job then succeeds; FailJob fails at once naming the rule; an evicted pod is
recreated without counting against backoffLimit; host-network pods get their own ports."""

from __future__ import annotations

import json

import pytest
from jobs import exit_code_rule

from kubetrain.dev.stack import DevStack
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import VOLCANO_PODGROUPS

from .controller_support import (
    Harness,
    condition,
    eventually,
    gang_stack,
    is_true,
    job_manifest,
    pod_env,
    replica_status,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_restart_job_restarts_every_pod_once_then_succeeds(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("gang-restart")
    manifest = job_manifest(
        "PyTorchJob",
        "rj",
        {"Master": 1, "Worker": 2},
        restart_policy="ExitCode",
        run_policy={"backoffLimit": 2, "podFailurePolicy": {"rules": [exit_code_rule("RestartJob", 42)]}},
    )
    history = await h.history("PyTorchJob", ns, "rj")
    await h.create_job(manifest, ns)
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await h.wait_pods(ns, "rj", 3)}
    await h.wait_condition("PyTorchJob", ns, "rj", "Running")

    await h.sim.finish(ns, "rj-worker-1", exit_code=42)
    job = await history.wait(lambda j: is_true(j, "Restarting"), "Restarting=True")
    restarting = condition(job, "Restarting")
    assert restarting is not None and restarting["reason"] == "RestartJob"
    assert "rj-worker-1" in restarting["message"] and "42" in restarting["message"]
    assert job["status"]["jobRestarts"] == 1
    for name, uid in first.items():
        await h.wait_recreated(ns, name, uid)
    pods = await h.wait_pods(ns, "rj", 3)
    assert {p["metadata"]["labels"].get("kubetrain.io/attempt") for p in pods} == {"1"}
    job = await h.wait_condition("PyTorchJob", ns, "rj", "Running")
    assert job["status"]["jobRestarts"] == 1 and not is_true(job, "Restarting")
    event = await h.wait_event(ns, "rj", "RestartJob")
    assert event["type"] == "Warning" and "rj-worker-1" in event["message"]
    assert (await h.event_reasons(ns, "rj")).count("RestartJob") == 1

    await h.sim.finish(ns, "rj-master-0")
    job = await h.wait_condition("PyTorchJob", ns, "rj", "Succeeded")
    assert sum(replica_status(job, t).get("restarts", 0) for t in ("Master", "Worker")) == 1
    assert job["status"]["jobRestarts"] == 1
    await history.stop()


async def test_fail_job_rule_fails_at_once(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("failjob")
    manifest = job_manifest(
        "TFJob",
        "fj",
        {"Worker": 2},
        restart_policy="ExitCode",
        run_policy={"backoffLimit": 5, "podFailurePolicy": {"rules": [exit_code_rule("FailJob", 137)]}},
    )
    await h.create_job(manifest, ns)
    await h.wait_pods(ns, "fj", 2)
    await h.sim.finish(ns, "fj-worker-0", exit_code=137)  # retryable under ExitCode, fatal by rule
    job = await h.wait_condition("TFJob", ns, "fj", "Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "PodFailurePolicy"
    assert "FailJob rule at index 0" in cond["message"] and "137" in cond["message"]


async def test_eviction_is_recreated_without_counting(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("disrupt")
    manifest = job_manifest("PyTorchJob", "ev", {"Master": 1, "Worker": 1}, run_policy={"backoffLimit": 0})
    await h.create_job(manifest, ns)
    pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "ev", 2)}
    await h.wait_condition("PyTorchJob", ns, "ev", "Running")
    await h.sim.evict(ns, "ev-worker-0")
    await h.wait_recreated(ns, "ev-worker-0", pods["ev-worker-0"]["metadata"]["uid"])
    job = await h.wait_condition("PyTorchJob", ns, "ev", "Running")
    assert not is_true(job, "Failed")
    assert replica_status(job, "Worker").get("restarts", 0) == 0


async def test_invalid_rules_are_refused_with_every_error(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("badrules")
    bad = {
        "rules": [{"action": "Ignore"}, {"action": "Count", "onExitCodes": {"operator": "In", "values": [0]}}]
    }
    manifest = job_manifest("TFJob", "bad", {"Worker": 1}, run_policy={"podFailurePolicy": bad})
    with pytest.raises(ApiError) as info:
        await h.create_job(manifest, ns)
    message = str(info.value)
    assert "spec.runPolicy.podFailurePolicy.rules[0]" in message
    assert "spec.runPolicy.podFailurePolicy.rules[1].onExitCodes.values[0]" in message


async def test_host_network_pods_get_distinct_ports_and_matching_env(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("hostnet")
    manifest = job_manifest(
        "TFJob", "hn", {"PS": 1, "Worker": 2}, annotations={"kubetrain.io/network-mode": "host"}
    )
    await h.create_job(manifest, ns)
    pods = await h.wait_pods(ns, "hn", 3)
    ports: dict[str, int] = {}
    for pod in pods:
        assert pod["spec"]["hostNetwork"] is True and pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
        (port,) = pod["spec"]["containers"][0]["ports"]
        assert port["hostPort"] == port["containerPort"]
        ports[pod["metadata"]["name"]] = port["containerPort"]
    assert len(set(ports.values())) == 3
    for pod in pods:
        cluster = json.loads(pod_env(pod)["TF_CONFIG"])["cluster"]
        assert sorted(a for group in cluster.values() for a in group) == sorted(
            f"{name}.hn.{ns}.svc:{port}" for name, port in ports.items()
        )


async def test_restart_job_under_gang_scheduling_reuses_the_pod_group() -> None:
    async with gang_stack("volcano", True) as (_, h):
        ns = await h.namespace("gang")
        manifest = job_manifest(
            "PyTorchJob",
            "gr",
            {"Master": 1, "Worker": 2},
            restart_policy="ExitCode",
            run_policy={"podFailurePolicy": {"rules": [exit_code_rule("RestartJob", 42)]}},
        )
        await h.create_job(manifest, ns)
        group = await eventually(lambda: h.get(VOLCANO_PODGROUPS, ns, "gr"), what="Volcano PodGroup")
        await h.kube.patch_status(VOLCANO_PODGROUPS, ns, "gr", {"status": {"phase": "Running"}})
        first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await h.wait_pods(ns, "gr", 3)}
        await h.wait_condition("PyTorchJob", ns, "gr", "Running")
        await h.sim.finish(ns, "gr-worker-0", exit_code=42)
        for name, uid in first.items():
            await h.wait_recreated(ns, name, uid)
        for pod in await h.wait_pods(ns, "gr", 3):
            assert pod["metadata"]["labels"]["kubetrain.io/attempt"] == "1"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gr"
        same = await h.get(VOLCANO_PODGROUPS, ns, "gr")
        assert same is not None and same["metadata"]["uid"] == group["metadata"]["uid"]
        await h.sim.finish(ns, "gr-master-0")
        await h.wait_condition("PyTorchJob", ns, "gr", "Succeeded")
