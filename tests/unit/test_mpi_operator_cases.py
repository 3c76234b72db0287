"""MPIJob (kubeflow.org/v2beta1) held to the cases of mpi-operator's own unit tests
(kubeflow/mpi-operator v0.8: pkg/controller/mpi_job_controller_test.go and
pkg/apis/kubeflow/validation/validation_test.go), translated to what kubetrain makes: the
Launcher is the pod `<job>-launcher-0`, not a batch Job (docs/behaviour.md §4, "MPIJob"). Each
test names the mpi-operator case it follows; where kubetrain differs on purpose the test says
which documented Decision or Limit applies."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import Sim, at

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job

Obj = dict[str, Any]
KF = "training.kubeflow.org/"


def template(**spec: Any) -> Obj:
    return {"spec": {"containers": [{"name": "main", "image": "mpi-image"}], **spec}}


def mpijob(
    name: str = "foo",
    namespace: str = "bar",
    *,
    workers: int | None = 1,
    launcher: Obj | None = None,
    worker: Obj | None = None,
    run_policy: Obj | None = None,
    **spec: Any,
) -> Obj:
    """An MPIJob as mpi-operator's tests write them (newMPIJob): kubeflow.org/v2beta1."""
    replicas: Obj = {"Launcher": {"template": launcher or template()}}
    if workers is not None:
        replicas["Worker"] = {"replicas": workers, "template": worker or template()}
    body: Obj = {"mpiReplicaSpecs": replicas, **spec}
    if run_policy is not None:
        body["runPolicy"] = run_policy
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", "generation": 1},
        "spec": body,
    }


def pods_of(obj: Obj) -> dict[str, Obj]:
    prepared = prepare_job(default_job(obj).obj)
    assert prepared.shape is not None, prepared.errors
    return {c["metadata"]["name"]: c for c in desired_children(prepared.shape).all() if c["kind"] == "Pod"}


def kubeflow_labels(pod: Obj) -> dict[str, str]:
    return {k: v for k, v in pod["metadata"]["labels"].items() if k.startswith(KF)}


def env(container: Obj) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]) for e in container.get("env") or []]


# --- TestNewLauncherAndWorker ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("as_worker", "launcher_labels", "worker_labels"),
    [
        # "defaults": defaultLabels(job, "launcher"); workers get their replica index.
        (
            False,
            {"operator-name": "mpi-operator", "job-name": "foo", "job-role": "launcher"},
            {"operator-name": "mpi-operator", "job-name": "foo", "job-role": "worker", "replica-index": "0"},
        ),
        # "launcher-as-worker": the Launcher is index 0, Worker i is index i+1
        # (workerReplicaIndexLabel: a unique index per pod of the PodGroup, for Kueue's TAS).
        (
            True,
            {
                "operator-name": "mpi-operator",
                "job-name": "foo",
                "job-role": "launcher",
                "replica-index": "0",
            },
            {"operator-name": "mpi-operator", "job-name": "foo", "job-role": "worker", "replica-index": "1"},
        ),
    ],
)
def test_new_launcher_and_worker_labels(
    as_worker: bool, launcher_labels: dict[str, str], worker_labels: dict[str, str]
) -> None:
    """TestNewLauncherAndWorker "defaults" and "launcher-as-worker": the training.kubeflow.org
    labels of a kubeflow.org MPIJob's pods are mpi-operator's (created at v2beta1, or with no
    `kubetrain.io/created-api-version`: test_mpi_created_version.py has v1's), so its README's
    `kubectl get pods -l training.kubeflow.org/job-name=<job>,training.kubeflow.org/job-role=launcher`
    finds the Launcher. (kubetrain also keeps training-operator's `replica-type` label.)"""
    pods = pods_of(mpijob(runLauncherAsWorker=as_worker))
    want_launcher = {KF + k: v for k, v in launcher_labels.items()} | {KF + "replica-type": "launcher"}
    want_worker = {KF + k: v for k, v in worker_labels.items()} | {KF + "replica-type": "worker"}
    assert kubeflow_labels(pods["foo-launcher-0"]) == want_launcher
    assert kubeflow_labels(pods["foo-worker-0"]) == want_worker
    # kubetrain's own labels keep the pod's real index and role.
    assert pods["foo-worker-0"]["metadata"]["labels"]["kubetrain.io/replica-index"] == "0"
    assert pods["foo-launcher-0"]["metadata"]["labels"]["kubetrain.io/job-role"] == "master"


