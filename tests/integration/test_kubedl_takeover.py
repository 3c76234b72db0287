"""Taking over running KubeDL jobs (docs/operations.md, "Serving KubeDL's API"): a
training.kubedl.io PyTorchJob whose pods and Services KubeDL made — its names, labels, env and
controller ownerReference, built as KubeDL's pkg/job_controller and controllers/pytorch build
them — is running (one worker already finished) when kubetrain starts serving
training.kubedl.io. kubetrain adopts it: no pod is created or deleted, the status and the
kubelet's restarts carry on, the pods get every label a pod kubetrain creates for the job gets
(the job's `kubedl.io/tenancy` labels included), and a worker failing later is recreated with
the peer address KubeDL's pods use and the labels the adopted pod had. A job in KubeDL's host
network mode is not adopted: its pods are left alone, a Warning says why and what to do, and the
job waits (PodNameConflict) instead of racing them."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import PODS, SERVICES, TRAINING_POLICIES, job_resources_in

from .controller_support import Harness, eventually, is_true
from .takeover_support import controller_owner, started_by_another_operator

Obj = dict[str, Any]
PYTORCHJOBS = job_resources_in(["training.kubedl.io"])["PyTorchJob.training.kubedl.io"]
IMAGE = "kubedl/pytorch-dist-example"
PORT = 23456  # KubeDL's PyTorchJob default port (pytorchjob-port)
TENANCY = '{"tenant": "vision", "user": "ana"}'  # KubeDL's Tenancy (kubedl.io/tenancy)


def kubedl_job(name: str, workers: int, annotations: dict[str, str] | None = None) -> Obj:
    """A PyTorchJob in KubeDL's layout (its example pytorch_job_mnist_mpi.yaml's shape)."""

    def replica(n: int, policy: str) -> Obj:
        container = {
            "name": "pytorch",
            "image": IMAGE,
            "ports": [{"name": "pytorchjob-port", "containerPort": PORT}],
        }
        return {"replicas": n, "restartPolicy": policy, "template": {"spec": {"containers": [container]}}}

    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {
            "cleanPodPolicy": "Running",
            "pytorchReplicaSpecs": {
                "Master": replica(1, "ExitCode"),
                "Worker": replica(workers, "OnFailure"),
            },
        },
    }


def kubedl_labels(job: str, rtype: str, index: int) -> dict[str, str]:
    """JobController.GenLabels plus createNewPod's replica-type, replica-index (and job-role)."""
    labels = {
        "group-name": "training.kubedl.io",
        "job-name": job,
        "replica-type": rtype,
        "replica-index": str(index),
    }
    if rtype == "master":
        labels["job-role"] = "master"
    return labels


def kubedl_pod(job: Obj, rtype: str, index: int, workers: int, host_port: int | None = None) -> Obj:
    """A pod as KubeDL makes it (createNewPod, PytorchJobReconciler.SetClusterSpec): the name
    `<job>-<type>-<index>`, the replica's restartPolicy (setRestartPolicy: ExitCode's is Never),
    MASTER_ADDR the master's per-pod Service name; in host network mode hostNetwork and a random
    port in the container."""
    name = job["metadata"]["name"]
    port = host_port or PORT
    env = [
        {"name": "MASTER_PORT", "value": str(port)},
        {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
        {"name": "RANK", "value": str(index if rtype == "master" else index + 1)},
        {"name": "PYTHONUNBUFFERED", "value": "0"},
        {"name": "WORLD_SIZE", "value": str(1 + workers)},
    ]
    spec: Obj = {
        "restartPolicy": "Never" if rtype == "master" else "OnFailure",
        "containers": [
            {
                "name": "pytorch",
                "image": IMAGE,
                "env": env,
                "ports": [{"name": "pytorchjob-port", "containerPort": port}],
            }
        ],
    }
    if host_port is not None:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        spec["containers"][0]["ports"][0]["hostPort"] = host_port
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{rtype}-{index}",
            "labels": kubedl_labels(name, rtype, index),
            "ownerReferences": [controller_owner(job)],
        },
        "spec": spec,
    }


def kubedl_service(job: Obj, rtype: str, index: int) -> Obj:
    """CreateNewService: a headless Service of the pod's name selecting it by KubeDL's labels."""
    name = job["metadata"]["name"]
    labels = {
        "group-name": "training.kubedl.io",
        "job-name": name,
        "replica-type": rtype,
        "replica-index": str(index),
    }
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
            "ports": [{"name": "pytorchjob-port", "port": PORT, "targetPort": PORT}],
        },
    }


