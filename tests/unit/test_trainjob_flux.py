"""Trainer 2.3's Flux ML policy (`mlPolicy.flux`): the `node` step wrapped in Flux (command, init
container, volumes, mounts), its entrypoint ConfigMap and CURVE Secret, and Trainer's rules — the
cases of Trainer's own flux_test.go and its example manifests (tests/data/trainer/examples/flux)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.jobs.trainjob import flux
from kubetrain.jobs.trainjob.children import JobSetChildren
from kubetrain.jobs.trainjob.model import ResolvedTrainJob
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.runtimerules import validate_runtime

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[1] / "data/trainer/examples/flux"


def example(name: str) -> Obj:
    loaded: Obj = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


def runtime(procs: int | None = None, node: Obj | None = None) -> Obj:
    """Trainer's example `flux-distributed` runtime; `procs` its policy's numProcPerNode, `node`
    fields set on its `node` container."""
    rt = example("flux-runtime.yaml")
    if procs is not None:
        rt["spec"]["mlPolicy"]["flux"]["numProcPerNode"] = procs
    container = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    container.update(node or {})
    return rt


def trainjob(name: str = "test-job", uid: str = "test-uid", **trainer: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"runtimeRef": {"name": "flux-distributed"}, "trainer": trainer},
    }


def resolved(job: Obj, rt: Obj | None = None) -> ResolvedTrainJob:
    out, errors = resolve(job, rt if rt is not None else runtime())
    assert errors == [] and out is not None
    return out


def pod_spec(r: ResolvedTrainJob) -> Obj:
    step = r.step("node")
    assert step is not None
    spec: Obj = step.pod_template["spec"]
    return spec


def node(r: ResolvedTrainJob) -> Obj:
    container: Obj = next(x for x in pod_spec(r)["containers"] if x["name"] == "node")
    return container


def extra(r: ResolvedTrainJob) -> dict[str, Obj]:
    return {o["kind"]: o for o in r.extra}


def test_the_node_step_gets_trainers_init_container_volumes_and_mounts() -> None:
    """flux_test.go "flux mutations are applied correctly": numNodes 2, numProcPerNode 1."""
    r = resolved(trainjob(numNodes=2), runtime(procs=1))
    cm, secret = "test-job-flux-entrypoint", "test-job-flux-curve"
    spec = pod_spec(r)
    assert spec["initContainers"] == [
        {
            "name": "flux-installer",
            "image": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
            "command": ["/bin/bash", "/etc/flux-config/init.sh"],
            "volumeMounts": [
                {"name": "flux-install", "mountPath": "/mnt/flux"},
                {"name": cm, "mountPath": "/etc/flux-config", "readOnly": True},
            ],
        }
    ]
    assert node(r)["volumeMounts"] == [
        {"name": "flux-install", "mountPath": "/mnt/flux"},
        {"name": "spack-install", "mountPath": "/opt/software"},
        {"name": cm, "mountPath": "/etc/flux-config", "readOnly": True},
        {"name": "flux-curve", "mountPath": "/curve", "readOnly": True},
        {"name": "shared-memory", "mountPath": "/dev/shm", "readOnly": True},
    ]
    assert spec["volumes"] == [
        {"name": "spack-install", "emptyDir": {}},
        {"name": "flux-install", "emptyDir": {}},
        {"name": cm, "configMap": {"name": cm, "defaultMode": 0o755}},
        {"name": "shared-memory", "emptyDir": {"medium": "Memory"}},
        {"name": "flux-curve", "secret": {"secretName": secret, "defaultMode": 0o400}},
    ]
    assert r.step("node") is not None and r.step("node").pods == 2  # type: ignore[union-attr]
    assert r.policy == "flux"


def test_the_configmap_and_secret_are_the_trainjobs_controlled_children() -> None:
    job = trainjob(numNodes=2)
    r = resolved(job)
    made = {o["kind"]: o for o in JobSetChildren(r, job).prerequisites()}
    assert made["ConfigMap"]["metadata"]["name"] == "test-job-flux-entrypoint"
    assert set(made["ConfigMap"]["data"]) == {"entrypoint.sh", "init.sh"}
    assert made["Secret"]["metadata"]["name"] == "test-job-flux-curve"
    for obj in made.values():
        assert obj["metadata"]["namespace"] == "default"
        assert obj["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "name": "test-job",
                "uid": "test-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]


def test_lammps_example_wraps_its_command_and_configures_the_broker() -> None:
    job = example("lammps-train-job.yaml")
    job["metadata"].update(namespace="hpc", uid="u1")
    r = resolved(job)
    assert node(r)["command"] == [
        "/bin/bash",
        "/etc/flux-config/entrypoint.sh",
        "lmp -v x 4 -v y 4 -v z 4 -in in.reaxc.hns -nocite",
    ]
    assert "args" not in node(r)
    assert node(r)["image"] == "ghcr.io/converged-computing/metric-lammps:latest"
    data = extra(r)["ConfigMap"]["data"]
    entrypoint, init = data["entrypoint.sh"], data["init.sh"]
    # 2 nodes, 4 processes each, 4 cores per node, no GPUs
    assert 'flags="-N 2 -n 8  "' in entrypoint
    assert "flux R encode --hosts=${hosts} --cores=0-3 > /tmp/R" in entrypoint
    assert 'mainHost="lammps-flux-node-0-0"' in entrypoint
    assert "fluxroot=/opt/view\nmainHost=lammps-flux-0\n" in init
    assert 'hosts="lammps-flux-node-0-[0-1]"' in init
    assert 'default_bind = "tcp://eth0:%p"' in init
    assert 'default_connect = "tcp://%h.lammps-flux.hpc.svc.cluster.local:%p"' in init
    assert '{ host="lammps-flux-node-0-[0-1]"},' in init
    assert 'queue-policy = "fcfs"' in init
    assert "%s" not in entrypoint + init  # every verb filled


def test_the_scripts_are_trainers_templates_filled_in() -> None:
    """Everything but the four values is Trainer's template, byte for byte."""
    r = resolved(trainjob(numNodes=1, command=["hostname"]))
    entrypoint = extra(r)["ConfigMap"]["data"]["entrypoint.sh"]
    template = (Path(flux.__file__).parents[2] / "api/trainer/flux/entrypoint.sh").read_text()
    parts = template.split("%s")
    assert len(parts) == 4
    position = 0
    for part in parts:
        found = entrypoint.find(part, position)
        assert found >= position, part[:60]
        position = found + len(part)
    assert position == len(entrypoint)


