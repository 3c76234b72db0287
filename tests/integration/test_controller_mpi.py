"""MPIJobs through the real controller against devcluster: mpi-operator's own v2beta1 examples
(tests/data/mpi-operator, only apiVersion changed) run to Succeeded with their ConfigMap (hostfile,
discover_hosts.sh kept current), their SSH Secret (created, never read by the operator) mounted
into launcher and workers; WaitForWorkersReady holds the launcher back until every worker is
Ready."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import CONFIG_MAPS, SECRETS

from .controller_support import Harness, eventually, is_true

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data" / "mpi-operator" / "examples" / "v2beta1"
EXAMPLES = {
    "pi.yaml": ("OpenMPI", "{} slots=1\n"),
    "pi-intel.yaml": ("Intel", "{}:1\n"),
    "pi-mpich.yaml": ("MPICH", "{}:1\n"),
    "tensorflow-mnist.yaml": ("OpenMPI", "{} slots=1\n"),
    "tensorflow-benchmarks.yaml": ("OpenMPI", "{} slots=1\n"),
}


def example(name: str) -> Obj:
    path = next(DATA.rglob(name))
    obj: Obj = yaml.safe_load(path.read_text())
    assert obj["apiVersion"] == "kubetrain.io/v1"
    return obj


@pytest.mark.parametrize("file", sorted(EXAMPLES))
async def test_mpi_operator_example_runs_to_succeeded(env: tuple[DevStack, Harness], file: str) -> None:
    _, h = env
    manifest = example(file)
    implementation, line = EXAMPLES[file]
    name = manifest["metadata"]["name"]
    ns = await h.namespace("mpi")
    job = await h.create_job(manifest, ns)
    assert job["spec"].get("mpiImplementation", "OpenMPI") == implementation  # defaulted by the webhook
    assert job["spec"]["launcherCreationPolicy"] == "AtStartup"
    await h.wait_pods(ns, name, 3)

    secret = await h.get(SECRETS, ns, f"{name}-ssh")
    assert secret is not None and secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-privatekey"]).startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert secret["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    hosts = [f"{name}-worker-{i}.{name}.{ns}.svc" for i in range(2)]

    async def config_current() -> Obj | None:
        config = await h.get(CONFIG_MAPS, ns, f"{name}-config")
        want = "#!/bin/sh\n" + "".join(f"echo {host}\n" for host in hosts)
        return config if config is not None and config["data"]["discover_hosts.sh"] == want else None

    # The workers run: discover_hosts.sh lists both.
    config = await eventually(config_current, what="discover_hosts.sh listing the running workers")
    assert config["data"]["hostfile"] == "".join(line.format(host) for host in hosts)

    launcher = await h.pod(ns, f"{name}-launcher-0")
    assert launcher is not None
    volumes = {v["name"]: v for v in launcher["spec"]["volumes"]}
    assert volumes["ssh-auth"]["secret"]["secretName"] == f"{name}-ssh"
    assert volumes["mpi-job-config"]["configMap"]["name"] == f"{name}-config"
    worker = await h.pod(ns, f"{name}-worker-0")
    assert worker is not None
    assert [v["name"] for v in worker["spec"]["volumes"]] == ["ssh-auth"]

    await h.wait_condition("MPIJob", ns, name, "Running")
    await h.sim.finish(ns, f"{name}-launcher-0")
    done = await h.wait_condition("MPIJob", ns, name, "Succeeded")
    assert not is_true(done, "Failed")
    # cleanPodPolicy Running (as every example sets it): the workers are deleted.
    await h.wait_pod_names(ns, name, [f"{name}-launcher-0"])


async def test_wait_for_workers_ready_creates_the_launcher_after_the_workers(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    manifest = example("pi.yaml")
    manifest["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    worker = manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {"annotations": {"sim.kubetrain.io/start-seconds": "1"}}
    ns = await h.namespace("mpiw")
    await h.create_job(manifest, ns)
    # Not "exactly two pods Running": the launcher follows the Ready workers within some 50 ms,
    # which a poll on a loaded machine can miss, and then never sees two again. Whether the
    # launcher came too early is what `assert_ready_by` below checks: the workers start 1 s
    # after they are made, so a launcher made with them was created before they were Ready.
    workers = ["pi-worker-0", "pi-worker-1"]

    async def workers_made() -> bool:
        names = {p["metadata"]["name"] for p in await h.pods(ns, "pi")}
        assert names <= {*workers, "pi-launcher-0"}, f"unexpected pods {sorted(names)}"
        return names >= set(workers)

    await eventually(workers_made, what="both worker pods")

    launcher = await eventually(lambda: h.pod(ns, "pi-launcher-0"), what="the launcher pod")
    # The controller made it once it saw both workers Ready: they were Ready by its creation.
    await h.assert_ready_by(ns, workers, launcher["metadata"]["creationTimestamp"])
    await h.sim.finish(ns, "pi-launcher-0")
    await h.wait_condition("MPIJob", ns, "pi", "Succeeded")


async def test_a_failed_secret_create_holds_the_pods_back_and_is_retried(
    env: tuple[DevStack, Harness],
) -> None:
    _, h = env
    ns = await h.namespace("mpif")
    rule = h.faults.fail(verb="create", resource="secrets", namespace=ns, status=500, count=1)
    await h.create_job(example("pi.yaml"), ns)
    await h.wait_event(ns, "pi", "FailedCreateSecret")
    pods = await h.wait_pods(ns, "pi", 3)  # after the retry with back-off
    assert rule.exhausted
    secret = await h.get(SECRETS, ns, "pi-ssh")
    assert secret is not None
    # No pod was created before the Secret and the ConfigMap existed.
    created = min(p["metadata"]["creationTimestamp"] for p in pods)
    config = await h.get(CONFIG_MAPS, ns, "pi-config")
    assert config is not None
    assert secret["metadata"]["creationTimestamp"] <= created
    assert config["metadata"]["creationTimestamp"] <= created


async def test_an_existing_secret_of_the_name_is_used_as_is(env: tuple[DevStack, Harness]) -> None:
    """The operator cannot read Secrets: a create answered 409 counts as done (operations.md,
    "Threat model")."""
    _, h = env
    ns = await h.namespace("mpie")
    existing = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pi-ssh"},
        "type": "kubernetes.io/ssh-auth",
        "data": {"ssh-privatekey": base64.b64encode(b"k").decode(), "ssh-publickey": "cA=="},
    }
    await h.kube.create(SECRETS, existing, namespace=ns)
    await h.create_job(example("pi.yaml"), ns)
    await h.wait_pods(ns, "pi", 3)
    secret = await h.get(SECRETS, ns, "pi-ssh")
    assert secret is not None and secret["data"]["ssh-publickey"] == "cA=="
    assert "FailedCreateSecret" not in await h.event_reasons(ns, "pi")
