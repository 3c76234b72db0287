"""Katib experiments whose trials are kubeflow.org jobs, run on kubetrain as a Katib user meets it.

Each of Katib's example trialTemplates (tests/data/katib/) is rendered as Katib's trial
controller renders it (tests/integration/katib_support.py), the Trial and its job are created
in a namespace labelled for Katib's pod webhook, and that webhook — Katib's mutation, served over
HTTPS and registered as Katib registers it — injects the metrics collector into the primary pods
kubetrain creates. The job's stored status is then judged with the trial's GJSON
successCondition / failureCondition, as Katib's trial controller judges it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    TRAINJOBS,
    ResourceRef,
    job_resource,
    job_resources_in,
)

from .controller_support import Harness, condition, eventually, is_true, open_stack
from .katib_support import (
    INJECTION_LABEL,
    LABEL_EXPERIMENT,
    LABEL_TRIAL,
    SIDECAR,
    TRIAL_CRD,
    TRIALS,
    KatibPodWebhook,
    collector_layout,
    experiment,
    gjson_matches,
    katib_pod_webhook,
    own_job,
    render_trial,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
KF = job_resources_in(["kubeflow.org"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness, KatibPodWebhook]]:
    async for stack, h in open_stack(api_groups=("kubetrain.io", "kubeflow.org", "trainer.kubeflow.org")):
        await h.install_crd(TRIAL_CRD)
        async with katib_pod_webhook(h.kube) as (hook, url, ca):
            await h.kube.create(MUTATING_WEBHOOK_CONFIGURATIONS, hook.configuration(url, ca))
            yield stack, h, hook


async def katib_namespace(h: Harness) -> str:
    ns = await h.namespace("katib")

    def label(obj: Obj) -> None:
        obj["metadata"].setdefault("labels", {})[INJECTION_LABEL] = "enabled"

    await h.change(NAMESPACES, None, ns, label)
    return ns


async def start_trial(
    h: Harness, file: str, name: str, assignments: dict[str, str], edit: Any = None
) -> tuple[str, Obj, Obj, ResourceRef]:
    """(namespace, created Trial, created job, the job's resource) for one trial of `file`."""
    ns = await katib_namespace(h)
    exp = experiment(file)
    if edit is not None:
        edit(exp["spec"]["trialTemplate"])
    trial, job = render_trial(exp, name, ns, assignments)
    created_trial = await h.kube.create(TRIALS, trial, namespace=ns)
    if job["kind"] == "TrainJob":
        ref = TRAINJOBS
    else:
        group, _, version = job["apiVersion"].rpartition("/")  # MPIJob: v1, as the example says
        served = KF[f"{job['kind']}.kubeflow.org"] if group == "kubeflow.org" else job_resource(job["kind"])
        ref = ResourceRef(served.group, version, served.plural, served.kind, True)
    created_job = await h.kube.create(ref, own_job(job, created_trial), namespace=ns)
    return ns, created_trial, created_job, ref


async def finished(h: Harness, ref: ResourceRef, ns: str, name: str, ctype: str) -> Obj:
    async def check() -> Obj | None:
        job = await h.get(ref, ns, name)
        return job if is_true(job, ctype) else None

    result: Obj = await eventually(check, what=f"{ref.kind} {name} {ctype}=True")
    return result


def containers(pod: Obj) -> list[str]:
    return [c["name"] for c in pod["spec"]["containers"]]


def assert_injected(pod: Obj, trial: Obj, primary: str) -> None:
    labels = pod["metadata"]["labels"]
    assert labels[LABEL_TRIAL] == trial["metadata"]["name"]
    assert labels[LABEL_EXPERIMENT] == trial["metadata"]["labels"][LABEL_EXPERIMENT]
    sidecar, path, directory = collector_layout(trial)
    assert containers(pod) == [primary, sidecar]
    assert pod["spec"]["shareProcessNamespace"] is True
    (main,) = [c for c in pod["spec"]["containers"] if c["name"] == primary]
    assert main["command"] == ["sh", "-c"]
    redirect = f"1>{path} 2>&1 " if sidecar == SIDECAR else ""
    assert main["args"][0].endswith(f"{redirect}&& echo completed > {directory}/$$$$.pid")
    assert {"name": "metrics-volume", "mountPath": directory} in main["volumeMounts"]


def judge(trial: Obj, job: Obj) -> tuple[bool, bool]:
    """(failed, succeeded) as GetDeployedJobStatus sees the stored job (failure is read first)."""
    spec = trial["spec"]
    return gjson_matches(job, spec["failureCondition"]), gjson_matches(job, spec["successCondition"])


async def test_pytorchjob_trial_injects_the_master_and_succeeds(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    _, h, _ = env
    ns, trial, _, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "mnist-a", {"lr": "0.02", "momentum": "0.6"}
    )
    assert trial["spec"]["primaryPodLabels"] == {"training.kubeflow.org/job-role": "master"}
    master, worker = await h.wait_pod_names(ns, "mnist-a", ["mnist-a-master-0", "mnist-a-worker-0"])
    assert_injected(master, trial, "pytorch")
    assert "--lr=0.02" in master["spec"]["containers"][0]["args"][0]
    # The worker is the trial's pod too (labels, KATIB_TRIAL_NAME) but not a primary pod.
    assert worker["metadata"]["labels"][LABEL_TRIAL] == "mnist-a"
    assert containers(worker) == ["pytorch"]
    assert worker["spec"]["containers"][0]["command"][-1] == "--momentum=0.6"
    assert "KATIB_TRIAL_NAME" in {e["name"] for e in worker["spec"]["containers"][0]["env"]}

    running = await h.get(ref, ns, "mnist-a")
    assert judge(trial, running or {}) == (False, False)
    await h.finish_all(ns, "mnist-a")
    job = await finished(h, ref, ns, "mnist-a", "Succeeded")
    assert judge(trial, job) == (False, True)


async def test_tfjob_trial_injects_every_worker_its_primary_pod_labels_select(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    _, h, _ = env
    ns, trial, _, ref = await start_trial(
        h, "tfjob-mnist-with-summaries.yaml", "tf-a", {"learning_rate": "0.03", "batch_size": "48"}
    )
    pods = await h.wait_pod_names(ns, "tf-a", ["tf-a-worker-0", "tf-a-worker-1"])
    for pod in pods:
        assert_injected(pod, trial, "tensorflow")
        assert containers(pod) == ["tensorflow", "metrics-collector"]  # its TensorFlowEvent collector
        assert "--batch-size=48" in pod["spec"]["containers"][0]["args"][0]
    await h.finish_all(ns, "tf-a")
    job = await finished(h, ref, ns, "tf-a", "Succeeded")
    assert judge(trial, job) == (False, True)


async def test_xgboostjob_trial_fails_when_its_master_fails(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    _, h, _ = env
    ns, trial, _, ref = await start_trial(
        h, "xgboostjob-lightgbm.yaml", "xgb-a", {"lr": "0.05", "num-leaves": "55"}
    )
    names = ["xgb-a-master-0", "xgb-a-worker-0", "xgb-a-worker-1"]
    master, *workers = await h.wait_pod_names(ns, "xgb-a", names)
    assert_injected(master, trial, "xgboost")
    assert "--num_leaves=55" in master["spec"]["containers"][0]["args"][0]
    assert all(containers(w) == ["xgboost"] for w in workers)
    # The master's restartPolicy is Never: its training container exiting 1 fails the pod.
    await h.sim.finish(ns, "xgb-a-master-0", exit_code=1)
    job = await finished(h, ref, ns, "xgb-a", "Failed")
    assert judge(trial, job) == (True, False)


async def test_an_injected_pod_is_judged_by_its_training_containers_exit_code(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """restartPolicy ExitCode on the injected master: a retryable exit (137) recreates the pod,
    which Katib's webhook injects again; the next run's exit 0 succeeds the trial."""
    _, h, hook = env

    def exit_code_policy(template: Obj) -> None:
        template["trialSpec"]["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "ExitCode"

    ns, trial, _, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "mnist-b", {"lr": "0.03", "momentum": "0.7"}, exit_code_policy
    )
    master, _ = await h.wait_pod_names(ns, "mnist-b", ["mnist-b-master-0", "mnist-b-worker-0"])
    assert master["spec"]["restartPolicy"] == "Never"
    assert_injected(master, trial, "pytorch")
    await h.sim.finish(ns, "mnist-b-master-0", exit_code=137)
    again = await h.wait_recreated(ns, "mnist-b-master-0", master["metadata"]["uid"])
    assert_injected(again, trial, "pytorch")
    job = await h.get(ref, ns, "mnist-b")
    assert judge(trial, job or {}) == (False, False)
    await h.finish_all(ns, "mnist-b")
    job = await finished(h, ref, ns, "mnist-b", "Succeeded")
    assert judge(trial, job) == (False, True)
    assert hook.mutated["mnist-b-master-0"] is True


async def test_mpijob_horovod_example_labels_select_no_pod_as_on_the_training_operator(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """The example's primaryPodLabels `mpi-job-role: launcher` are no label Kubeflow's
    training-operator (v1 MPIJob: `newLauncher`, `defaultReplicaLabels`) puts on a launcher, nor
    kubetrain: no pod gets the collector. Katib's default (`job-role: master`) selects the
    launcher."""
    _, h, _ = env
    ns, _, _, _ = await start_trial(h, "mpijob-horovod.yaml", "hvd-a", {"lr": "0.002", "num-steps": "60"})
    launcher = await eventually(lambda: h.pod(ns, "hvd-a-launcher-0"), what="hvd-a-launcher-0")
    labels = launcher["metadata"]["labels"]
    assert "mpi-job-role" not in labels
    assert labels["training.kubeflow.org/replica-type"] == "launcher"
    assert labels["training.kubeflow.org/job-role"] == "master"
    assert labels[LABEL_TRIAL] == "hvd-a"
    assert containers(launcher) == ["mpi-launcher"]
    for pod in await h.pods(ns, "hvd-a"):
        assert SIDECAR not in containers(pod)

    def default_labels(template: Obj) -> None:
        del template["primaryPodLabels"]

    ns2, trial2, _, ref2 = await start_trial(
        h, "mpijob-horovod.yaml", "hvd-b", {"lr": "0.002", "num-steps": "60"}, default_labels
    )
    launcher2 = await eventually(lambda: h.pod(ns2, "hvd-b-launcher-0"), what="hvd-b-launcher-0")
    assert_injected(launcher2, trial2, "mpi-launcher")
    await h.finish_all(ns2, "hvd-b")
    job = await finished(h, ref2, ns2, "hvd-b", "Succeeded")
    assert judge(trial2, job) == (False, True)


async def test_deleting_a_trial_deletes_its_job_and_pods(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """Katib deletes trials (an experiment's early-stopped or surplus trials, the experiment
    itself): the garbage collector deletes the job the Trial controls, and kubetrain's pods go
    with it."""
    _, h, _ = env
    ns, _, _, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "mnist-c", {"lr": "0.04", "momentum": "0.8"}
    )
    await h.wait_pod_names(ns, "mnist-c", ["mnist-c-master-0", "mnist-c-worker-0"])
    await h.kube.delete(TRIALS, ns, "mnist-c")
    await eventually(lambda: h.absent(ref, ns, "mnist-c"), what="job mnist-c deleted")

    async def no_pods() -> bool:
        page = await h.kube.list(PODS, ns)
        return not page["items"]

    await eventually(no_pods, what="pods of mnist-c deleted")


async def foreground_delete(h: Harness, ref: ResourceRef, ns: str, name: str, job_uid: str) -> list[str]:
    """Katib's trial controller deleting a completed trial's job (`reconcileJob`: not
    `retain`, PropagationPolicy Foreground); returns the uids of every pod of the job created
    after the delete (there must be none)."""
    before = {p["metadata"]["uid"] for p in await h.pods(ns, name)}
    await h.kube.delete(ref, ns, name, propagation_policy="Foreground", preconditions={"uid": job_uid})
    seen: set[str] = set()

    async def gone() -> bool:
        seen.update(p["metadata"]["uid"] for p in await h.pods(ns, name))
        return await h.absent(ref, ns, name) and not await h.pods(ns, name)

    await eventually(gone, what=f"job {name} and its pods deleted")
    return sorted(seen - before)


async def test_an_early_stopped_trials_running_job_is_deleted_in_the_foreground(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """Early stopping: Katib marks the Trial EarlyStopped (its early-stopping service sets the
    condition) while the job still runs, and the trial controller, seeing a completed Trial,
    deletes the job with Foreground propagation: kubetrain lets the pods go and creates none."""
    _, h, _ = env
    ns, trial, job, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "mnist-d", {"lr": "0.01", "momentum": "0.5"}
    )
    await h.wait_pod_names(ns, "mnist-d", ["mnist-d-master-0", "mnist-d-worker-0"])
    stopped = {
        "type": "EarlyStopped",
        "status": "True",
        "reason": "TrialEarlyStopped",
        "message": "Trial is early stopped",
    }
    trial = await h.kube.get(TRIALS, ns, "mnist-d")
    trial["status"] = {"conditions": [stopped]}
    await h.kube.replace(TRIALS, trial, subresource="status")
    running = await h.get(ref, ns, "mnist-d")
    assert judge(trial, running or {}) == (False, False)
    assert await foreground_delete(h, ref, ns, "mnist-d", job["metadata"]["uid"]) == []


async def test_a_succeeded_trials_job_is_deleted_in_the_foreground(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    _, h, _ = env
    ns, trial, job, ref = await start_trial(
        h, "tfjob-mnist-with-summaries.yaml", "tf-b", {"learning_rate": "0.02", "batch_size": "40"}
    )
    await h.wait_pod_names(ns, "tf-b", ["tf-b-worker-0", "tf-b-worker-1"])
    await h.finish_all(ns, "tf-b")
    done = await finished(h, ref, ns, "tf-b", "Succeeded")
    assert judge(trial, done) == (False, True)
    assert await foreground_delete(h, ref, ns, "tf-b", job["metadata"]["uid"]) == []


async def test_trainjob_trial_injects_node_zero_and_completes(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """Katib's TrainJob example on the torch-distributed runtime: the webhook reaches the Trial
    through the pod's owner chain, Katib's default primaryPodLabels (JobSet's replicated-job name
    `node`, completion index 0) select the first node only, and `Complete` meets the default
    successCondition."""
    _, h, _ = env
    ns, trial, _, ref = await start_trial(
        h, "trainjob-pytorch.yaml", "tj-a", {"lr": "0.02", "momentum": "0.6"}
    )
    first, second = await h.wait_pod_names(ns, "tj-a", ["tj-a-node-0-0", "tj-a-node-0-1"])
    assert_injected(first, trial, "node")
    assert "--lr=0.02" in first["spec"]["containers"][0]["args"][0]
    assert second["metadata"]["labels"][LABEL_TRIAL] == "tj-a"
    assert containers(second) == ["node"]
    await h.finish_all(ns, "tj-a")
    job = await finished(h, ref, ns, "tj-a", "Complete")
    assert judge(trial, job) == (False, True)


async def test_under_exit_code_a_pod_failed_only_by_the_sidecar_is_recreated(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """The metrics collector fails (e.g. Katib's DB manager unreachable) after the training
    container exited 0: the pod is Failed, but the framework container's verdict is success, so
    under restartPolicy ExitCode kubetrain recreates the pod (docs/behaviour.md §6) instead of
    failing the trial; the recreated pod is injected again and the next run succeeds."""
    _, h, _ = env

    def exit_code_policy(template: Obj) -> None:
        template["trialSpec"]["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "ExitCode"

    ns, trial, _, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "mnist-e", {"lr": "0.03", "momentum": "0.7"}, exit_code_policy
    )
    master, _ = await h.wait_pod_names(ns, "mnist-e", ["mnist-e-master-0", "mnist-e-worker-0"])
    failed = await h.sim.finish(ns, "mnist-e-master-0", exit_code=0, container_exit_codes={SIDECAR: 1})
    assert failed is not None and failed["status"]["phase"] == "Failed"
    again = await h.wait_recreated(ns, "mnist-e-master-0", master["metadata"]["uid"])
    assert_injected(again, trial, "pytorch")
    job = await h.get(ref, ns, "mnist-e")
    assert judge(trial, job or {}) == (False, False)
    await h.finish_all(ns, "mnist-e")
    job = await finished(h, ref, ns, "mnist-e", "Succeeded")
    assert judge(trial, job) == (False, True)


async def test_pods_wait_while_katibs_webhook_is_down(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """Katib's pod webhook fails closed (failurePolicy Fail): while katib-controller is down the
    API server refuses the trial's pods. kubetrain reports it on the job (Running=False,
    FailedCreatePod), which Katib's failureCondition does not read as a failed trial, and retries:
    once the webhook answers, the pods are created with the collector and the trial succeeds."""
    _, h, hook = env
    hook.down = True
    try:
        ns, trial, _, ref = await start_trial(
            h, "pytorchjob-mnist.yaml", "mnist-f", {"lr": "0.02", "momentum": "0.9"}
        )

        async def refused() -> Obj | None:
            job = await h.get(ref, ns, "mnist-f")
            running = condition(job, "Running")
            return job if running and running["reason"] == "FailedCreatePod" else None

        job = await eventually(refused, what="Running=False FailedCreatePod")
        assert condition(job, "Running")["status"] == "False"
        assert "failed calling webhook" in condition(job, "Running")["message"]
        assert judge(trial, job) == (False, False)
        assert await h.pods(ns, "mnist-f") == []
    finally:
        hook.down = False
    master, _ = await h.wait_pod_names(ns, "mnist-f", ["mnist-f-master-0", "mnist-f-worker-0"])
    assert_injected(master, trial, "pytorch")
    await h.finish_all(ns, "mnist-f")
    job = await finished(h, ref, ns, "mnist-f", "Succeeded")
    assert judge(trial, job) == (False, True)


async def test_a_kubetrain_io_trial_needs_primary_pod_labels_naming_kubetrains_label(
    env: tuple[DevStack, Harness, KatibPodWebhook],
) -> None:
    """Katib defaults primaryPodLabels by kind alone (`KubeflowJobKinds`), so a kubetrain.io
    PyTorchJob trial (katib-config trialResources `PyTorchJob.v1.kubetrain.io`) gets
    `training.kubeflow.org/job-role: master` — a label only pods of kubeflow.org jobs carry: no
    pod is injected. Naming kubetrain's `kubetrain.io/job-role: master` selects the master."""
    _, h, _ = env

    def kubetrain_io(template: Obj) -> None:
        template["trialSpec"]["apiVersion"] = "kubetrain.io/v1"

    ns, _, _, _ = await start_trial(
        h, "pytorchjob-mnist.yaml", "kt-a", {"lr": "0.02", "momentum": "0.6"}, kubetrain_io
    )
    pods = await h.wait_pod_names(ns, "kt-a", ["kt-a-master-0", "kt-a-worker-0"])
    assert [containers(p) for p in pods] == [["pytorch"], ["pytorch"]]
    assert all(p["metadata"]["labels"][LABEL_TRIAL] == "kt-a" for p in pods)

    def kubetrain_labels(template: Obj) -> None:
        kubetrain_io(template)
        template["primaryPodLabels"] = {"kubetrain.io/job-role": "master"}

    ns, trial, _, ref = await start_trial(
        h, "pytorchjob-mnist.yaml", "kt-b", {"lr": "0.02", "momentum": "0.6"}, kubetrain_labels
    )
    master, worker = await h.wait_pod_names(ns, "kt-b", ["kt-b-master-0", "kt-b-worker-0"])
    assert_injected(master, trial, "pytorch")
    assert containers(worker) == ["pytorch"]
    await h.finish_all(ns, "kt-b")
    job = await finished(h, ref, ns, "kt-b", "Succeeded")
    assert judge(trial, job) == (False, True)