def test_gpus_per_node_add_the_gpu_flag_and_resource() -> None:
    job = example("lammps-train-gpus.yaml")
    job["metadata"].update(namespace="default", uid="u2")
    entrypoint = extra(resolved(job))["ConfigMap"]["data"]["entrypoint.sh"]
    assert 'flags="-N 2 -n 2 -g 1  "' in entrypoint
    assert "--cores=0 --gpu=0 > /tmp/R" in entrypoint
    # the runtime's GPUs count when the TrainJob asks for no resources
    rt = runtime(node={"resources": {"limits": {"nvidia.com/gpu": "4"}}})
    entrypoint = extra(resolved(trainjob(numNodes=3, numProcPerNode=2), rt))["ConfigMap"]["data"][
        "entrypoint.sh"
    ]
    assert 'flags="-N 3 -n 6 -g 4  "' in entrypoint
    assert "--cores=0-1 --gpu=0-3 > /tmp/R" in entrypoint
    # and when it asks for memory only: its pods still get them (Kubeflow Trainer pull request 3974)
    job = trainjob(numNodes=3, numProcPerNode=2, resourcesPerNode={"requests": {"memory": "8Gi"}})
    entrypoint = extra(resolved(job, rt))["ConfigMap"]["data"]["entrypoint.sh"]
    assert 'flags="-N 3 -n 6 -g 4  "' in entrypoint