def test_kubetrain_io_mpijob_pods_carry_no_kubeflow_labels() -> None:
    obj = mpijob()
    obj["apiVersion"] = "kubetrain.io/v1"
    assert all(kubeflow_labels(p) == {} for p in pods_of(obj).values())


def test_new_launcher_and_worker_defaults() -> None:
    """TestNewLauncherAndWorker "defaults": hostname/subdomain, restart policies (Launcher
    OnFailure, Worker Never), the Worker's DNS search and sshd command, the Launcher without
    one, each gets only its own volumes."""
    pods = pods_of(mpijob())
    launcher, worker = pods["foo-launcher-0"]["spec"], pods["foo-worker-0"]["spec"]
    assert (launcher["hostname"], launcher["subdomain"], launcher["restartPolicy"]) == (
        "foo-launcher",
        "foo",
        "OnFailure",
    )
    assert "dnsConfig" not in launcher and "dnsPolicy" not in launcher
    assert (worker["hostname"], worker["subdomain"], worker["restartPolicy"]) == (
        "foo-worker-0",
        "foo",
        "Never",
    )
    assert worker["dnsConfig"] == {"searches": ["foo.bar.svc.cluster.local"]}
    assert worker["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    assert [v["name"] for v in launcher["volumes"]] == ["ssh-auth", "mpi-job-config"]
    assert [v["name"] for v in worker["volumes"]] == ["ssh-auth"]


def test_new_launcher_and_worker_overrides() -> None:
    """TestNewLauncherAndWorker "overrides": the user's env, securityContext, mounts and volumes
    stay first and the operator's follow; only container 0 is decorated (a second container is
    left as written); hostNetwork gives ClusterFirstWithHostNet on both; a Worker command is
    kept; a custom sshAuthMountPath gets no defaultMode; template labels are carried."""
    sidecar = {"name": "sidecar", "image": "sidecar:1"}
    launcher = {
        "metadata": {"labels": {"foo": "bar"}},
        "spec": {
            "hostNetwork": True,
            "containers": [
                {
                    "name": "main",
                    "image": "mpi-image",
                    "env": [{"name": "FOO", "value": "bar"}],
                    "securityContext": {"runAsUser": 1000},
                    "volumeMounts": [{"name": "foo-vol", "mountPath": "/mnt/foo"}],
                },
                sidecar,
            ],
            "volumes": [{"name": "foo-vol", "emptyDir": {}}],
        },
    }
    worker = {
        "spec": {
            "hostNetwork": True,
            "containers": [
                {
                    "name": "main",
                    "image": "mpi-image",
                    "command": ["/entrypoint.sh"],
                    "env": [{"name": "FOO", "value": "bar"}],
                }
            ],
        }
    }
    obj = mpijob(
        "bar",
        "foo",
        workers=13,
        launcher=launcher,
        worker=worker,
        sshAuthMountPath="/home/mpiuser/.ssh",
        slotsPerWorker=5,
        mpiImplementation="Intel",
        run_policy={"ttlSecondsAfterFinished": 1, "activeDeadlineSeconds": 2, "backoffLimit": 3},
    )
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "OnFailure"
    pods = pods_of(obj)
    lpod, wpod = pods["bar-launcher-0"], pods["bar-worker-12"]
    ls, ws = lpod["spec"], wpod["spec"]
    assert lpod["metadata"]["labels"]["foo"] == "bar"
    assert (ls["hostNetwork"], ls["dnsPolicy"], ls["hostname"], ls["subdomain"]) == (
        True,
        "ClusterFirstWithHostNet",
        "bar-launcher",
        "bar",
    )
    main = ls["containers"][0]
    assert main["securityContext"] == {"runAsUser": 1000}
    assert env(main) == [
        ("FOO", "bar"),
        ("K_MPI_JOB_ROLE", "launcher"),
        ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
        ("I_MPI_PERHOST", "5"),
        ("NVIDIA_VISIBLE_DEVICES", ""),
        ("NVIDIA_DRIVER_CAPABILITIES", ""),
    ]
    assert main["volumeMounts"] == [
        {"name": "foo-vol", "mountPath": "/mnt/foo"},
        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    assert ls["containers"][1] == sidecar
    assert [v["name"] for v in ls["volumes"]] == ["foo-vol", "ssh-auth", "mpi-job-config"]
    assert "defaultMode" not in ls["volumes"][1]["secret"]
    assert (ws["hostname"], ws["subdomain"], ws["dnsPolicy"]) == (
        "bar-worker-12",
        "bar",
        "ClusterFirstWithHostNet",
    )
    assert ws["dnsConfig"] == {"searches": ["bar.foo.svc.cluster.local"]}
    (wmain,) = ws["containers"]
    assert wmain["command"] == ["/entrypoint.sh"]
    assert env(wmain) == [("FOO", "bar"), ("K_MPI_JOB_ROLE", "worker")]
    assert wmain["volumeMounts"] == [{"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"}]
    assert wpod["metadata"]["labels"][KF + "replica-index"] == "12"


# --- TestValidateMPIJob ------------------------------------------------------------------------


def errors_of(obj: Obj) -> set[tuple[str, str]]:
    return {(e.path, e.kind) for e in validate_job(default_job(obj).obj).errors}


C = {"spec": {"containers": [{"name": "main", "image": "mpi-image"}]}}


@pytest.mark.parametrize("implementation", ["Intel", "MPICH"])
@pytest.mark.parametrize("with_worker", [False, True])
def test_validate_valid_jobs(implementation: str, with_worker: bool) -> None:
    """ "valid (intel)", "valid with worker (intel)", "valid (mpich)", "valid with worker (mpich)"."""
    obj = mpijob(
        workers=3 if with_worker else None,
        slotsPerWorker=2,
        run_policy={"cleanPodPolicy": "Running"},
        sshAuthMountPath="/home/mpiuser/.ssh",
        mpiImplementation=implementation,
    )
    obj["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=1, restartPolicy="Never")
    assert errors_of(obj) == set()


def test_validate_empty_job() -> None:
    """ "empty job": the replica specs are required. slotsPerWorker, cleanPodPolicy,
    sshAuthMountPath and mpiImplementation, also required by mpi-operator's validation, are
    defaulted by the mutating webhook (SetDefaults_MPIJob) before it, so they are never missing."""
    obj = mpijob()
    obj["spec"] = {}
    assert errors_of(obj) == {
        ("spec.mpiReplicaSpecs", "Required"),
        ("spec.mpiReplicaSpecs[Launcher]", "Required"),
    }


def test_validate_invalid_fields() -> None:
    """ "invalid fields": a name whose pod names exceed 63 characters, unknown cleanPodPolicy and
    mpiImplementation, negative TTL, deadline and backoff limit. **Decision** (docs §1):
    `managedBy: invalid.com/controller` is accepted and the job left to that controller."""
    obj = mpijob(
        "this-name-is-waaaaaaaay-too-long-for-a-worker-hostname",
        workers=1000,
        slotsPerWorker=2,
        run_policy={
            "cleanPodPolicy": "unknown",
            "ttlSecondsAfterFinished": -1,
            "activeDeadlineSeconds": -1,
            "backoffLimit": -1,
            "managedBy": "invalid.com/controller",
        },
        mpiImplementation="Unknown",
    )
    assert errors_of(obj) == {
        ("metadata.name", "Invalid"),
        ("spec.runPolicy.cleanPodPolicy", "NotSupported"),
        ("spec.runPolicy.ttlSecondsAfterFinished", "Invalid"),
        ("spec.runPolicy.activeDeadlineSeconds", "Invalid"),
        ("spec.runPolicy.backoffLimit", "Invalid"),
        ("spec.mpiImplementation", "NotSupported"),
    }


def test_validate_empty_and_missing_replica_specs() -> None:
    """ "empty replica specs" (the Launcher is required) and "missing replica spec fields" (a
    template needs a container; replicas and restartPolicy are defaulted before validation)."""
    empty = mpijob(workers=None)
    empty["spec"]["mpiReplicaSpecs"] = {}
    assert ("spec.mpiReplicaSpecs[Launcher]", "Required") in errors_of(empty)
    missing = mpijob()
    missing["spec"]["mpiReplicaSpecs"] = {"Launcher": {}, "Worker": {}}
    assert errors_of(missing) == {
        ("spec.mpiReplicaSpecs[Launcher].template.spec.containers", "Required"),
        ("spec.mpiReplicaSpecs[Worker].template.spec.containers", "Required"),
    }


def test_validate_invalid_replica_fields() -> None:
    """ "invalid replica fields": an unknown restartPolicy is NotSupported and a Launcher with 2
    replicas Invalid (reported once the type errors are fixed, docs §3). **Decisions** (docs
    §3): `Always` is one of kubetrain's restart policies, and a Worker spec with 0 replicas is
    accepted (a job without Workers), where mpi-operator refuses both."""
    obj = mpijob(workers=0)
    obj["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=2, restartPolicy="Always")
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "Invalid"
    assert errors_of(obj) == {("spec.mpiReplicaSpecs[Worker].restartPolicy", "NotSupported")}
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "Never"
    assert errors_of(obj) == {("spec.mpiReplicaSpecs[Launcher].replicas", "Invalid")}


def test_validate_invalid_name() -> None:
    """ "invalid mpiJob name": not a DNS-1035 label."""
    assert errors_of(mpijob("1-foo", workers=None)) == {("metadata.name", "Invalid")}


def test_a_name_with_a_dot_is_refused() -> None:
    """mpi-operator issue #733: OpenMPI reads a hostfile host up to its first dot, so the Workers
    of `myjob.1` (`myjob.1-worker-0.myjob.1.ns.svc`) are all host `myjob` and mpirun refuses the
    hostfile. A DNS-1035 label has no dot: the job is refused at admission, as mpi-operator's
    `validateMPIJobName` refuses it."""
    assert errors_of(mpijob("myjob.1")) == {("metadata.name", "Invalid")}


# --- controller cases (syncHandler), on the planner ------------------------------------------


def sim(obj: Obj) -> Sim:
    return Sim(default_job(obj).obj)


def ready(s: Sim, name: str) -> None:
    s.set_phase(name, "Running")
    s.pods[name]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
def test_all_resources_created(implementation: str) -> None:
    """TestAllResourcesCreated: the Service, the ConfigMap and the SSH Secret, every Worker and
    the Launcher in the first reconcile, and the Created condition."""
    s = sim(mpijob(workers=5, mpiImplementation=implementation))
    s.step(at(0))
    assert s.service is not None and s.service["metadata"]["name"] == "foo"
    assert set(s.extra) == {("Secret", "foo-ssh"), ("ConfigMap", "foo-config")}
    assert sorted(s.created) == ["foo-launcher-0", *(f"foo-worker-{i}" for i in range(5))]
    assert s.is_true("Created")


def test_launcher_active_worker_not_ready_then_ready() -> None:
    """TestLauncherActiveWorkerNotReady: a running Launcher with pending Workers is not Running;
    TestLauncherActiveWorkerReady: once every Worker runs too, the job is Running."""
    s = sim(mpijob(workers=8))
    s.step(at(0))
    s.set_phase("foo-launcher-0", "Running")
    s.step(at(1))
    assert not s.is_true("Running")
    for i in range(8):
        s.set_phase(f"foo-worker-{i}", "Running")
    s.step(at(2))
    running = s.condition("Running")
    assert running is not None and (running["status"], running["reason"]) == ("True", "MPIJobRunning")
    statuses = s.job["status"]["replicaStatuses"]
    assert (statuses["Launcher"]["active"], statuses["Worker"]["active"]) == (1, 8)
    # mpi-operator's Normal events (syncHandler, updateMPIJobStatus), each once per transition.
    s.step(at(3))
    assert [(e.type, e.reason, e.message) for e in s.events if e.type == "Normal"] == [
        ("Normal", "MPIJobCreated", "MPIJob bar/foo is created."),
        ("Normal", "MPIJobRunning", "MPIJob bar/foo is running."),
    ]


def test_worker_ready_creates_the_waiting_launcher() -> None:
    """TestWorkerReady (with WaitForWorkersReady): the Launcher is created once all 16 Workers
    are Ready, and not before."""
    s = sim(mpijob(workers=16, launcherCreationPolicy="WaitForWorkersReady"))
    s.step(at(0))
    for i in range(15):
        ready(s, f"foo-worker-{i}")
    s.step(at(1))
    assert "foo-launcher-0" not in s.pods
    ready(s, "foo-worker-15")
    s.step(at(2))
    assert "foo-launcher-0" in s.pods


def test_launcher_succeeded_without_running() -> None:
    """TestLauncherSucceeded (mpi-operator v0.8.2, #787): the Launcher succeeding succeeds the
    job, and a job never seen Running gets Running=False dated at its completionTime."""
    s = sim(mpijob(workers=2))
    s.step(at(0))
    s.set_phase("foo-launcher-0", "Succeeded", exit_code=0)
    s.step(at(1))
    assert s.is_true("Succeeded")
    running = s.condition("Running")
    assert running is not None
    assert (running["status"], running["reason"]) == ("False", "MPIJobRunning")
    # mpi-operator names the job as namespace/name (updateMPIJobStatus).
    assert running["message"] == "MPIJob bar/foo is finished but Running condition was never set."
    done = s.job["status"]["completionTime"]
    assert running["lastTransitionTime"] == running["lastUpdateTime"] == done
    # Not the State column: that stays on Succeeded.
    assert s.job["status"]["conditions"][-1]["type"] == "Succeeded"


def test_launcher_succeeded_after_running_keeps_its_running_transition() -> None:
    """TestLauncherSucceededWithRunningPod (v0.8.2, #787): a job that ran has Running turned
    False when it finishes, no later than its completionTime, and it is never True again."""
    s = sim(mpijob(workers=2))
    s.step(at(0))
    for name in ("foo-launcher-0", "foo-worker-0", "foo-worker-1"):
        s.set_phase(name, "Running")
    s.step(at(1))
    assert s.is_true("Running")
    s.set_phase("foo-launcher-0", "Succeeded", exit_code=0)
    s.step(at(2))
    s.step(at(3))
    running = s.condition("Running")
    assert running is not None and running["status"] == "False"
    assert running["message"] == "MPIJob bar/foo successfully completed."
    assert running["lastTransitionTime"] <= s.job["status"]["completionTime"]


def test_a_training_operator_mpijob_finished_without_running_has_no_running_condition() -> None:
    """An MPIJob created at kubeflow.org/v1 keeps training-operator v1.9's status, which has no
    such condition (its `UpdateJobStatus` only turns an existing Running False)."""
    obj = mpijob(workers=2)
    obj["metadata"]["annotations"] = {"kubetrain.io/created-api-version": "kubeflow.org/v1"}
    s = sim(obj)
    s.step(at(0))
    s.set_phase("foo-launcher-0", "Succeeded", exit_code=0)
    s.step(at(1))
    assert s.is_true("Succeeded")
    assert s.condition("Running") is None


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
def test_create_suspended_mpijob(implementation: str) -> None:
    """TestCreateSuspendedMPIJob: nothing runs, the job is Created and Suspended, Running is not
    True and there is no startTime. **Decision** (docs §4, MPIJob): the Service, ConfigMap and
    Secret come with the first resume, where mpi-operator creates them at once."""
    s = sim(mpijob(workers=8, mpiImplementation=implementation, run_policy={"suspend": True}))
    s.step(at(0))
    assert s.pods == {} and s.service is None and s.extra == {}
    assert s.is_true("Suspended") and not s.is_true("Running")
    assert s.condition("Suspended")["reason"] == "MPIJobSuspended"  # type: ignore[index]
    assert "startTime" not in s.job["status"]
    # mpi-operator's messages name the job as namespace/name.
    assert s.condition("Created")["message"] == "MPIJob bar/foo is created."  # type: ignore[index]
    assert s.condition("Suspended")["message"] == "MPIJob suspended"  # type: ignore[index]
    running = s.condition("Running")
    assert running is not None and (running["status"], running["reason"], running["message"]) == (
        "False",
        "MPIJobSuspended",
        "MPIJob bar/foo is suspended.",
    )
    assert [(e.reason, e.message) for e in s.events if e.reason == "MPIJobSuspended"] == [
        ("MPIJobSuspended", "MPIJob suspended")
    ]


def test_suspended_running_mpijob_then_resumed_with_new_launcher_directives() -> None:
    """TestSuspendedRunningMPIJob: suspending deletes the Workers and the Launcher (mpi-operator
    suspends the launcher Job, whose controller deletes its pod). TestResumeMPIJob,
    TestResumeMPIJobWithExistingLauncher and TestResumeMPIJobClearsStartTime (mpi-operator issue
    687): on resume every pod is created again — the Launcher from the template as it is now,
    with the labels, annotations, nodeSelector, tolerations and schedulingGates Kueue set while
    the job was suspended — and startTime is the resume's."""
    s = sim(mpijob(workers=8))
    s.step(at(0))
    s.all_phase("Running")
    s.step(at(1))
    assert s.is_true("Running")
    assert s.condition("Running")["message"] == "MPIJob bar/foo is running."  # type: ignore[index]
    s.job["spec"]["runPolicy"]["suspend"] = True
    s.job["metadata"]["generation"] = 2
    p = s.step(at(10))
    assert sorted(p.delete_pods) == sorted(["foo-launcher-0", *(f"foo-worker-{i}" for i in range(8))])
    assert s.is_true("Suspended") and not s.is_true("Running")

    launcher = s.job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher["metadata"] = {
        "labels": {"foo": "bar"},
        "annotations": {"kueue.x-k8s.io/workload": "my-workload"},
    }
    toleration = {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    launcher["spec"].update(
        nodeSelector={"example.com/accelerator": "example-model"},
        tolerations=[toleration],
        schedulingGates=[{"name": "kueue.x-k8s.io/topology"}],
    )
    s.job["spec"]["runPolicy"]["suspend"] = False
    s.job["metadata"]["generation"] = 3
    s.step(at(20))
    resumed = s.condition("Suspended")
    assert resumed is not None and (resumed["status"], resumed["reason"]) == ("False", "MPIJobResumed")
    assert resumed["message"] == "MPIJob resumed"  # mpi-operator's, without the name
    assert s.job["status"]["startTime"] == "2024-05-01T12:00:20Z"
    pod = s.pods["foo-launcher-0"]
    assert pod["metadata"]["labels"]["foo"] == "bar"
    assert pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "my-workload"
    assert pod["spec"]["nodeSelector"] == {"example.com/accelerator": "example-model"}
    assert pod["spec"]["tolerations"][-1] == toleration
    assert pod["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert len(s.pods) == 9


def test_shutdown_worker_after_success_with_clean_pod_policy() -> None:
    """TestShutdownWorker: once the Launcher succeeded, cleanPodPolicy Running deletes every
    running Worker (kubetrain's default is None, mpi-operator's too: docs §2)."""
    s = sim(mpijob(workers=8, run_policy={"cleanPodPolicy": "Running"}))
    s.step(at(0))
    s.all_phase("Running")
    s.step(at(1))
    s.set_phase("foo-launcher-0", "Succeeded", exit_code=0)
    p = s.step(at(2))
    assert s.is_true("Succeeded")
    assert sorted(p.delete_pods) == sorted(f"foo-worker-{i}" for i in range(8))


def test_ttl_deletes_the_mpijob_itself() -> None:
    """mpi-operator issue #644: there `ttlSecondsAfterFinished` goes to the launcher Job only, so
    the finished MPIJob stays; here it deletes the MPIJob (and its children with it), as for
    every kind (docs §7), that long after it finished."""
    s = sim(mpijob(run_policy={"ttlSecondsAfterFinished": 30, "cleanPodPolicy": "Running"}))
    s.step(at(0))
    s.all_phase("Running")
    s.step(at(1))
    s.set_phase("foo-launcher-0", "Succeeded", exit_code=0)
    done = s.step(at(2))
    assert s.is_true("Succeeded") and not done.delete_job and done.requeue_at == at(32)
    assert not s.plan(at(31)).delete_job
    assert s.plan(at(32)).delete_job


def test_the_launcher_decides_alone() -> None:
    """TestLauncherFailed / TestMPIJobFailure: the Launcher failing past its restarts fails the
    job (restartPolicy Never with backoffLimit 0: at once — test_mpi_launcher_retries.py has the
    retries below the limit); Workers' phases never succeed it."""
    obj = mpijob(workers=2, run_policy={"backoffLimit": 0})
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    s = sim(copy.deepcopy(obj))
    s.step(at(0))
    s.all_phase("Running")
    s.step(at(1))
    s.set_phase("foo-worker-0", "Succeeded", exit_code=0)
    s.set_phase("foo-worker-1", "Succeeded", exit_code=0)
    s.step(at(2))
    assert not s.is_true("Succeeded")
    s.set_phase("foo-launcher-0", "Failed", exit_code=1)
    s.step(at(3))
    assert s.is_true("Failed")


# --- TestMPIJobWithSchedulerPlugins / TestMPIJobWithVolcanoScheduler: PodGroup updates ----------


def gang_sim(gang: str, scheduling: Obj) -> Sim:
    from kubetrain.operator.plan import PlannerConfig

    obj = mpijob(workers=2, run_policy={"schedulingPolicy": scheduling})
    return Sim(default_job(obj, gang_scheduling=True).obj, PlannerConfig(gang_scheduler=gang))


def reschedule(s: Sim, **policy: Any) -> Any:
    s.job["spec"]["runPolicy"]["schedulingPolicy"].update(policy)
    s.job["metadata"]["generation"] += 1
    return s.step(at(10))


def test_scheduler_plugins_pod_group_follows_schedule_timeout() -> None:
    """TestMPIJobWithSchedulerPlugins: changing scheduleTimeoutSeconds (900 → 10) on a running
    job rewrites its PodGroup (the observed object, resourceVersion kept); nothing else is
    written while nothing changes."""
    s = gang_sim("scheduler-plugins", {"scheduleTimeoutSeconds": 900})
    s.step(at(0))
    assert s.pod_group is not None and s.pod_group["spec"]["scheduleTimeoutSeconds"] == 900
    s.pod_group["metadata"]["resourceVersion"] = "7"
    assert s.step(at(1)).update_pod_group is None
    p = reschedule(s, scheduleTimeoutSeconds=10)
    assert p.update_pod_group is not None and p.update_pod_group["metadata"]["resourceVersion"] == "7"
    assert s.pod_group["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 10}
    assert s.step(at(11)).update_pod_group is None


def test_volcano_pod_group_follows_min_available() -> None:
    """TestMPIJobWithVolcanoScheduler: a new minAvailable (3 → 2) reaches minMember. The queue
    changes only while the job is suspended (docs §3), when it has no PodGroup; a queue the
    scheduler defaulted on a PodGroup kubetrain wrote without one is left as it is."""
    s = gang_sim("volcano", {})
    s.step(at(0))
    assert s.pod_group is not None and s.pod_group["spec"] == {"minMember": 3}
    s.pod_group["spec"]["queue"] = "default"  # Volcano's webhook
    s.pod_group["status"] = {"phase": "Running"}
    assert s.step(at(1)).update_pod_group is None
    reschedule(s, minAvailable=2)
    assert s.pod_group["spec"] == {"minMember": 2, "queue": "default"}


def test_pod_group_min_resources_compare_as_quantities() -> None:
    """minResources the scheduler's API server wrote in another form (`1024Mi` for `1Gi`) is no
    change; a PodGroup kubetrain does not control is never written."""
    from kubetrain.operator.podgroupsync import pod_group_update

    desired = {"spec": {"minMember": 2, "minResources": {"cpu": "1", "memory": "1Gi"}}}
    observed = {
        "metadata": {"name": "foo"},
        "spec": {"minMember": 2, "minResources": {"cpu": "1000m", "memory": "1024Mi"}},
    }
    assert pod_group_update(desired, observed) is None
    more = {"spec": {"minMember": 2, "minResources": {"cpu": "2", "memory": "1Gi"}}}
    update = pod_group_update(more, observed)
    assert update is not None and update["spec"]["minResources"] == {"cpu": "2", "memory": "1Gi"}
    assert observed["spec"]["minResources"]["cpu"] == "1000m"  # the observed object is not changed

    s = gang_sim("scheduler-plugins", {"scheduleTimeoutSeconds": 900})
    s.step(at(0))
    assert s.pod_group is not None
    s.pod_group["metadata"]["ownerReferences"] = []  # someone else's PodGroup of the name
    assert reschedule(s, scheduleTimeoutSeconds=10).update_pod_group is None


@pytest.mark.parametrize(
    ("managed_by", "reconciled"),
    [
        (None, True),
        ("kubeflow.org/mpi-operator", True),  # kubeflow.KubeflowJobController: the default controller
        ("kueue.x-k8s.io/multikueue", False),  # TestDoNothingWithMPIJobManagedExternally
    ],
)
def test_managed_by(managed_by: str | None, reconciled: bool) -> None:
    """TestDoNothingWithMPIJobManagedExternally and managedByExternalController: only a
    managedBy other than mpi-operator's own name `kubeflow.org/mpi-operator` leaves the job to
    another controller — kubetrain serving mpijobs.kubeflow.org is that operator."""
    s = sim(mpijob(run_policy={} if managed_by is None else {"managedBy": managed_by}))
    p = s.step(at(0))
    assert bool(p.create_pods) is reconciled
    assert (p.status is not None) is reconciled
