"""A controller started for a cluster whose domain is not cluster.local, against devcluster: from
`kubetrain controller`'s own command line with training-operator's `CUSTOM_CLUSTER_DOMAIN` in its
environment, a TFJob's TF_CONFIG names every pod `….svc.<domain>` (as training-operator v1.9 does),
and an MPIJob's workers search `<job>.<ns>.svc.<domain>` and its hostfile names hosts
`….svc.<domain>` (mpi-operator's --cluster-domain); `kubetrain dev`'s --cluster-domain reaches
its controller the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import cli
from kubetrain.api.clusterdomain import ClusterDomain
from kubetrain.commands._devflags import devstack_options
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import CONFIG_MAPS
from kubetrain.operator.runtime import ControllerRuntime

from .controller_support import Harness, eventually, job_manifest, pod_env

Obj = dict[str, Any]
DOMAIN = "k8s.corp.example"
PI = Path(__file__).resolve().parents[1] / "data" / "mpi-operator" / "examples" / "v2beta1"


def mpi_pi() -> Obj:
    obj: Obj = yaml.safe_load(next(PI.rglob("pi.yaml")).read_text())
    return obj


async def test_the_controller_writes_the_variables_domain_into_tf_config_and_mpi_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", DOMAIN)
    stack = DevStack(DevStackOptions(controller=False))
    await stack.start()
    h = await Harness.open(stack)
    args = cli.build_parser().parse_args(
        ["controller", "--kubeconfig", stack.cluster.kubeconfig_path, "--no-leader-elect", "--workers", "2"]
    )
    assert args.cluster_domain == ClusterDomain(DOMAIN)
    runtime = ControllerRuntime(args)
    try:
        await runtime.start()
        ns = await h.namespace("domain")
        await h.create_job(job_manifest("TFJob", "mnist", {"PS": 1, "Worker": 2}), ns)
        pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, "mnist", 3)}
        config = json.loads(pod_env(pods["mnist-worker-1"])["TF_CONFIG"])
        assert config["cluster"] == {
            "ps": [f"mnist-ps-0.mnist.{ns}.svc.{DOMAIN}:2222"],
            "worker": [f"mnist-worker-{i}.mnist.{ns}.svc.{DOMAIN}:2222" for i in range(2)],
        }
        assert config["task"] == {"type": "worker", "index": 1}

        pi = mpi_pi()
        await h.create_job(pi, ns)
        name = pi["metadata"]["name"]
        mpi_pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, name, 3)}
        for i in range(2):
            spec = mpi_pods[f"{name}-worker-{i}"]["spec"]
            assert spec["dnsConfig"]["searches"] == [f"{name}.{ns}.svc.{DOMAIN}"]
        assert "dnsConfig" not in mpi_pods[f"{name}-launcher-0"]["spec"]

        async def hostfile() -> str | None:
            cm = await h.get(CONFIG_MAPS, ns, f"{name}-config")
            return cm["data"]["hostfile"] if cm is not None else None

        assert await eventually(hostfile, what="the hostfile") == "".join(
            f"{name}-worker-{i}.{name}.{ns}.svc.{DOMAIN} slots=1\n" for i in range(2)
        )
    finally:
        await runtime.stop()
        await h.close()
        await stack.stop()


async def test_kubetrain_dev_passes_its_flag_to_its_controller() -> None:
    """`kubetrain dev --cluster-domain`, through the options the dev command builds from its
    flags: the MPIJob workers search their subdomain under the domain."""
    args = cli.build_parser().parse_args(["dev", "--cluster-domain", "corp.example", "--workers", "2"])
    options = devstack_options(args)
    assert options["cluster_domain"] == ClusterDomain("corp.example")
    async with DevStack(DevStackOptions(**options)) as stack:
        h = await Harness.open(stack)
        try:
            ns = await h.namespace("devdomain")
            pi = mpi_pi()
            await h.create_job(pi, ns)
            name = pi["metadata"]["name"]
            pods = {p["metadata"]["name"]: p for p in await h.wait_pods(ns, name, 3)}
            assert pods[f"{name}-worker-0"]["spec"]["dnsConfig"]["searches"] == [
                f"{name}.{ns}.svc.corp.example"
            ]
        finally:
            await h.close()
