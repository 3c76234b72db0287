"""mpijobs.kubeflow.org served as v2beta1 (storage) and v1 through the conversion webhook at
/convert, with devcluster converting as kube-apiserver does (docs/behaviour.md §1, "MPIJob
versions and conversion"): training-operator's v1 examples and mpi-operator's v2beta1 examples
apply unchanged with kubectl and run to Succeeded; `kubectl get mpijobs.v1.kubeflow.org` and
`.v2beta1.` both list every MPIJob; a v1 write keeps the v2beta1-only fields; a v1 MPIJob gets
the SSH-delivery warning, and one whose mainContainer kubetrain cannot honour is refused with the
field path. The webhook records the version each was created at (requestKind), so a v1 MPIJob's
pods carry training-operator v1's labels (Launcher `job-role: master`) and a v2beta1 one's
mpi-operator's (`job-role: launcher`), through later writes at the other version too."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import ResourceRef

from .controller_support import KUBEFLOW_API_GROUPS, Harness, eventually, is_true

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data"
V1_EXAMPLES = DATA / "training-operator-mpi" / "examples" / "mpi"
V2_EXAMPLES = DATA / "mpi-operator" / "examples" / "v2beta1"
V1 = ResourceRef("kubeflow.org", "v1", "mpijobs", "MPIJob", True)
V2 = ResourceRef("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)
CREATED = "kubetrain.io/created-api-version"
KF = "training.kubeflow.org/"


def kubeflow_labels(pod: Obj) -> dict[str, str]:
    return {k[len(KF) :]: v for k, v in pod["metadata"]["labels"].items() if k.startswith(KF)}


STACK_OPTIONS = {"api_groups": KUBEFLOW_API_GROUPS}


async def kubectl(stack: DevStack, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    return await run_kubectl(stack.cluster.kubeconfig_path, *args, stdin=stdin)


def read(path: Path) -> str:
    return path.read_text()


async def run_to_succeeded(h: Harness, ns: str, name: str, ref: ResourceRef) -> Obj:
    await h.wait_pods(ns, name, 3)
    await h.sim.finish(ns, f"{name}-launcher-0")

    async def succeeded() -> Obj | None:
        job = await h.get(ref, ns, name)
        return job if is_true(job, "Succeeded") else None

    done: Obj = await eventually(succeeded, what=f"MPIJob {name} Succeeded (read at {ref.version})")
    return done


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("path", sorted(V1_EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
async def test_training_operator_v1_examples_apply_unchanged_and_run(
    env: tuple[DevStack, Harness], path: Path
) -> None:
    stack, h = env
    ns = await h.namespace("mpiv1")
    text = read(path)
    manifest = yaml.safe_load(text)
    name = manifest["metadata"]["name"]
    code, out, err = await kubectl(stack, "apply", "-n", ns, "-f", "-", stdin=text)
    assert code == 0, err
    # The SSH delivery warning, as kubectl prints admission warnings.
    assert "Warning: kubeflow.org/v1 MPIJob: run as mpi-operator v2beta1 runs it" in err
    assert "over SSH, not through kubectl exec" in err
    # Stored as v2beta1 (the controller reads that); v1 readers see their own layout back.
    stored = await h.kube.get(V2, ns, name)
    assert stored["apiVersion"] == "kubeflow.org/v2beta1"
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert stored["spec"]["launcherCreationPolicy"] == "AtStartup"  # defaulted at admission
    as_v1 = await h.kube.get(V1, ns, name)
    assert as_v1["apiVersion"] == "kubeflow.org/v1"
    assert as_v1["spec"]["mpiReplicaSpecs"] == stored["spec"]["mpiReplicaSpecs"]
    assert "launcherCreationPolicy" not in as_v1["spec"]
    assert (
        json.loads(as_v1["metadata"]["annotations"]["kubetrain.io/mpijob-v2beta1-fields"])[
            "launcherCreationPolicy"
        ]
        == "AtStartup"
    )
    # kubectl lists it at both versions.
    for version in ("v1", "v2beta1"):
        code, out, err = await kubectl(
            stack, "get", f"mpijobs.{version}.kubeflow.org", "-n", ns, "-o", "json"
        )
        assert code == 0, err
        items = json.loads(out)["items"]
        assert [(i["apiVersion"], i["metadata"]["name"]) for i in items] == [
            (f"kubeflow.org/{version}", name)
        ]
    await h.wait_pods(ns, name, 3)
    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None
    # Created at v1: recorded, and training-operator v1's labels.
    assert stored["metadata"]["annotations"][CREATED] == "kubeflow.org/v1"
    assert kubeflow_labels(launcher) == {
        "operator-name": "mpijob-controller",
        "job-name": name,
        "replica-type": "launcher",
        "job-role": "master",
    }
    worker = await h.pod(ns, f"{name}-worker-1")
    assert worker is not None
    assert kubeflow_labels(worker) == {
        "operator-name": "mpijob-controller",
        "job-name": name,
        "replica-type": "worker",
        "replica-index": "1",
    }
    done = await run_to_succeeded(h, ns, name, V1)
    assert done["apiVersion"] == "kubeflow.org/v1"
    # The pods belong to the v2beta1 object the controller reconciles.
    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None
    assert launcher["metadata"]["ownerReferences"][0]["apiVersion"] == "kubeflow.org/v2beta1"


@pytest.mark.parametrize(
    "file",
    ["pi.yaml", "pi-intel.yaml", "pi-mpich.yaml", "tensorflow-mnist.yaml", "tensorflow-benchmarks.yaml"],
)
async def test_mpi_operator_v2beta1_examples_run_and_read_as_v1(
    env: tuple[DevStack, Harness], file: str
) -> None:
    _, h = env
    ns = await h.namespace("mpiv2")
    manifest: Obj = yaml.safe_load(next(V2_EXAMPLES.rglob(file)).read_text())
    manifest["apiVersion"] = (
        "kubeflow.org/v2beta1"  # mpi-operator's own apiVersion (the corpus uses kubetrain.io)
    )
    name = manifest["metadata"]["name"]
    created = await h.kube.create(V2, manifest, namespace=ns)
    assert created["apiVersion"] == "kubeflow.org/v2beta1"
    as_v1 = await h.kube.get(V1, ns, name)
    v2_only = json.loads(as_v1["metadata"]["annotations"]["kubetrain.io/mpijob-v2beta1-fields"])
    assert v2_only.get("sshAuthMountPath") == manifest["spec"].get("sshAuthMountPath", "/root/.ssh")
    # A v1 client's write (a label) keeps what only v2beta1 has.
    patched = await h.kube.patch(V1, ns, name, {"metadata": {"labels": {"team": "hpc"}}})
    assert patched["apiVersion"] == "kubeflow.org/v1" and patched["metadata"]["labels"]["team"] == "hpc"
    again = await h.kube.get(V2, ns, name)
    assert again["spec"] == created["spec"] and again["metadata"]["labels"]["team"] == "hpc"
    # Created at v2beta1, and still so after the v1 write: mpi-operator's labels.
    assert again["metadata"]["annotations"][CREATED] == "kubeflow.org/v2beta1"
    await h.wait_pods(ns, name, 3)
    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None
    assert kubeflow_labels(launcher)["job-role"] == "launcher"
    assert kubeflow_labels(launcher)["operator-name"] == "mpi-operator"
    await run_to_succeeded(h, ns, name, V2)


async def test_the_recorded_version_survives_writes_and_cannot_change(env: tuple[DevStack, Harness]) -> None:
    """A v1 MPIJob updated at v2beta1 (as Kueue writes MPIJobs) and replaced at v1 without the
    annotation keeps it; changing it is refused naming the annotation."""
    _, h = env
    ns = await h.namespace("mpirec")
    manifest = yaml.safe_load((V1_EXAMPLES / "tensorflow-mnist.yaml").read_text())
    name = manifest["metadata"]["name"]
    await h.kube.create(V1, copy.deepcopy(manifest), namespace=ns)
    patched = await h.kube.patch(V2, ns, name, {"metadata": {"labels": {"queue": "a"}}})
    assert patched["metadata"]["annotations"][CREATED] == "kubeflow.org/v1"

    async def replace_with_manifest() -> Obj | None:
        current = await h.kube.get(V1, ns, name)
        replaced = copy.deepcopy(manifest)  # the original manifest: no annotation of kubetrain's
        replaced["metadata"].update(namespace=ns, resourceVersion=current["metadata"]["resourceVersion"])
        replaced["spec"] = current["spec"]
        try:
            out: Obj = await h.kube.replace(V1, replaced)
        except ApiError as err:
            if err.status == 409:  # the controller wrote the status meanwhile
                return None
            raise
        return out

    after = await eventually(replace_with_manifest, what="a PUT at v1 of the original manifest")
    assert after["metadata"]["annotations"][CREATED] == "kubeflow.org/v1"
    with pytest.raises(ApiError) as caught:
        await h.kube.patch(V2, ns, name, {"metadata": {"annotations": {CREATED: "kubeflow.org/v2beta1"}}})
    assert f"metadata.annotations[{CREATED}]: Forbidden: is immutable" in str(caught.value)
    await h.wait_pods(ns, name, 3)
    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None and kubeflow_labels(launcher)["job-role"] == "master"


async def test_a_v1_watch_gets_converted_events(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("mpiwatch")
    page = await h.kube.list(V1, ns)
    events: list[Obj] = []

    async def collect() -> None:
        async for etype, obj in h.kube.watch(V1, ns, resource_version=page["metadata"]["resourceVersion"]):
            events.append({"type": etype, "object": obj})

    task = asyncio.create_task(collect())
    try:
        manifest = yaml.safe_load((V1_EXAMPLES / "tensorflow-mnist.yaml").read_text())
        await h.kube.create(V1, manifest, namespace=ns)
        await eventually(lambda: bool(events), what="a watch event at v1")
        assert events[0]["type"] == "ADDED"
        assert events[0]["object"]["apiVersion"] == "kubeflow.org/v1"
        assert "mpiImplementation" not in events[0]["object"]["spec"]
    finally:
        task.cancel()


async def test_a_main_container_kubetrain_cannot_honour_is_refused_with_its_path(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("mpimain")
    manifest = yaml.safe_load((V1_EXAMPLES / "tensorflow-mnist-elastic.yaml").read_text())
    manifest["spec"]["mainContainer"] = "mpi"  # the containers are mpi-launcher and mpi-worker
    with pytest.raises(ApiError) as caught:
        await h.kube.create(V1, manifest, namespace=ns)
    message = str(caught.value)
    assert "spec.mainContainer" in message
    assert "first container of each pod" in message and 'Launcher starts with "mpi-launcher"' in message
    # Naming the first container is fine (the container training-operator decorates).
    manifest["spec"]["mainContainer"] = "mpi-launcher"
    for replica in manifest["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["name"] = "mpi-launcher"
    created = await h.kube.create(V1, manifest, namespace=ns)
    assert created["spec"]["mainContainer"] == "mpi-launcher"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_an_exported_job_created_again_keeps_its_recorded_version(
    env: tuple[DevStack, Harness],
) -> None:
    """`kubectl get -o yaml` reads MPIJobs at v1 (the CRD's preferred version): a v2beta1 job
    exported and created again from that file (at v1) keeps mpi-operator's labels, with a
    warning saying so."""
    stack, h = env
    ns = await h.namespace("mpiexport")
    manifest: Obj = yaml.safe_load(next(V2_EXAMPLES.rglob("pi.yaml")).read_text())
    manifest["apiVersion"] = "kubeflow.org/v2beta1"
    name = manifest["metadata"]["name"]
    await h.kube.create(V2, manifest, namespace=ns)
    code, out, err = await kubectl(stack, "get", "mpijobs.kubeflow.org", name, "-n", ns, "-o", "json")
    assert code == 0, err
    exported = json.loads(out)
    assert exported["apiVersion"] == "kubeflow.org/v1"
    assert exported["metadata"]["annotations"][CREATED] == "kubeflow.org/v2beta1"
    await h.kube.delete(V2, ns, name)

    async def gone() -> bool | None:
        try:
            await h.kube.get(V2, ns, name)
        except ApiError as err:
            return True if err.status == 404 else None
        return None

    await eventually(gone, what=f"MPIJob {name} deleted")
    exported.pop("status", None)
    for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        exported["metadata"].pop(field, None)
    code, out, err = await kubectl(stack, "create", "-n", ns, "-f", "-", stdin=json.dumps(exported))
    assert code == 0, err
    assert f'{CREATED}] is "kubeflow.org/v2beta1": the job\'s pods get the labels of' in err
    again = await h.kube.get(V2, ns, name)
    assert again["metadata"]["annotations"][CREATED] == "kubeflow.org/v2beta1"
    await h.wait_pods(ns, name, 3)
    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None and kubeflow_labels(launcher)["job-role"] == "launcher"


async def test_managed_fields_are_recorded_at_the_version_each_writer_used(
    env: tuple[DevStack, Harness],
) -> None:
    """kube-apiserver's field manager runs at the request's version: a v1 create is recorded at
    kubeflow.org/v1, a v2beta1 edit at kubeflow.org/v2beta1 takes the field from the v1 manager
    (compared at v1 through the conversion webhook), and a v1 apply conflicts with the v2beta1
    manager, named with its version."""
    _, h = env
    ns = await h.namespace("mpifields")
    manifest = yaml.safe_load((V1_EXAMPLES / "tensorflow-mnist.yaml").read_text())
    name = manifest["metadata"]["name"]
    made = await h.kube.request(
        "create", "POST", V1.path(ns, None), query={"fieldManager": "maker"}, body={**manifest}
    )
    (maker,) = [e for e in made["metadata"]["managedFields"] if e["manager"] == "maker"]
    assert maker["apiVersion"] == "kubeflow.org/v1" and "f:slotsPerWorker" in maker["fieldsV1"]["f:spec"]
    assert "f:mpiImplementation" not in maker["fieldsV1"]["f:spec"]  # a v2beta1 field

    await h.kube.request(
        "patch",
        "PATCH",
        V2.path(ns, name),
        query={"fieldManager": "editor"},
        body={"spec": {"slotsPerWorker": 2}},
        content_type="application/merge-patch+json",
    )
    edited = await h.kube.get(V1, ns, name)
    owners = {e["manager"]: e for e in edited["metadata"]["managedFields"]}
    assert owners["editor"]["apiVersion"] == "kubeflow.org/v2beta1"
    assert owners["editor"]["fieldsV1"] == {"f:spec": {"f:slotsPerWorker": {}}}
    assert "f:slotsPerWorker" not in owners["maker"]["fieldsV1"]["f:spec"]

    applied = {
        **manifest,
        "metadata": {"name": name, "namespace": ns},
        "spec": {**manifest["spec"], "slotsPerWorker": 3},
    }
    with pytest.raises(ApiError) as clash:
        await h.kube.request(
            "patch",
            "PATCH",
            V1.path(ns, name),
            query={"fieldManager": "ci"},
            body=applied,
            content_type="application/apply-patch+yaml",
        )
    assert clash.value.status == 409
    assert 'conflict with "editor" using kubeflow.org/v2beta1: .spec.slotsPerWorker' in str(clash.value)
    done = await h.kube.request(
        "patch",
        "PATCH",
        V1.path(ns, name),
        query={"fieldManager": "ci", "force": "true"},
        body=applied,
        content_type="application/apply-patch+yaml",
    )
    owners = {e["manager"]: e for e in done["metadata"]["managedFields"]}
    assert done["apiVersion"] == "kubeflow.org/v1" and done["spec"]["slotsPerWorker"] == 3
    assert owners["ci"]["apiVersion"] == "kubeflow.org/v1" and owners["ci"]["operation"] == "Apply"
    assert "editor" not in owners  # it owned only what ci took
