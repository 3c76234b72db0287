"""Taking over running Kubeflow jobs (docs/operations.md, "Taking over running Kubeflow jobs"):
PyTorchJobs whose pods and Services Kubeflow's training operator created — its names, its
`training.kubeflow.org/*` labels, its controller ownerReference — are running when kubetrain
starts serving kubeflow.org. kubetrain adopts them: no pod is created, deleted or restarted, the
restarts the kubelet already counted are the job's, the pods get every label a pod kubetrain
creates for the job gets, and the job then finishes under kubetrain
(cleanPodPolicy deletes the adopted workers). A job another controller manages is left alone."""

from __future__ import annotations

from typing import Any

import jobs

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import PODS, SERVICES, job_resources_in

from .controller_support import Harness, eventually, is_true
from .takeover_support import controller_owner, started_by_another_operator

Obj = dict[str, Any]
PYTORCHJOBS = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6"
TENANCY = '{"tenant": "vision"}'  # kubetrain labels every pod of the job with it


def kubeflow_job(name: str, workers: int, managed_by: str | None = None) -> Obj:
    managed = {"managedBy": managed_by} if managed_by is not None else {}
    run_policy = {"cleanPodPolicy": "Running", **managed}
    job = jobs.job(
        "PyTorchJob",
        name,
        {"Master": 1, "Worker": workers},
        namespace=None,
        image=IMAGE,
        restart_policy="OnFailure",
        container_extra={"command": ["python3", "/opt/mnist.py"]},
        run_policy=run_policy,
        api_version="kubeflow.org/v1",
    )
    job["metadata"]["annotations"] = {"kubedl.io/tenancy": TENANCY}
    return job


def kubeflow_labels(job: str, rtype: str, index: int) -> dict[str, str]:
    """What training-operator v1.9 labels a pod and its Service with (GenLabels, SetPodLabels)."""
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }
    if rtype == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    return labels


def kubeflow_pod(job: Obj, rtype: str, index: int) -> Obj:
    """A pod as Kubeflow's operator makes it: `<job>-<type>-<index>`, its labels and env."""
    name = job["metadata"]["name"]
    env = [
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
        {"name": "WORLD_SIZE", "value": "3"},
        {"name": "RANK", "value": str(index if rtype == "master" else index + 1)},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{rtype}-{index}",
            "labels": kubeflow_labels(name, rtype, index),
            "ownerReferences": [controller_owner(job)],
        },
        "spec": {
            "restartPolicy": "OnFailure",
            "containers": [
                {
                    "name": "pytorch",
                    "image": IMAGE,
                    "env": env,
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                }
            ],
        },
    }


def kubeflow_service(job: Obj, rtype: str, index: int) -> Obj:
    """Kubeflow's per-pod headless Service of the same name."""
    name = job["metadata"]["name"]
    labels = kubeflow_labels(name, rtype, index)
    labels.pop("training.kubeflow.org/job-role", None)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{name}-{rtype}-{index}",
            "labels": labels,
            "ownerReferences": [controller_owner(job)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": labels,
            "ports": [{"name": "pytorchjob-port", "port": 23456, "targetPort": 23456}],
        },
    }


async def kubeflow_started(h: Harness, ns: str, name: str, managed_by: str | None = None) -> dict[str, str]:
    """A job as Kubeflow's operator left it running: pods Running, Services, a status. Returns
    each pod's uid."""

    def child(job: Obj, n: int, rtype: str, i: int) -> tuple[Obj, Obj]:
        return kubeflow_pod(job, rtype, i), kubeflow_service(job, rtype, i)

    job = kubeflow_job(name, 2, managed_by)
    reasons = ("PyTorchJobCreated", "PyTorchJobRunning")
    return await started_by_another_operator(h, PYTORCHJOBS, ns, job, child, reasons)


async def pods_of(h: Harness, ns: str, name: str) -> list[Obj]:
    page = await h.kube.list(PODS, ns, label_selector=f"training.kubeflow.org/job-name={name}")
    return list(page["items"])