def test_processes_default_to_the_policys_then_one() -> None:
    def flags(job: Obj, rt: Obj) -> str:
        entrypoint = extra(resolved(job, rt))["ConfigMap"]["data"]["entrypoint.sh"]
        return next(line for line in entrypoint.splitlines() if line.strip().startswith("flags="))

    assert flags(trainjob(numNodes=2), runtime()) == '    flags="-N 2 -n 2  "'
    assert flags(trainjob(numNodes=2), runtime(procs=3)) == '    flags="-N 2 -n 6  "'
    assert flags(trainjob(numNodes=2, numProcPerNode=5), runtime(procs=3)) == '    flags="-N 2 -n 10  "'
    # no numNodes in the TrainJob: the runtime's mlPolicy.numNodes (Trainer dereferences nil here)
    assert flags(trainjob(), runtime()) == '    flags="-N 1 -n 1  "'


@pytest.mark.parametrize(
    ("trainer", "runtime_node", "command", "args"),
    [
        # flux_test.go TestGetOriginalCommand
        (
            {"command": ["python"], "args": ["train.py", "--epochs", "10"]},
            {},
            "python train.py --epochs 10",
            None,
        ),
        ({"command": ["  python  "], "args": [" script.py "]}, {}, "python    script.py", None),
        # the runtime's command when the TrainJob has none; the runtime's args stay container args
        ({}, {"command": ["sleep"], "args": ["5"]}, "sleep", ["5"]),
        ({"args": ["10"]}, {"command": ["sleep"], "args": ["5"]}, "sleep 10", ["5"]),
        # no command at all: an interactive cluster
        ({}, {}, "", None),
    ],
)
def test_the_original_command_is_handed_to_the_entrypoint(
    trainer: Obj, runtime_node: Obj, command: str, args: list[str] | None
) -> None:
    container = node(resolved(trainjob(numNodes=1, **trainer), runtime(node=runtime_node)))
    assert container["command"] == ["/bin/bash", "/etc/flux-config/entrypoint.sh", command]
    assert container.get("args") == args


