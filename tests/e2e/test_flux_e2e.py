"""Trainer 2.3's Flux ML policy end to end: Trainer's example `flux-distributed`
ClusterTrainingRuntime and `lammps-train-job.yaml` (tests/data/trainer/examples/flux), unmodified
but for their names and namespace, against `kubetrain run` serving trainer.kubeflow.org on the
cluster $KUBECONFIG names, behind the chart's webhooks in URL mode.

Only what holds on devcluster and on a real kube-apiserver whose kubelet is a stand-in (no image
is pulled, so no pod phase is asserted) is checked: the runtime and the TrainJob are admitted; the
pods `<tj>-node-0-0` and `<tj>-node-0-1` are created — so the API server accepted their Flux
volumes (DNS-label names, secret/configMap `defaultMode`), the mounts naming them and the
`flux-installer` init container — with the node command wrapped in Flux's entrypoint; the
ConfigMap `<tj>-flux-entrypoint` and the Secret `<tj>-flux-curve` exist, the TrainJob their
controller, none created after a pod (`metadata.creationTimestamp`, whole seconds: ≤); the
ConfigMap's init.sh names the hosts and the namespace's service domain; deleting the TrainJob has
the garbage collector delete both. Trainer's `numProcPerNode` CEL rule is refused by the API
server with the rule's message, kubetrain's name limit (the ConfigMap's volume name is a DNS label)
at admission, each naming its field. The runtime
is cluster-scoped: it gets a name of its own per run and is deleted at the end. Every object is
read by its name, never by listing a namespace (real clusters add objects of their own)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml
from e2e import scenarios_support as support

from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CONFIG_MAPS,
    PODS,
    SECRETS,
    TRAINJOBS,
    ResourceRef,
)

pytestmark = support.E2E
E2E_API_GROUPS = ("kubetrain.io", "trainer.kubeflow.org")  # what the operator serves (the `cluster` fixture)

Obj = dict[str, Any]
EXAMPLES = support.ROOT / "tests" / "data" / "trainer" / "examples" / "flux"
INSTALLER = "flux-installer"
ENTRYPOINT = "/etc/flux-config/entrypoint.sh"


def load(name: str) -> Obj:
    manifest: Obj = yaml.safe_load((EXAMPLES / name).read_text())
    return manifest


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(cluster: Any) -> AsyncIterator[str]:
    """Trainer's example runtime under a name of this run's (its namespace's); its name."""
    manifest = load("flux-runtime.yaml")
    name = f"flux-distributed-{cluster.namespace}"
    manifest["metadata"]["name"] = name
    await cluster.client.create(CLUSTER_TRAINING_RUNTIMES, manifest)  # admitted
    try:
        yield name
    finally:
        await support.delete_quietly(cluster.client, CLUSTER_TRAINING_RUNTIMES, None, name)


def lammps(namespace: str, runtime: str, name: str = "lammps-flux") -> Obj:
    """The LAMMPS example TrainJob in `namespace`, referring to `runtime`."""
    manifest = load("lammps-train-job.yaml")
    manifest["metadata"] = {"name": name, "namespace": namespace}
    manifest["spec"]["runtimeRef"]["name"] = runtime
    return manifest


def container(pod: Obj, name: str, kind: str = "containers") -> Obj:
    [found] = [c for c in pod["spec"].get(kind) or [] if c["name"] == name]
    result: Obj = found
    return result


async def test_the_lammps_example_gets_flux_pods_config_map_and_secret(cluster: Any, runtime: str) -> None:
    manifest = lammps(cluster.namespace, runtime)
    name = manifest["metadata"]["name"]
    tj = await cluster.client.create(TRAINJOBS, manifest)  # admitted
    pod_names = [f"{name}-node-0-{i}" for i in range(manifest["spec"]["trainer"]["numNodes"])]
    assert pod_names == [f"{name}-node-0-0", f"{name}-node-0-1"]

    async def all_pods() -> list[Obj] | None:
        pods = [await support.read(cluster, PODS, p) for p in pod_names]
        return [p for p in pods if p is not None] if all(pods) else None

    try:
        pods = await support.eventually(all_pods, within=90, what=f"{name}'s pods {pod_names}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- operator log ---\n{cluster.operator.log_tail()}") from None

    config_map_name, secret_name = f"{name}-flux-entrypoint", f"{name}-flux-curve"
    trainer = manifest["spec"]["trainer"]
    for pod in pods:
        installer = container(pod, INSTALLER, "initContainers")
        assert installer["image"] == trainer["env"][0]["value"]  # the example's FLUX_VIEW_IMAGE
        assert installer["command"] == ["/bin/bash", "/etc/flux-config/init.sh"]
        node = container(pod, "node")
        assert node["image"] == trainer["image"]
        assert node["command"] == ["/bin/bash", ENTRYPOINT, " ".join(trainer["command"])]
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes[config_map_name]["configMap"]["name"] == config_map_name
        assert volumes[config_map_name]["configMap"]["defaultMode"] == 0o755
        assert volumes["flux-curve"]["secret"]["secretName"] == secret_name
        assert volumes["flux-curve"]["secret"]["defaultMode"] == 0o400
        mounted = {m["name"] for m in [*node["volumeMounts"], *installer["volumeMounts"]]}
        assert {config_map_name, "flux-curve", "flux-install"} <= mounted <= set(volumes)

    config_map = await support.read(cluster, CONFIG_MAPS, config_map_name)
    secret = await support.read(cluster, SECRETS, secret_name)
    assert config_map is not None, f"ConfigMap {config_map_name} missing while {name}'s pods exist"
    assert secret is not None, f"Secret {secret_name} missing while {name}'s pods exist"
    for child in (config_map, secret):
        [owner] = child["metadata"]["ownerReferences"]
        assert owner["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
        assert (owner["kind"], owner["name"], owner["uid"], owner.get("controller")) == (
            "TrainJob",
            name,
            tj["metadata"]["uid"],
            True,
        )
        for pod in pods:
            # creationTimestamp has whole-second resolution: "no later than", not "before".
            assert support.created_at(child) <= support.created_at(pod), (child["metadata"], pod["metadata"])

    init = config_map["data"]["init.sh"]
    assert f'hosts="{name}-node-0-[0-1]"' in init, init
    assert f"tcp://%h.{name}.{cluster.namespace}.svc.cluster.local:%p" in init, init
    entrypoint = config_map["data"]["entrypoint.sh"]
    nodes, procs = trainer["numNodes"], trainer["numProcPerNode"]
    assert f'mainHost="{name}-node-0-0"' in entrypoint, entrypoint  # the lead broker
    assert f'flags="-N {nodes} -n {nodes * procs}  "' in entrypoint, entrypoint  # `flux run`'s
    certificate = base64.b64decode(secret["data"]["curve.cert"]).decode()
    assert f'name = "{name}"' in certificate and "secret-key = " in certificate, certificate

    await cluster.client.delete(TRAINJOBS, cluster.namespace, name, propagation_policy="Background")
    # The garbage collector learns of the TrainJob CRD (which this module may just have created)
    # only through its periodic discovery: hence the long wait.
    for ref, child_name in ((CONFIG_MAPS, config_map_name), (SECRETS, secret_name)):
        await support.eventually(
            lambda ref=ref, child_name=child_name: _gone(cluster, ref, child_name),
            within=120,
            what=f"{ref.kind} {child_name} collected",
        )


async def _gone(cluster: Any, ref: ResourceRef, name: str) -> bool:
    return await support.read(cluster, ref, name) is None


async def test_a_flux_trainjob_breaking_its_rules_is_refused_naming_the_field(
    cluster: Any, runtime: str
) -> None:
    no_procs = lammps(cluster.namespace, runtime, "lammps-no-procs")
    no_procs["spec"]["trainer"]["numProcPerNode"] = 0
    long_name = lammps(cluster.namespace, runtime, ("lammps-flux-" + "x" * 48)[:48])
    # numProcPerNode 0 breaks the CRD's CEL rule: the API server refuses it before any webhook.
    with pytest.raises(ApiError) as refused:
        await cluster.client.create(TRAINJOBS, no_procs)
    error = refused.value
    assert error.status == 422 and "denied the request" not in error.message, error
    assert (
        "spec.trainer.numProcPerNode: Invalid value: 0: numProcPerNode must be greater than or equal to 1"
        in error.message
    ), error
    assert await support.read(cluster, TRAINJOBS, no_procs["metadata"]["name"]) is None
    for bad, field in ((long_name, "metadata.name"),):
        with pytest.raises(ApiError) as refused:
            await cluster.client.create(TRAINJOBS, bad)
        error = refused.value
        assert error.status in (400, 422), error
        assert "denied the request" in error.message, error  # by the webhook, not the CRD schema
        assert field in error.message, error
        assert await support.read(cluster, TRAINJOBS, bad["metadata"]["name"]) is None
