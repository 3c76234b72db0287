"""Trainer 2.3's Flux example (`examples/flux`: the `flux-distributed` ClusterTrainingRuntime and
the LAMMPS TrainJob, unmodified) runs on devcluster: the entrypoint ConfigMap and the CURVE Secret
(a random key pair) are created before the first pod, owned by the TrainJob; both nodes get the installer init
container and the wrapped command; the TrainJob completes when its nodes do. A TrainJob resumed
with more nodes gets its ConfigMap rewritten (the new host list) before its new pods; the webhook
refuses Trainer's invalid Flux TrainJobs naming the field."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from kubetrain.certs.curve import z85
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import CLUSTER_TRAINING_RUNTIMES, CONFIG_MAPS, SECRETS, TRAINJOBS

from .controller_support import CONTROLLER_USER_AGENT, Harness, eventually, open_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[1] / "data/trainer/examples/flux"


def example(name: str) -> Obj:
    loaded: Obj = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[Harness]:
    async for _stack, h in open_stack(api_groups=("kubetrain.io", "trainer.kubeflow.org")):
        await h.kube.create(CLUSTER_TRAINING_RUNTIMES, example("flux-runtime.yaml"))
        yield h


def operator_writes(h: Harness, ns: str) -> list[tuple[str, str]]:
    """(verb, resource) of the operator's creates and updates in `ns`, in the order received."""
    return [
        (r.verb, r.resource)
        for r in h.requests.records
        if r.namespace == ns
        and r.verb in ("create", "update")
        and r.user_agent.startswith(CONTROLLER_USER_AGENT)
        and r.resource in ("pods", "configmaps", "secrets")
    ]


def node_container(pod: Obj) -> Obj:
    container: Obj = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
    return container


async def test_the_lammps_example_runs_with_its_configmap_and_secret_first(env: Harness) -> None:
    h = env
    ns = await h.namespace("flux")
    tj = await h.kube.create(TRAINJOBS, example("lammps-train-job.yaml"), namespace=ns)
    pods = await h.wait_pod_names(ns, "lammps-flux", ["lammps-flux-node-0-0", "lammps-flux-node-0-1"])
    for pod in pods:
        assert [c["name"] for c in pod["spec"]["initContainers"]] == ["flux-installer"]
        assert (
            pod["spec"]["initContainers"][0]["image"]
            == "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
        )
        assert node_container(pod)["command"] == [
            "/bin/bash",
            "/etc/flux-config/entrypoint.sh",
            "lmp -v x 4 -v y 4 -v z 4 -in in.reaxc.hns -nocite",
        ]
    owner = {"kind": "TrainJob", "name": "lammps-flux", "uid": tj["metadata"]["uid"], "controller": True}
    cm = await h.get(CONFIG_MAPS, ns, "lammps-flux-flux-entrypoint")
    secret = await h.get(SECRETS, ns, "lammps-flux-flux-curve")
    assert cm is not None and secret is not None
    for obj in (cm, secret):
        ref = obj["metadata"]["ownerReferences"][0]
        assert {k: ref[k] for k in owner} == owner
    assert 'hosts="lammps-flux-node-0-[0-1]"' in cm["data"]["init.sh"]
    assert f"tcp://%h.lammps-flux.{ns}.svc.cluster.local:%p" in cm["data"]["init.sh"]
    cert = base64.b64decode(secret["data"]["curve.cert"]).decode()
    assert '    name = "lammps-flux"' in cert and "    secret-key = " in cert
    # a random key pair, not Trainer's SHA-256 of the uid, which any reader of the TrainJob knows
    uid_key = X25519PrivateKey.from_private_bytes(hashlib.sha256(tj["metadata"]["uid"].encode()).digest())
    assert z85(uid_key.private_bytes_raw()) not in cert
    writes = operator_writes(h, ns)
    first_pod = writes.index(("create", "pods"))
    assert {("create", "configmaps"), ("create", "secrets")} <= set(writes[:first_pod])

    await h.finish_all(ns, "lammps-flux")

    async def complete() -> Obj | None:
        job = await h.get(TRAINJOBS, ns, "lammps-flux")
        conditions = ((job or {}).get("status") or {}).get("conditions") or []
        return job if any(c["type"] == "Complete" and c["status"] == "True" for c in conditions) else None

    await eventually(complete, what="the Flux TrainJob Complete")


async def test_a_resumed_trainjob_with_more_nodes_gets_its_hosts_rewritten_first(env: Harness) -> None:
    h = env
    ns = await h.namespace("fluxresume")
    job = example("lammps-train-job.yaml")
    job["metadata"]["name"] = "grow"
    await h.kube.create(TRAINJOBS, job, namespace=ns)
    await h.wait_pod_names(ns, "grow", ["grow-node-0-0", "grow-node-0-1"])
    await h.kube.patch(TRAINJOBS, ns, "grow", {"spec": {"suspend": True}})
    await h.wait_pod_names(ns, "grow", [])
    h.requests.records.clear()
    await h.kube.patch(TRAINJOBS, ns, "grow", {"spec": {"trainer": {"numNodes": 3}}})
    await h.kube.patch(TRAINJOBS, ns, "grow", {"spec": {"suspend": False}})
    await h.wait_pod_names(ns, "grow", ["grow-node-0-0", "grow-node-0-1", "grow-node-0-2"])
    cm = await h.get(CONFIG_MAPS, ns, "grow-flux-entrypoint")
    assert cm is not None
    assert 'hosts="grow-node-0-[0-2]"' in cm["data"]["init.sh"]
    assert 'flags="-N 3 -n 12  "' in cm["data"]["entrypoint.sh"]
    writes = operator_writes(h, ns)
    assert writes.index(("update", "configmaps")) < writes.index(("create", "pods"))
    assert ("create", "secrets") not in writes  # the Secret exists: not sent again
    assert ("update", "secrets") not in writes  # nor changed: the brokers keep their certificate


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"spec": {"trainer": {"numProcPerNode": 0}}}, "spec.trainer.numProcPerNode"),
        ({"metadata": {"name": "f" * 48}}, "metadata.name"),
    ],
)
async def test_the_webhook_refuses_an_invalid_flux_trainjob(env: Harness, change: Obj, field: str) -> None:
    h = env
    ns = await h.namespace("fluxbad")
    job = copy.deepcopy(example("lammps-train-job.yaml"))
    for key, value in change.items():
        for inner, v in value.items():
            if isinstance(v, dict):
                job[key][inner].update(v)
            else:
                job[key][inner] = v
    with pytest.raises(ApiError) as refused:
        await h.kube.create(TRAINJOBS, job, namespace=ns)
    assert refused.value.status == 422
    assert str(refused.value).count(field) == 1  # one error for the field, not the generic one too