def test_settings_come_from_the_runtime_then_the_trainjob_env() -> None:
    rt = runtime(
        node={
            "env": [
                {"name": "FLUX_QUEUE_POLICY", "value": "easy"},
                {"name": "FLUX_NETWORK_DEVICE", "value": "net1"},
                {"name": "FLUX_VIEW_IMAGE", "value": "runtime/view:1"},
            ]
        }
    )
    job = trainjob(
        numNodes=2,
        env=[
            {"name": "FLUX_NETWORK_DEVICE", "value": "ib0"},
            # not a literal value: the setting stays (Trainer would set it to "")
            {"name": "FLUX_VIEW_IMAGE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    )
    r = resolved(job, rt)
    init = extra(r)["ConfigMap"]["data"]["init.sh"]
    assert 'queue-policy = "easy"' in init
    assert 'default_bind = "tcp://ib0:%p"' in init
    assert pod_spec(r)["initContainers"][0]["image"] == "runtime/view:1"


def test_a_runtime_volume_or_mount_of_the_same_name_or_path_is_replaced() -> None:
    rt = runtime(node={"volumeMounts": [{"name": "mine", "mountPath": "/dev/shm"}]})
    spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    spec["volumes"] = [
        {"name": "mine", "emptyDir": {}},
        {"name": "shared-memory", "hostPath": {"path": "/x"}},
    ]
    r = resolved(trainjob(numNodes=1), rt)
    volumes = {v["name"]: v for v in pod_spec(r)["volumes"]}
    assert volumes["shared-memory"] == {"name": "shared-memory", "emptyDir": {"medium": "Memory"}}
    assert volumes["mine"] == {"name": "mine", "emptyDir": {}}
    mounts = [m for m in node(r)["volumeMounts"] if m["mountPath"] == "/dev/shm"]
    assert mounts == [{"name": "shared-memory", "mountPath": "/dev/shm", "readOnly": True}]


def test_a_runtime_init_container_stays_before_the_installer() -> None:
    rt = runtime()
    spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "prep", "image": "busybox"}]
    names = [c["name"] for c in pod_spec(resolved(trainjob(numNodes=1), rt))["initContainers"]]
    assert names == ["prep", "flux-installer"]


@pytest.mark.parametrize(
    ("job", "rt", "expected"),
    [
        (
            trainjob(numNodes=1),
            runtime(procs=0),
            [
                "spec.trainer.numProcPerNode: Invalid: numProcPerNode must be greater than or equal to 1, "
                "not 0"
            ],
        ),
        (
            trainjob(numNodes=1, numProcPerNode=0),
            runtime(procs=1),
            [
                "spec.trainer.numProcPerNode: Invalid: numProcPerNode must be greater than or equal to 1, "
                "not 0"
            ],
        ),
        (
            trainjob("n" * 48, numNodes=1),
            runtime(),
            [
                "metadata.name: Invalid: must be no more than 47 characters for a Flux TrainJob: its "
                + 'volume "'
                + "n" * 48
                + '-flux-entrypoint" must be a DNS label of at most 63'
            ],
        ),
    ],
)
def test_trainers_flux_rules(job: Obj, rt: Obj, expected: list[str]) -> None:
    out, errors = resolve(job, rt)
    assert out is None
    assert [str(e) for e in errors] == expected


def test_the_installer_init_container_is_reserved() -> None:
    rt = runtime()
    spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "flux-installer", "image": "mine"}]
    _, errors = resolve(trainjob(numNodes=1), rt)
    assert [str(e) for e in errors] == [
        "spec.trainer.initContainers: Invalid: \"flux-installer\": InitContainer 'flux-installer' is reserved"
    ]


def test_a_47_character_name_is_accepted() -> None:
    r = resolved(trainjob("n" * 47, numNodes=1))
    assert len(extra(r)["ConfigMap"]["metadata"]["name"]) == 63


def test_the_runtime_policy_must_ask_for_at_least_one_process() -> None:
    messages = [str(e) for e in validate_runtime(runtime(procs=0))]
    assert messages == [
        "spec.mlPolicy.flux.numProcPerNode: Invalid: NumProcPerNode in fluxPolicy must be >= 1, not 0"
    ]
    assert validate_runtime(runtime(procs=2)) == []
    assert validate_runtime(example("flux-runtime.yaml")) == []


def test_the_secret_is_made_without_data_for_its_certificate_to_be_generated() -> None:
    """The CURVE key pair is made when the Secret is created (kubetrain.certs.secretdata), not
    derived from the uid as Trainer does: the plan carries no key."""
    secret = extra(resolved(trainjob(uid="abc", numNodes=1)))["Secret"]
    assert "data" not in secret
    assert secret["metadata"]["annotations"] == {"kubetrain.io/curve-certificate": "test-job"}


@pytest.mark.parametrize(("size", "start", "want"), [(1, 0, "0"), (4, 0, "0-3"), (3, 10, "10-12")])
def test_index_range(size: int, start: int, want: str) -> None:
    assert flux.index_range(size, start) == want


@pytest.mark.parametrize(
    ("prefix", "size", "want"),
    [
        ("lammps-job", 1, "lammps-job-node-0-[0]"),
        ("flux-cluster", 4, "flux-cluster-node-0-[0-3]"),
        ("", 2, "-node-0-[0-1]"),
    ],
)
def test_hostlist(prefix: str, size: int, want: str) -> None:
    assert flux.hostlist(prefix, size) == want


def test_the_runtime_is_not_changed() -> None:
    rt = runtime(node={"args": ["a"]})
    before = copy.deepcopy(rt)
    resolved(trainjob(numNodes=2, command=["x"]), rt)
    assert rt == before