async def kubedl_started(
    h: Harness, ns: str, name: str, annotations: dict[str, str] | None = None, host: bool = False
) -> dict[str, str]:
    """A job as KubeDL left it running: pods Running, Services, KubeDL's status. Returns each
    pod's uid."""

    def child(job: Obj, n: int, rtype: str, i: int) -> tuple[Obj, Obj]:
        port = 30001 + 7919 * n if host else None  # setupHostNetwork: random in 30001-65535
        return kubedl_pod(job, rtype, i, 2, port), kubedl_service(job, rtype, i)

    job = kubedl_job(name, 2, annotations)
    return await started_by_another_operator(h, PYTORCHJOBS, ns, job, child, ("JobCreated", "JobRunning"))


async def tenant_quota_counts_the_adopted_job(h: Harness, stack: DevStack, ns: str) -> None:
    """A TrainingPolicy allowing tenant vision one unfinished job refuses a second one: the
    adopted job counts."""
    quota = {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TrainingPolicy",
        "metadata": {"name": "tenant-quota"},
        "spec": {
            "jobSelector": {
                "matchExpressions": [{"key": "tenancy.kubetrain.io/tenant", "operator": "Exists"}]
            },
            "limits": {"tenantQuota": {"maxJobs": 1}},
        },
    }
    await h.kube.create(TRAINING_POLICIES, quota)
    watcher = stack.policy_watcher
    assert watcher is not None

    def counted() -> bool:
        return len(watcher.index.policies()) == 1 and len(watcher.index.tenant_jobs.of_tenant("vision")) == 1

    await eventually(counted, what="the policy and the adopted job in the webhook's cache")
    with pytest.raises(ApiError) as refused:
        await h.kube.create(PYTORCHJOBS, kubedl_job("ddp-2", 1, {"kubedl.io/tenancy": TENANCY}), namespace=ns)
    assert refused.value.status == 403
    assert 'tenant "vision" would have 2 unfinished jobs (1 already), exceeds 1' in refused.value.message
    await h.kube.delete(TRAINING_POLICIES, None, "tenant-quota")


async def pods_of(h: Harness, ns: str, name: str) -> list[Obj]:
    page = await h.kube.list(PODS, ns, label_selector=f"group-name=training.kubedl.io,job-name={name}")
    return list(page["items"])


