"""kubeflow.org/v2beta1 MPIJobs through the real webhooks and controller against devcluster,
held to the cases of mpi-operator's integration tests (kubeflow/mpi-operator v0.8,
test/integration/mpi_job_controller_test.go), translated to what kubetrain makes (the Launcher
is the pod `<job>-launcher-0`, not a batch Job): Kueue's suspend / change the templates /
resume cycle reaches the Launcher (mpi-operator issue #687), a job managed by MultiKueue is left
alone, the Launcher is found by mpi-operator's labels, a `Never` Launcher is retried up to
backoffLimit as mpi-operator's launcher Job (mpi-operator issue #651), and a running job's
PodGroup follows its schedulingPolicy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import (
    CONFIG_MAPS,
    PODS,
    SCHEDULER_PLUGINS_PODGROUPS,
    SECRETS,
    SERVICES,
    VOLCANO_PODGROUPS,
    ResourceRef,
)

from .controller_support import KUBEFLOW_API_GROUPS, Harness, eventually, is_true, running_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
MPIJOBS = ResourceRef("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)


STACK_OPTIONS = {"api_groups": KUBEFLOW_API_GROUPS}


def mpijob(name: str, run_policy: Obj) -> Obj:
    """The MPIJob of mpi-operator's integration tests: slotsPerWorker 1, cleanPodPolicy Running,
    a Launcher and 2 Workers running `mpi-image`."""

    def template() -> Obj:
        return {"spec": {"containers": [{"name": "main", "image": "mpi-image"}]}}

    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", **run_policy},
            "mpiReplicaSpecs": {
                "Launcher": {"template": template()},
                "Worker": {"replicas": 2, "template": template()},
            },
        },
    }


async def get(h: Harness, ns: str, name: str) -> Obj:
    job = await h.get(MPIJOBS, ns, name)
    assert job is not None
    return job


async def update(h: Harness, ns: str, name: str, change: Callable[[Obj], None]) -> Obj:
    """The MPIJob with `change` applied to its latest version (as Kueue's client does)."""
    return await h.change(MPIJOBS, ns, name, change)


async def wait_status(h: Harness, ns: str, name: str, what: str, pred: Callable[[Obj], bool]) -> Obj:
    async def check() -> Obj | None:
        job = await h.get(MPIJOBS, ns, name)
        return job if job is not None and pred(job) else None

    result: Obj = await eventually(check, what=f"MPIJob {name}: {what}")
    return result


def condition_status(job: Obj, ctype: str) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return str(c["status"])
    return None


async def live_pods(h: Harness, ns: str, name: str) -> list[Obj]:
    return [p for p in await h.pods(ns, name) if not p["metadata"].get("deletionTimestamp")]


async def test_mpijob_resuming_and_suspending(env: tuple[DevStack, Harness]) -> None:
    """TestMPIJobResumingAndSuspending: created suspended (Created, Suspended, no pods, no
    startTime); Kueue's scheduling directives written into the Launcher template while
    suspended reach the Launcher on resume (mpi-operator issue #687); suspending the running job
    deletes its pods (Suspended, Running not True); changing the template and resuming in one
    update gives a Launcher with the new directives."""
    _, h = env
    ns = await h.namespace("mpisus")
    await h.kube.create(MPIJOBS, mpijob("job", {"suspend": True}), namespace=ns)
    job = await wait_status(
        h, ns, "job", "Created and Suspended", lambda j: is_true(j, "Created") and is_true(j, "Suspended")
    )
    assert "startTime" not in job["status"]
    assert await h.pods(ns, "job") == []

    toleration = {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}

    def kueue_injects(j: Obj) -> None:
        launcher = j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
        launcher["metadata"] = {
            "labels": {"foo": "bar"},
            "annotations": {"kueue.x-k8s.io/workload": "my-workload"},
        }
        launcher["spec"]["nodeSelector"] = {"example.com/accelerator": "example-model"}
        launcher["spec"]["tolerations"] = [toleration]
        launcher["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]

    await update(h, ns, "job", kueue_injects)
    await update(h, ns, "job", lambda j: j["spec"]["runPolicy"].update(suspend=False))
    pods = await h.wait_pod_names(ns, "job", ["job-launcher-0", "job-worker-0", "job-worker-1"])
    launcher = pods[0]
    assert launcher["metadata"]["labels"]["foo"] == "bar"
    assert launcher["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "my-workload"
    assert launcher["spec"]["nodeSelector"] == {"example.com/accelerator": "example-model"}
    assert toleration in launcher["spec"]["tolerations"]
    assert launcher["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    resumed = await wait_status(
        h, ns, "job", "Suspended=False", lambda j: condition_status(j, "Suspended") == "False"
    )
    assert resumed["status"].get("startTime")
    for suffix in ("config", "ssh"):
        ref = CONFIG_MAPS if suffix == "config" else SECRETS
        assert await h.get(ref, ns, f"job-{suffix}") is not None

    # Suspend the running job: its pods go, the job says Suspended and not Running.
    await update(h, ns, "job", lambda j: j["spec"]["runPolicy"].update(suspend=True))
    await wait_status(
        h,
        ns,
        "job",
        "Suspended, not Running",
        lambda j: is_true(j, "Suspended") and not is_true(j, "Running"),
    )

    async def no_pods() -> bool | None:
        return True if not await live_pods(h, ns, "job") else None

    await eventually(no_pods, what="the suspended job's pods deleted")

    # Change the directives and resume in one update: the new Launcher has the new ones.
    def readmit(j: Obj) -> None:
        launcher = j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
        launcher["metadata"]["labels"]["foo"] = "baz"
        launcher["spec"]["nodeSelector"]["example.com/accelerator"] = "example-model-v2"
        j["spec"]["runPolicy"]["suspend"] = False

    await update(h, ns, "job", readmit)

    async def new_launcher() -> Obj | None:
        for pod in await live_pods(h, ns, "job"):
            if pod["metadata"]["name"] == "job-launcher-0" and pod["metadata"]["labels"].get("foo") == "baz":
                return pod
        return None

    relaunched = await eventually(new_launcher, what="a Launcher with the changed template")
    assert relaunched["spec"]["nodeSelector"] == {"example.com/accelerator": "example-model-v2"}
    # the Launcher keeps its scheduling gate (Kueue removes it once it placed the pod): it stays
    # Pending, unscheduled, while the Workers run
    await h.wait_pod_names(ns, "job", ["job-launcher-0", "job-worker-0", "job-worker-1"])
    launcher = await h.pod(ns, "job-launcher-0")
    assert launcher is not None and not launcher["spec"].get("nodeName")


async def test_mpijob_managed_externally(env: tuple[DevStack, Harness]) -> None:
    """TestMPIJobManagedExternally: `managedBy: kueue.x-k8s.io/multikueue` — no status, no
    conditions, no pods, Service, ConfigMap or Secret, however long we look (a job created after
    it with `managedBy: kubeflow.org/mpi-operator`, mpi-operator's own name, went through
    meanwhile)."""
    _, h = env
    ns = await h.namespace("mpimk")
    await h.kube.create(MPIJOBS, mpijob("job", {"managedBy": "kueue.x-k8s.io/multikueue"}), namespace=ns)
    # mpi-operator's own name is kubetrain's: that job runs.
    await h.kube.create(MPIJOBS, mpijob("ours", {"managedBy": "kubeflow.org/mpi-operator"}), namespace=ns)
    await h.wait_pods(ns, "ours", 3)
    await wait_status(h, ns, "ours", "Created", lambda j: is_true(j, "Created"))
    theirs = await get(h, ns, "job")
    assert not theirs.get("status")
    assert await h.pods(ns, "job") == []
    assert await h.get(SERVICES, ns, "job") is None
    assert await h.get(CONFIG_MAPS, ns, "job-config") is None
    assert await h.get(SECRETS, ns, "job-ssh") is None


async def test_the_launcher_is_found_by_mpi_operators_labels(env: tuple[DevStack, Harness]) -> None:
    """TestMPIJobSuccess's getLauncherJobForMPIJob / getPodsForJob, and mpi-operator's README:
    `-l training.kubeflow.org/job-name=<job>,training.kubeflow.org/job-role=launcher` selects the
    Launcher, `…,job-role=worker` the Workers; the job runs to Succeeded with its Launcher and
    cleanPodPolicy Running deletes the Workers."""
    _, h = env
    ns = await h.namespace("mpilbl")
    await h.kube.create(MPIJOBS, mpijob("job", {}), namespace=ns)
    await h.wait_pods(ns, "job", 3)

    async def names(role: str) -> list[str]:
        selector = f"training.kubeflow.org/job-name=job,training.kubeflow.org/job-role={role}"
        page = await h.kube.list(PODS, ns, label_selector=selector)
        return sorted(p["metadata"]["name"] for p in page["items"])

    assert await names("launcher") == ["job-launcher-0"]
    assert await names("worker") == ["job-worker-0", "job-worker-1"]
    await wait_status(h, ns, "job", "Running", lambda j: is_true(j, "Running"))
    await h.sim.finish(ns, "job-launcher-0")
    done = await wait_status(h, ns, "job", "Succeeded", lambda j: is_true(j, "Succeeded"))
    assert done["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1
    await h.wait_pod_names(ns, "job", ["job-launcher-0"])


async def test_a_never_launcher_is_retried_up_to_the_backoff_limit(env: tuple[DevStack, Harness]) -> None:
    """mpi-operator issue #651: mpi-operator's launcher Job gives a Launcher that failed under
    `restartPolicy: Never` a new pod until `backoffLimit`; the failure past it fails the job."""
    _, h = env
    ns = await h.namespace("mpiretry")
    manifest = mpijob("job", {"backoffLimit": 1})
    manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    await h.kube.create(MPIJOBS, manifest, namespace=ns)
    await h.wait_pods(ns, "job", 3)
    await wait_status(h, ns, "job", "Running", lambda j: is_true(j, "Running"))
    first = await h.running_pod(ns, "job-launcher-0")
    assert first is not None and first["spec"]["restartPolicy"] == "Never"

    await h.sim.finish(ns, "job-launcher-0", exit_code=1)
    await h.wait_recreated(ns, "job-launcher-0", first["metadata"]["uid"])
    job = await wait_status(h, ns, "job", "1 Launcher restart", lambda j: is_true(j, "Running"))
    assert job["status"]["replicaStatuses"]["Launcher"]["restarts"] == 1
    assert not is_true(job, "Failed")
    event = await h.wait_event(ns, "job", "JobRestarting")
    assert "as mpi-operator's launcher Job" in event["message"]

    await h.sim.finish(ns, "job-launcher-0", exit_code=1)
    failed = await wait_status(h, ns, "job", "Failed", lambda j: is_true(j, "Failed"))
    cond = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "BackoffLimitExceeded"
    assert "backoffLimit of 1" in cond["message"]


@pytest.mark.parametrize(
    ("gang", "ref", "policy", "change", "want"),
    [
        # TestMPIJobWithSchedulerPlugins: scheduleTimeoutSeconds 900 → 10.
        (
            "scheduler-plugins",
            SCHEDULER_PLUGINS_PODGROUPS,
            {"scheduleTimeoutSeconds": 900},
            {"scheduleTimeoutSeconds": 10},
            {"scheduleTimeoutSeconds": 10},
        ),
        # TestMPIJobWithVolcanoScheduler: minAvailable → 2 (its queue change: only while
        # suspended in kubetrain, docs §3).
        ("volcano", VOLCANO_PODGROUPS, {"queue": "default"}, {"minAvailable": 2}, {"minMember": 2}),
    ],
)
async def test_the_pod_group_follows_the_scheduling_policy(
    gang: str, ref: ResourceRef, policy: Obj, change: Obj, want: Obj
) -> None:
    """TestMPIJobWithSchedulerPlugins / TestMPIJobWithVolcanoScheduler: the PodGroup of a
    running MPIJob is updated when its schedulingPolicy changes."""
    async with running_stack(gang_scheduler=gang, api_groups=("kubetrain.io", "kubeflow.org")) as (_, h):
        ns = await h.namespace("mpipg")
        await h.kube.create(MPIJOBS, mpijob("job", {"schedulingPolicy": policy}), namespace=ns)
        group = await eventually(lambda: h.get(ref, ns, "job"), what=f"{gang} PodGroup job")
        assert group["spec"]["minMember"] == 3
        await h.wait_pods(ns, "job", 3)
        await update(h, ns, "job", lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].update(change))

        async def updated() -> Obj | None:
            current = await h.get(ref, ns, "job")
            ok = current is not None and all(current["spec"].get(k) == v for k, v in want.items())
            return current if ok else None

        await eventually(updated, what=f"{gang} PodGroup with {want}")