async def test_running_kubeflow_jobs_are_adopted_with_zero_new_pods() -> None:
    stack = DevStack(DevStackOptions(api_groups=("kubeflow.org",), controller=False))
    await stack.start()
    h = await Harness.open(stack)
    try:
        ns = await h.namespace("takeover")
        uids = await kubeflow_started(h, ns, "ddp")
        # The kubelet restarted worker 1's container twice while Kubeflow's operator ran it.
        for _ in range(2):
            await h.sim.restart_container(ns, "ddp-worker-1")
        await h.sim.wait_for(
            ns,
            "ddp-worker-1",
            lambda p: (
                p is not None
                and p["status"].get("phase") == "Running"
                and p["status"]["containerStatuses"][0]["restartCount"] == 2
            ),
            30,
        )
        # Another controller's job (Kueue's MultiKueue): its pods are not kubetrain's to adopt.
        foreign_uids = await kubeflow_started(h, ns, "remote", managed_by="kueue.x-k8s.io/multikueue")

        await stack.start_controller()

        async def adopted_and_counted() -> Obj | None:
            job = await h.get(PYTORCHJOBS, ns, "ddp")
            worker = ((job or {}).get("status") or {}).get("replicaStatuses", {}).get("Worker", {})
            counted = worker.get("restarts") == 2 and worker.get("active") == 2
            return job if counted and is_true(job, "Running") else None

        job = await eventually(
            adopted_and_counted, what="ddp's status: Running, 2 active workers, 2 restarts"
        )
        pods = await pods_of(h, ns, "ddp")
        # The same pods (uids), now labelled as kubetrain's; none created or deleted.
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == uids
        for pod in pods:
            labels = pod["metadata"]["labels"]
            rtype, index = (
                labels["training.kubeflow.org/replica-type"],
                labels["training.kubeflow.org/replica-index"],
            )
            assert (
                labels["kubetrain.io/job-name"] == "ddp" and labels["kubetrain.io/job-kind"] == "PyTorchJob"
            )
            assert (labels["kubetrain.io/replica-type"], labels["kubetrain.io/replica-index"]) == (
                rtype,
                index,
            )
            assert (labels.get("kubetrain.io/job-role") == "master") == (rtype == "master")
            assert labels["tenancy.kubetrain.io/tenant"] == "vision"
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/") == 0
        assert h.requests.count(verb="delete", resource="pods", user_agent="kubetrain/") == 0
        events = await h.events(ns, "ddp")
        (adopted,) = [e for e in events if e["reason"] == "Adopted"]
        assert "3 pods and 3 services" in adopted["message"]

        # The foreign job's pods keep Kubeflow's labels only and its status is not written.
        for pod in await pods_of(h, ns, "remote"):
            assert "kubetrain.io/job-name" not in pod["metadata"]["labels"]
            assert foreign_uids[pod["metadata"]["name"]] == pod["metadata"]["uid"]
        remote = await h.get(PYTORCHJOBS, ns, "remote")
        assert remote is not None and "restarts" not in remote["status"]["replicaStatuses"]["Worker"]

        # The adopted job keeps Kubeflow's addresses (per-pod service mode): a worker deleted by
        # hand is recreated with the bare master name, which the adopted per-pod Service serves
        # (Kubeflow's pods have no hostname/subdomain under a job Service), and no job Service
        # is made.
        assert job["metadata"]["annotations"]["kubetrain.io/adopted-from"] == "kubeflow.org/training-operator"
        old_uid = uids["ddp-worker-0"]
        adopted_labels = next(p for p in pods if p["metadata"]["name"] == "ddp-worker-0")["metadata"][
            "labels"
        ]
        await h.kube.delete(PODS, ns, "ddp-worker-0")
        recreated = await h.sim.wait_for(
            ns, "ddp-worker-0", lambda p: p is not None and p["metadata"]["uid"] != old_uid, 30
        )
        env = {e["name"]: e.get("value") for e in recreated["spec"]["containers"][0]["env"]}
        assert env["MASTER_ADDR"] == "ddp-master-0"
        # The pod kubetrain created has exactly the labels the adopted one got.
        assert recreated["metadata"]["labels"] == adopted_labels
        services = (await h.kube.list(SERVICES, ns, label_selector="kubetrain.io/job-name=ddp"))["items"]
        assert sorted(s["metadata"]["name"] for s in services) == [
            "ddp-master-0",
            "ddp-worker-0",
            "ddp-worker-1",
        ]
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/") == 1

        # kubetrain runs the adopted job to the end: the master succeeds, cleanPodPolicy Running
        # deletes the running workers and the adopted per-pod Services.
        await h.sim.finish(ns, "ddp-master-0")

        async def succeeded() -> Obj | None:
            obj = await h.get(PYTORCHJOBS, ns, "ddp")
            return obj if is_true(obj, "Succeeded") else None

        await eventually(succeeded, what="ddp Succeeded")
        await eventually(
            lambda: _names(h, ns, "ddp", ["ddp-master-0"]), what="the workers deleted by cleanPodPolicy"
        )
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/") == 1
    finally:
        await h.close()
        await stack.stop()


async def _names(h: Harness, ns: str, name: str, want: list[str]) -> bool:
    pods = await pods_of(h, ns, name)
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")) == want