async def test_running_kubedl_jobs_are_adopted_and_host_network_ones_wait() -> None:
    # The jobs are stored as KubeDL stored them: without kubetrain's mutating webhook (no
    # tenancy labels on the job), which starts with kubetrain.
    stack = DevStack(DevStackOptions(api_groups=("training.kubedl.io",), controller=False, webhook=False))
    await stack.start()
    h = await Harness.open(stack)
    try:
        ns = await h.namespace("kubedl")
        uids = await kubedl_started(h, ns, "ddp", {"kubedl.io/tenancy": TENANCY})
        # While KubeDL ran it, worker 1 finished and worker 0's container was restarted twice.
        await h.sim.finish(ns, "ddp-worker-1")
        for _ in range(2):
            await h.sim.restart_container(ns, "ddp-worker-0")
        await h.sim.wait_for(
            ns,
            "ddp-worker-0",
            lambda p: (
                p is not None
                and p["status"].get("phase") == "Running"
                and p["status"]["containerStatuses"][0]["restartCount"] == 2
            ),
            30,
        )
        await h.kube.patch_status(
            PYTORCHJOBS, ns, "ddp", {"status": {"replicaStatuses": {"Worker": {"active": 1, "succeeded": 1}}}}
        )
        # A job in KubeDL's host network mode, in a namespace of its own (its requests counted apart).
        host_ns = await h.namespace("kubedl-host")
        host_uids = await kubedl_started(h, host_ns, "hostnet", {"kubedl.io/network-mode": "host"}, host=True)

        assert "labels" not in (await h.get(PYTORCHJOBS, ns, "ddp") or {})["metadata"]
        await stack.start_webhook()
        await stack.start_controller()

        async def adopted_and_counted() -> Obj | None:
            job = await h.get(PYTORCHJOBS, ns, "ddp")
            worker = ((job or {}).get("status") or {}).get("replicaStatuses", {}).get("Worker", {})
            counted = (
                worker.get("restarts") == 2 and worker.get("active") == 1 and worker.get("succeeded") == 1
            )
            return job if counted and is_true(job, "Running") else None

        job = await eventually(
            adopted_and_counted, what="ddp's status: Running, 1 active and 1 succeeded worker, 2 restarts"
        )
        assert job["status"]["startTime"] == "2026-01-01T00:00:00Z"
        pods = await pods_of(h, ns, "ddp")
        # The same pods (uids), now labelled as kubetrain's; none created or deleted.
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == uids
        for pod in pods:
            labels = pod["metadata"]["labels"]
            assert (
                labels["kubetrain.io/job-name"] == "ddp" and labels["kubetrain.io/job-kind"] == "PyTorchJob"
            )
            assert (labels["kubetrain.io/replica-type"], labels["kubetrain.io/replica-index"]) == (
                labels["replica-type"],
                labels["replica-index"],
            )
            assert (labels.get("kubetrain.io/job-role") == "master") == (labels["replica-type"] == "master")
            # The job's tenancy labels too: tenant selectors find the adopted pods.
            assert labels["tenancy.kubetrain.io/tenant"] == "vision"
            assert labels["tenancy.kubetrain.io/user"] == "ana"
        tenant_pods = await h.kube.list(PODS, ns, label_selector="tenancy.kubetrain.io/tenant=vision")
        assert sorted(p["metadata"]["name"] for p in tenant_pods["items"]) == sorted(uids)
        # And the job's, so a tenant quota counts the adopted job at once.
        assert job["metadata"]["labels"] == {
            "tenancy.kubetrain.io/tenant": "vision",
            "tenancy.kubetrain.io/user": "ana",
        }
        await tenant_quota_counts_the_adopted_job(h, stack, ns)
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/", namespace=ns) == 0
        assert h.requests.count(verb="delete", resource="pods", user_agent="kubetrain/", namespace=ns) == 0
        (adopted,) = [e for e in await h.events(ns, "ddp") if e["reason"] == "Adopted"]
        assert "3 pods and 3 services created by KubeDL" in adopted["message"]
        assert job["metadata"]["annotations"]["kubetrain.io/adopted-from"] == "training.kubedl.io/kubedl"

        # The host network job: not adopted, a Warning naming why and what to do, its pods left
        # as KubeDL made them, and the job waits for their names instead of replacing them.
        (refused,) = [e for e in await h.events(host_ns, "hostnet") if e["reason"] == "NotAdopted"]
        assert refused["type"] == "Warning"
        assert "host network mode (kubedl.io/network-mode: host)" in refused["message"]
        assert (
            f"kubectl -n {host_ns} delete pods,services -l group-name=training.kubedl.io,job-name=hostnet"
            in refused["message"]
        )

        async def waiting() -> Obj | None:
            obj = await h.get(PYTORCHJOBS, host_ns, "hostnet")
            running = [
                c for c in (obj or {}).get("status", {}).get("conditions", []) if c["type"] == "Running"
            ]
            return obj if running and running[0]["reason"] == "PodNameConflict" else None

        await eventually(waiting, what="hostnet Running=False PodNameConflict")
        for pod in await pods_of(h, host_ns, "hostnet"):
            assert "kubetrain.io/job-name" not in pod["metadata"]["labels"]
            assert host_uids[pod["metadata"]["name"]] == pod["metadata"]["uid"]
            assert pod["status"]["phase"] == "Running"
        assert (
            h.requests.count(verb="delete", resource="pods", user_agent="kubetrain/", namespace=host_ns) == 0
        )

        # Worker 0 is evicted later (phase Failed, not restarted by the kubelet): kubetrain
        # replaces it, and the new pod reaches the master where KubeDL's pods do (its per-pod Service,
        # adopted), with KubeDL's labels that Service selects by.
        old_uid = uids["ddp-worker-0"]
        adopted_labels = next(p for p in pods if p["metadata"]["name"] == "ddp-worker-0")["metadata"][
            "labels"
        ]
        await h.sim.evict(ns, "ddp-worker-0")
        recreated = await h.sim.wait_for(
            ns, "ddp-worker-0", lambda p: p is not None and p["metadata"]["uid"] != old_uid, 30
        )
        env = {e["name"]: e.get("value") for e in recreated["spec"]["containers"][0]["env"]}
        assert env["MASTER_ADDR"] == "ddp-master-0" and env["MASTER_PORT"] == str(PORT)
        assert env["RANK"] == "1" and env["WORLD_SIZE"] == "3"
        # The pod kubetrain created has exactly the labels the adopted one got.
        assert recreated["metadata"]["labels"] == adopted_labels
        selector = (await h.kube.get(SERVICES, ns, "ddp-worker-0"))["spec"]["selector"]
        assert selector.items() <= recreated["metadata"]["labels"].items()
        services = (await h.kube.list(SERVICES, ns, label_selector="kubetrain.io/job-name=ddp"))["items"]
        assert sorted(s["metadata"]["name"] for s in services) == [
            "ddp-master-0",
            "ddp-worker-0",
            "ddp-worker-1",
        ]
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/", namespace=ns) == 1

        # kubetrain runs the adopted job to the end.
        await h.sim.finish(ns, "ddp-master-0")

        async def succeeded() -> Obj | None:
            obj = await h.get(PYTORCHJOBS, ns, "ddp")
            return obj if is_true(obj, "Succeeded") else None

        await eventually(succeeded, what="ddp Succeeded")
        assert h.requests.count(verb="create", resource="pods", user_agent="kubetrain/", namespace=ns) == 1
    finally:
        await h.close()
        await stack.stop()
