"""KubeDL's own example manifests (tests/data/kubedl, unchanged) applied to devcluster with
kubetrain serving training.kubedl.io: each runnable one is stored in KubeDL's layout, runs to
Succeeded with KubeDL's pod labels; the ones with fields kubetrain does not run are refused by
the webhook naming the field."""

from __future__ import annotations

import io
from typing import Any

import jobs
from kubedl_examples import RUNNABLE, example_job

from kubetrain.commands._devmanifests import apply_manifest, job_ref
from kubetrain.dev.stack import DevStack, DevStackOptions
from kubetrain.kube.resources import CONFIG_MAPS, PODS

from .controller_support import eventually

REFUSED = {
    "tf/tf_job_mnist_modelversion.yaml": "spec.modelVersion: Forbidden: not supported by kubetrain",
    "tf/tf_job_mnist_cache.yaml": "spec.cacheBackend: Forbidden: not supported by kubetrain",
}


def _condition(job: dict[str, Any], ctype: str) -> bool:
    return any(
        c.get("type") == ctype and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


async def test_kubedl_examples_apply_unchanged_and_succeed() -> None:
    async with DevStack(
        DevStackOptions(default_run_seconds=0.2, api_groups=("training.kubedl.io",))
    ) as stack:
        out = io.StringIO()
        created = []
        for name in RUNNABLE:
            manifest = example_job(name)
            result = await apply_manifest(stack, manifest, out)
            assert result is not None, f"{name}: {out.getvalue()}"
            assert result["apiVersion"] == "training.kubedl.io/v1alpha1"
            assert "runPolicy" not in result["spec"]  # stored in KubeDL's layout
            for key, value in manifest["spec"].items():
                if key != next(k for k in manifest["spec"] if k.endswith("ReplicaSpecs")):
                    assert result["spec"][key] == value, (name, key)
            created.append(result)
        for job in created:
            ref, meta = job_ref(job), job["metadata"]
            assert ref.group == "training.kubedl.io" and ref.version == "v1alpha1"

            async def done(ref: Any = ref, meta: Any = meta) -> bool:
                got = await stack.kube.get(ref, meta["namespace"], meta["name"])
                assert not _condition(got, "Failed"), got["status"]
                return _condition(got, "Succeeded")

            await eventually(
                done, within=60, what=f"{job['kind']}.training.kubedl.io {meta['name']} to succeed"
            )
        pods = (await stack.kube.list(PODS, "kubedl", label_selector="group-name=training.kubedl.io"))[
            "items"
        ]
        names = {p["metadata"]["labels"]["job-name"] for p in pods}
        assert {"mnist", "pytorch-dist-sendrecv-example"} <= names
        for name, message in REFUSED.items():
            out = io.StringIO()
            manifest = example_job(name)
            manifest["metadata"]["namespace"] = "refused"  # tf_job_mnist_volume.yaml has the same name
            assert await apply_manifest(stack, manifest, out) is None
            assert message in out.getvalue(), out.getvalue()


async def test_kubedl_fields_the_crd_used_to_prune_reach_the_webhook() -> None:
    """A KubeDL MPIJob's `mpiDistribution` is stored and run (IntelMPI: `host:slots` hostfile);
    a replica's `spotReplicaSpec` is refused naming it, not pruned away by the CRD."""
    async with DevStack(
        DevStackOptions(default_run_seconds=0.2, api_groups=("training.kubedl.io",))
    ) as stack:
        out = io.StringIO()
        mpi = jobs.job(
            "MPIJob",
            "intel",
            {"Launcher": 1, "Worker": 2},
            namespace="kubedl",
            spec_extra={"mpiDistribution": "IntelMPI", "cleanPodPolicy": "Running"},
            api_version="training.kubedl.io/v1alpha1",
        )
        stored = await apply_manifest(stack, mpi, out)
        assert stored is not None, out.getvalue()
        assert (stored["spec"]["mpiDistribution"], stored["spec"]["mpiImplementation"]) == (
            "IntelMPI",
            "Intel",
        )

        async def succeeded() -> bool:
            got = await stack.kube.get(job_ref(stored), "kubedl", "intel")
            assert not _condition(got, "Failed"), got["status"]
            return _condition(got, "Succeeded")

        await eventually(succeeded, within=60, what="MPIJob.training.kubedl.io intel to succeed")
        config = await stack.kube.get(CONFIG_MAPS, "kubedl", "intel-config")
        assert config["data"]["hostfile"].splitlines()[0] == "intel-worker-0.intel.kubedl.svc:1"
        tf = example_job("tf/tf_job_mnist.yaml", namespace="spot")
        tf["spec"]["tfReplicaSpecs"]["Worker"]["spotReplicaSpec"] = {"spotReplicaNumber": 1}
        out = io.StringIO()
        assert await apply_manifest(stack, tf, out) is None
        assert "spec.tfReplicaSpecs[Worker].spotReplicaSpec: Forbidden" in out.getvalue(), out.getvalue()
