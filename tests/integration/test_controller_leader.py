"""Two operator replicas with leader election on a Lease in devcluster: only the leader writes;
when it stops, the standby takes over and finishes the work."""

from __future__ import annotations

import argparse
import asyncio
import time

from kubetrain.commands._flags import add_common_flags, add_controller_flags
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import LEASES
from kubetrain.kube.transport import USER_AGENT
from kubetrain.operator.runtime import ControllerRuntime

from .controller_support import Harness, eventually, job_manifest

WRITE_VERBS = ("create", "update", "patch", "delete")


def runtime_args(kubeconfig: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_common_flags(parser)
    add_controller_flags(parser)
    return parser.parse_args(
        [
            "--kubeconfig",
            kubeconfig,
            "--leader-elect",
            "--leader-election-namespace",
            "kube-system",
            "--leader-election-id",
            "kubetrain-test-leader",
            "--workers",
            "2",
        ]
    )


def replica(args: argparse.Namespace, identity: str) -> ControllerRuntime:
    return ControllerRuntime(
        args, identity=identity, lease_duration=4.0, renew_deadline=3.0, retry_period=0.2
    )


def writes_by(h: Harness, identity: str) -> int:
    """API writes of one replica, leases excluded (standbys keep trying to take the Lease)."""
    agent = f"{USER_AGENT} ({identity})"
    return sum(
        1
        for r in h.requests.records
        if r.user_agent.startswith(agent) and r.verb in WRITE_VERBS and r.resource != "leases"
    )


async def test_only_the_leader_writes_and_the_standby_takes_over() -> None:
    stack = DevStack(DevStackOptions(controller=False))
    await stack.start()
    h = await Harness.open(stack)
    args = runtime_args(stack.cluster.kubeconfig_path)
    a, b = replica(args, "replica-a"), replica(args, "replica-b")
    try:
        await a.start()
        await eventually(lambda: a.elector is not None and a.elector.is_leader, what="replica-a leads")
        await eventually(lambda: a.controller is not None and a.controller.synced, what="replica-a synced")
        await b.start()
        await eventually(
            lambda: b.elector is not None and b.elector.leader == "replica-a", what="b sees a lead"
        )
        assert b.ready() and a.ready()  # a standby is ready (it would serve webhooks)

        ns = await h.namespace("leader")
        await h.create_job(job_manifest("PyTorchJob", "one", {"Master": 1, "Worker": 2}), ns)
        await h.wait_pods(ns, "one", 3)
        await h.wait_condition("PyTorchJob", ns, "one", "Running")
        assert writes_by(h, "replica-a") >= 4  # 3 pods + Service + status
        assert writes_by(h, "replica-b") == 0
        assert b.elector is not None and not b.elector.is_leader

        # The leader stops (releasing the Lease): the standby takes over within a retry period.
        await a.stop()
        a_writes = writes_by(h, "replica-a")
        await eventually(lambda: b.elector is not None and b.elector.is_leader, what="replica-b takes over")
        lease = await h.kube.get(LEASES, "kube-system", "kubetrain-test-leader")
        assert lease["spec"]["holderIdentity"] == "replica-b"
        assert lease["spec"]["leaseTransitions"] >= 1

        # The new leader carries on: the running job finishes, a new job gets its pods.
        await h.sim.finish(ns, "one-master-0")
        await h.wait_condition("PyTorchJob", ns, "one", "Succeeded")
        await h.create_job(job_manifest("TFJob", "two", {"Worker": 2}), ns)
        await h.wait_pods(ns, "two", 2)
        await h.wait_condition("TFJob", ns, "two", "Running")
        assert writes_by(h, "replica-b") >= 4
        await asyncio.sleep(0.2)
        assert writes_by(h, "replica-a") == a_writes  # the stopped replica wrote nothing more
        # Nothing was created twice across the hand-over.
        assert h.requests.count(verb="create", resource="pods", namespace=ns) == 5
    finally:
        await b.stop()
        await a.stop()
        await h.close()
        await stack.stop()


async def test_a_crashed_leader_is_replaced_once_its_lease_expires() -> None:
    """A leader that dies without releasing the Lease (no graceful stop: the Lease keeps its
    identity) is replaced only after the lease duration, then the standby finishes its job."""
    stack = DevStack(DevStackOptions(controller=False))
    await stack.start()
    h = await Harness.open(stack)
    args = runtime_args(stack.cluster.kubeconfig_path)
    durations = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
    a = ControllerRuntime(args, identity="crash-a", **durations)
    b = ControllerRuntime(args, identity="crash-b", **durations)
    try:
        await a.start()
        await eventually(lambda: a.elector is not None and a.elector.is_leader, what="crash-a leads")
        await b.start()
        await eventually(
            lambda: b.elector is not None and b.elector.leader == "crash-a", what="b sees a lead"
        )
        ns = await h.namespace("crash")
        await h.create_job(job_manifest("PyTorchJob", "job", {"Master": 1, "Worker": 1}), ns)
        await h.wait_pods(ns, "job", 2)
        await h.wait_condition("PyTorchJob", ns, "job", "Running")

        # The crash: replica-a's tasks end without the graceful release of the Lease.
        assert a.elector is not None
        a.elector.release_on_stop = False
        await a.stop()
        crashed = time.monotonic()
        a_writes = writes_by(h, "crash-a")
        lease = await h.kube.get(LEASES, "kube-system", "kubetrain-test-leader")
        assert lease["spec"]["holderIdentity"] == "crash-a"  # still held: nothing released it
        assert b.elector is not None and not b.elector.is_leader

        await eventually(lambda: b.elector is not None and b.elector.is_leader, what="crash-b takes over")
        waited = time.monotonic() - crashed
        # Not before the lease expired (a's last renewal was at most one retry period before the
        # crash), unlike a released Lease, which is taken at the standby's next retry.
        assert waited >= durations["lease_duration"] - durations["retry_period"] - 0.1, waited
        lease = await h.kube.get(LEASES, "kube-system", "kubetrain-test-leader")
        assert lease["spec"]["holderIdentity"] == "crash-b"
        assert lease["spec"]["leaseTransitions"] >= 1

        # The new leader finishes the job the crashed one started, creating nothing twice.
        await h.finish_all(ns, "job")
        await h.wait_condition("PyTorchJob", ns, "job", "Succeeded")
        assert writes_by(h, "crash-b") >= 1
        assert writes_by(h, "crash-a") == a_writes
        assert h.requests.count(verb="create", resource="pods", namespace=ns) == 2
    finally:
        await b.stop()
        await a.stop()
        await h.close()
        await stack.stop()
