"""MPIJob's framework rules against mpi-operator v2beta1 (kubeflow/mpi-operator, pkg/controller/
mpi_job_controller.go and pkg/apis/kubeflow/v2beta1): every expectation names the Go function it
comes from. mpi-operator's own examples (tests/data/mpi-operator) are used after changing only
their apiVersion."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from jobs import layout_of

from kubetrain.certs.secretdata import with_generated_keys
from kubetrain.certs.sshkeys import ssh_key_pair
from kubetrain.frameworks.mpi import FRAMEWORK
from kubetrain.frameworks.mpipods import discover_hosts, hostfile
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.desired import desired_children
from kubetrain.operator.prepare import prepare_job

DATA = Path(__file__).resolve().parents[1] / "data" / "mpi-operator" / "examples" / "v2beta1"
EXAMPLES = sorted(DATA.rglob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(path.read_text())
    return obj


def mpijob(workers: int = 2, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}]}}
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": copy.deepcopy(template)},
                "Worker": {"replicas": workers, "template": copy.deepcopy(template)},
            },
            **spec,
        },
    }


def children(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    prepared = prepare_job(obj)
    assert prepared.shape is not None, prepared.errors
    return {(c["kind"], c["metadata"]["name"]): c for c in desired_children(prepared.shape).all()}


def env(pod: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]) for e in pod["spec"]["containers"][0].get("env") or []]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(DATA)))
def test_mpi_operator_examples_are_valid_after_changing_only_api_version(path: Path) -> None:
    result = validate_job(default_job(load(path)).obj)
    assert result.errors == [] and result.warnings == []


def test_defaults_follow_set_defaults_mpijob() -> None:
    """SetDefaults_MPIJob, setDefaultsTypeLauncher/Worker, setDefaultsRunPolicy."""
    bare = mpijob()
    del bare["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    spec = default_job(bare).obj["spec"]
    assert spec["slotsPerWorker"] == 1
    assert spec["sshAuthMountPath"] == "/root/.ssh"
    assert spec["mpiImplementation"] == "OpenMPI"
    assert spec["launcherCreationPolicy"] == "AtStartup"
    assert spec["runPolicy"]["cleanPodPolicy"] == "None"
    launcher, worker = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
    assert (launcher["replicas"], launcher["restartPolicy"]) == (1, "OnFailure")
    assert (worker["replicas"], worker["restartPolicy"]) == (0, "Never")
    # No port and no container rename: mpi-operator decorates containers[0] as it is.
    assert "ports" not in launcher["template"]["spec"]["containers"][0]


def test_validation_reports_every_error_at_once_with_field_paths() -> None:
    """validateMPIJobSpec / validateLauncherReplicaSpec; enums as the CRD schema checks them."""
    bad = mpijob(slotsPerWorker=0, sshAuthMountPath="ssh")
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    errors = {e.path: str(e) for e in validate_job(default_job(bad).obj).errors}
    assert set(errors) == {
        "spec.mpiReplicaSpecs[Launcher].replicas",
        "spec.slotsPerWorker",
        "spec.sshAuthMountPath",
    }
    assert "must be 1" in errors["spec.mpiReplicaSpecs[Launcher].replicas"]
    wrong_enums = mpijob(mpiImplementation="OpenMP", launcherCreationPolicy="Later")
    errors = {e.path: str(e) for e in validate_job(default_job(wrong_enums).obj).errors}
    assert set(errors) == {"spec.mpiImplementation", "spec.launcherCreationPolicy"}
    assert "OpenMPI" in errors["spec.mpiImplementation"] and "MPICH" in errors["spec.mpiImplementation"]
    assert "WaitForWorkersReady" in errors["spec.launcherCreationPolicy"]
    no_launcher = mpijob()
    del no_launcher["spec"]["mpiReplicaSpecs"]["Launcher"]
    (error,) = validate_job(default_job(no_launcher).obj).errors
    assert error.path == "spec.mpiReplicaSpecs[Launcher]" and error.kind == "Required"


@pytest.mark.parametrize(
    ("implementation", "as_worker", "expected"),
    [
        # newConfigMap: OpenMPI "<host> slots=<n>"
        ("OpenMPI", False, "pi-worker-0.pi.ns.svc slots=4\npi-worker-1.pi.ns.svc slots=4\n"),
        # newConfigMap: Intel and MPICH "<host>:<n>"
        ("Intel", False, "pi-worker-0.pi.ns.svc:4\npi-worker-1.pi.ns.svc:4\n"),
        ("MPICH", False, "pi-worker-0.pi.ns.svc:4\npi-worker-1.pi.ns.svc:4\n"),
        # newConfigMap with runLauncherAsWorker: the launcher's hostname first
        (
            "OpenMPI",
            True,
            "pi-launcher.pi.ns.svc slots=4\npi-worker-0.pi.ns.svc slots=4\npi-worker-1.pi.ns.svc slots=4\n",
        ),
        ("Intel", True, "pi-launcher.pi.ns.svc:4\npi-worker-0.pi.ns.svc:4\npi-worker-1.pi.ns.svc:4\n"),
        ("MPICH", True, "pi-launcher.pi.ns.svc:4\npi-worker-0.pi.ns.svc:4\npi-worker-1.pi.ns.svc:4\n"),
    ],
)
def test_hostfile_per_implementation(implementation: str, as_worker: bool, expected: str) -> None:
    obj = mpijob(slotsPerWorker=4, mpiImplementation=implementation, runLauncherAsWorker=as_worker)
    config = children(obj)[("ConfigMap", "pi-config")]
    assert config["data"]["hostfile"] == expected
    layout, _ = layout_of(default_job(obj).obj, FRAMEWORK)
    assert layout is not None and hostfile(layout) == expected


def test_hostfile_of_a_job_without_workers_is_empty_or_the_launcher() -> None:
    """newConfigMap with workerReplicas 0."""
    assert children(mpijob(workers=0))[("ConfigMap", "pi-config")]["data"]["hostfile"] == ""
    alone = children(mpijob(workers=0, runLauncherAsWorker=True))[("ConfigMap", "pi-config")]
    assert alone["data"]["hostfile"] == "pi-launcher.pi.ns.svc slots=1\n"


def _pod(name: str, rtype: str, phase: str) -> dict[str, Any]:
    labels = {"kubetrain.io/job-name": "pi", "kubetrain.io/replica-type": rtype}
    return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase}}


def test_discover_hosts_lists_running_workers_sorted() -> None:
    """updateDiscoverHostsInConfigMap: Running worker pods only, sorted by name; the launcher
    first when it runs as a worker."""
    pods = [
        _pod("pi-worker-1", "worker", "Running"),
        _pod("pi-worker-0", "worker", "Running"),
        _pod("pi-worker-2", "worker", "Pending"),
        _pod("pi-launcher-0", "launcher", "Running"),
    ]
    layout, _ = layout_of(default_job(mpijob(workers=3)).obj, FRAMEWORK)
    assert layout is not None
    assert (
        discover_hosts(layout, pods) == "#!/bin/sh\necho pi-worker-0.pi.ns.svc\necho pi-worker-1.pi.ns.svc\n"
    )
    assert discover_hosts(layout, []) == "#!/bin/sh\n"
    with_launcher, _ = layout_of(default_job(mpijob(workers=3, runLauncherAsWorker=True)).obj, FRAMEWORK)
    assert with_launcher is not None
    assert discover_hosts(with_launcher, pods[:1]) == (
        "#!/bin/sh\necho pi-launcher.pi.ns.svc\necho pi-worker-1.pi.ns.svc\n"
    )


@pytest.mark.parametrize(
    ("implementation", "expected"),
    [
        # ompiEnvVars + openMPISlotsEnv + nvidiaDisableEnvVars (newLauncherPodTemplate)
        (
            "OpenMPI",
            [
                ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                ("OMPI_MCA_orte_set_default_slots", "2"),
            ],
        ),
        # intelEnvVars + intelMPISlotsEnv
        (
            "Intel",
            [
                ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
                ("I_MPI_PERHOST", "2"),
            ],
        ),
        # mpichEnvVars (no slots variable)
        (
            "MPICH",
            [
                ("HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"),
            ],
        ),
    ],
)
def test_launcher_env_per_implementation(implementation: str, expected: list[tuple[str, str]]) -> None:
    pods = children(mpijob(slotsPerWorker=2, mpiImplementation=implementation))
    launcher = pods[("Pod", "pi-launcher-0")]
    nvidia = [("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    assert env(launcher) == [("K_MPI_JOB_ROLE", "launcher"), *expected, *nvidia]
    assert env(pods[("Pod", "pi-worker-0")]) == [("K_MPI_JOB_ROLE", "worker")]  # workerEnvVars
    # runLauncherAsWorker: the launcher may use GPUs (no nvidiaDisableEnvVars)
    as_worker = children(mpijob(slotsPerWorker=2, mpiImplementation=implementation, runLauncherAsWorker=True))
    assert env(as_worker[("Pod", "pi-launcher-0")]) == [("K_MPI_JOB_ROLE", "launcher"), *expected]


def test_ssh_and_config_volumes_as_mpi_operator_mounts_them() -> None:
    """setupSSHOnPod (defaultMode 0600 only under /root/.ssh), configVolumeItems on the launcher,
    newWorker's default sshd command and DNS search, the launcher's hostname."""
    pods = children(mpijob())
    launcher, worker = pods[("Pod", "pi-launcher-0")], pods[("Pod", "pi-worker-0")]
    ssh = {
        "name": "ssh-auth",
        "secret": {
            "secretName": "pi-ssh",
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa"},
                {"key": "ssh-publickey", "path": "id_rsa.pub"},
                {"key": "ssh-publickey", "path": "authorized_keys"},
            ],
            "defaultMode": 0o600,
        },
    }
    config = {
        "name": "mpi-job-config",
        "configMap": {
            "name": "pi-config",
            "items": [
                {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
            ],
        },
    }
    assert launcher["spec"]["volumes"] == [ssh, config]
    assert launcher["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/root/.ssh"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    assert launcher["spec"]["hostname"] == "pi-launcher" and launcher["spec"]["subdomain"] == "pi"
    assert worker["spec"]["volumes"] == [ssh]
    assert worker["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    assert worker["spec"]["dnsConfig"] == {"searches": ["pi.ns.svc.cluster.local"]}
    assert worker["spec"]["hostname"] == "pi-worker-0"
    elsewhere = children(mpijob(sshAuthMountPath="/home/mpiuser/.ssh"))[("Pod", "pi-worker-0")]
    (volume,) = elsewhere["spec"]["volumes"]
    assert "defaultMode" not in volume["secret"]
    assert elsewhere["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]


def test_secret_is_rendered_without_any_key() -> None:
    secret = children(mpijob())[("Secret", "pi-ssh")]
    assert secret["type"] == "kubernetes.io/ssh-auth" and "data" not in secret
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_generated_keys_are_an_ecdsa_p521_pair_like_new_ssh_auth_secret() -> None:
    """newSSHAuthSecret: EC PRIVATE KEY PEM and an authorized_keys line, fresh every time."""
    secret = with_generated_keys(children(mpijob())[("Secret", "pi-ssh")])
    data = secret["data"]
    assert isinstance(data, dict)
    private = base64.b64decode(data["ssh-privatekey"])
    public = base64.b64decode(data["ssh-publickey"])
    assert private.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert public.startswith(b"ecdsa-sha2-nistp521 ") and public.endswith(b"\n")
    key = serialization.load_pem_private_key(private, None)
    derived = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert derived + b"\n" == public
    assert ssh_key_pair()[0] != ssh_key_pair()[0]
    assert with_generated_keys({"kind": "ConfigMap", "data": {}}) == {"kind": "ConfigMap", "data": {}}
