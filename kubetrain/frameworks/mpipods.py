"""MPI pods: what mpi-operator (v2beta1) adds to an MPIJob's pods and the objects they read.

The MPIJob fields these read (`Settings`: slots, launcher-as-worker, implementation, SSH mount
path, launcher creation policy), the hostfile and discover_hosts.sh of the `<job>-config`
ConfigMap, the `<job>-ssh` Secret, and the Launcher's and Workers' additions to container 0
(environment, sshd, the SSH and config volumes, DNS searches). Each follows the Go function of
mpi-operator's `pkg/controller/mpi_job_controller.go` named in its docstring; the MPIJob
framework (kubetrain.frameworks.mpi) calls them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api.labels import LABEL_REPLICA_TYPE
from kubetrain.frameworks.env import JobLayout
from kubetrain.frameworks.mpilabels import LAUNCHER, WORKER

DEFAULT_SLOTS = 1
DEFAULT_SSH_PATH = "/root/.ssh"  # rootSSHPath
DEFAULT_IMPLEMENTATION = "OpenMPI"
DEFAULT_LAUNCHER_CREATION = "AtStartup"

CONFIG_SUFFIX = "-config"
CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
SSH_SECRET_SUFFIX = "-ssh"
SSH_VOLUME = "ssh-auth"
SSH_TYPE = "kubernetes.io/ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"  # corev1.SSHAuthPrivateKey
SSH_PUBLIC_KEY = "ssh-publickey"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"
CONNECTION_ATTEMPTS = "-o ConnectionAttempts=10"

# The implementation's launcher variables (ompiEnvVars, intelEnvVars, mpichEnvVars).
IMPLEMENTATION_ENV: dict[str, tuple[tuple[str, str], ...]] = {
    "OpenMPI": (
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", HOSTFILE_PATH),
        ("OMPI_MCA_plm_rsh_args", CONNECTION_ATTEMPTS),
    ),
    "Intel": (
        ("I_MPI_HYDRA_HOST_FILE", HOSTFILE_PATH),
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", CONNECTION_ATTEMPTS),
    ),
    "MPICH": (
        ("HYDRA_HOST_FILE", HOSTFILE_PATH),
        ("HYDRA_LAUNCH_EXTRA_ARGS", CONNECTION_ATTEMPTS),
    ),
}
# The slots variable per implementation (openMPISlotsEnv, intelMPISlotsEnv; none for MPICH).
SLOTS_ENV = {"OpenMPI": "OMPI_MCA_orte_set_default_slots", "Intel": "I_MPI_PERHOST"}
NVIDIA_DISABLE_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
ROLE_ENV = "K_MPI_JOB_ROLE"


class Settings:
    """The MPIJob fields of a (defaulted) spec, read tolerantly."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        slots = spec.get("slotsPerWorker")
        self.slots = slots if isinstance(slots, int) and not isinstance(slots, bool) else DEFAULT_SLOTS
        self.launcher_as_worker = spec.get("runLauncherAsWorker") is True
        impl = spec.get("mpiImplementation")
        self.implementation = impl if impl in IMPLEMENTATION_ENV else DEFAULT_IMPLEMENTATION
        path = spec.get("sshAuthMountPath")
        self.ssh_path = path if isinstance(path, str) and path else DEFAULT_SSH_PATH
        policy = spec.get("launcherCreationPolicy")
        self.launcher_creation_policy = policy if isinstance(policy, str) else DEFAULT_LAUNCHER_CREATION


def settings(job: JobLayout) -> Settings:
    return Settings(job.spec)


def launcher_hostname(job: JobLayout) -> str:
    """`<job>-launcher`, the launcher's hostname in mpi-operator (launcherSuffix)."""
    return f"{job.name}-launcher"


def host(job: JobLayout, hostname: str) -> str:
    """`<hostname>.<job>.<ns>.svc`, `.<domain>` appended when the operator was given a cluster
    domain (newConfigMap's domainFormat with mpi-operator's `--cluster-domain`)."""
    return job.cluster_domain.qualify(f"{hostname}.{job.name}.{job.namespace}.svc")


def hostfile(job: JobLayout) -> str:
    """newConfigMap: one line per host, the launcher first when it runs as a worker, then every
    Worker: OpenMPI `<host> slots=<n>`, Intel and MPICH `<host>:<n>`."""
    s = settings(job)
    hosts = [launcher_hostname(job)] if s.launcher_as_worker else []
    hosts += [job.pod_name(WORKER, i) for i in range(job.count(WORKER))]
    fmt = "{} slots={}\n" if s.implementation == "OpenMPI" else "{}:{}\n"
    return "".join(fmt.format(host(job, h), s.slots) for h in hosts)


def discover_hosts(job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> str:
    """updateDiscoverHostsInConfigMap: `#!/bin/sh` then `echo <host>` for the launcher when it
    runs as a worker and for every Running Worker pod, sorted by pod name."""
    lines = ["#!/bin/sh"]
    if settings(job).launcher_as_worker:
        lines.append(f"echo {host(job, launcher_hostname(job))}")
    running = sorted(
        str((p.get("metadata") or {}).get("name"))
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_REPLICA_TYPE) == WORKER.lower()
        and (p.get("status") or {}).get("phase") == "Running"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    )
    lines += [f"echo {host(job, name)}" for name in running]
    return "\n".join(lines) + "\n"


def config_map(job: JobLayout, pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`<job>-config` with the hostfile and discover_hosts.sh (newConfigMap)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": job.name + CONFIG_SUFFIX},
        "data": {HOSTFILE: hostfile(job), DISCOVER_HOSTS: discover_hosts(job, pods)},
    }


def ssh_secret(job: JobLayout) -> dict[str, Any]:
    """`<job>-ssh` of type kubernetes.io/ssh-auth (newSSHAuthSecret); its key pair is generated
    when it is created, so the desired object carries no data."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": job.name + SSH_SECRET_SUFFIX},
        "type": SSH_TYPE,
    }


def _env(container: dict[str, Any], pairs: Sequence[tuple[str, str]]) -> None:
    current = container.get("env")
    env: list[Any] = list(current) if isinstance(current, list) else []
    env += [{"name": n, "value": v} for n, v in pairs]
    container["env"] = env


def _mount(spec: dict[str, Any], container: dict[str, Any], volume: dict[str, Any], path: str) -> None:
    spec["volumes"] = [*(spec.get("volumes") or []), volume]
    container["volumeMounts"] = [
        *(container.get("volumeMounts") or []),
        {"name": volume["name"], "mountPath": path},
    ]


def mpi_pod_spec(job: JobLayout, replica_type: str, spec: dict[str, Any]) -> None:
    """What mpi-operator adds to a pod (newWorker, newLauncherPodTemplate, setupSSHOnPod)."""
    s = settings(job)
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        return
    container = containers[0] = dict(containers[0])
    if spec.get("hostNetwork") is True:
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if replica_type == WORKER:
        # The Intel and MPICH launchers reach workers (and back) through short hostnames. The
        # domain in effect (mpi-operator hard-coded cluster.local until its pull request 832).
        search = job.cluster_domain.service_fqdn(job.name, job.namespace)
        dns = dict(spec.get("dnsConfig") or {})
        dns["searches"] = [*(dns.get("searches") or []), search]
        spec["dnsConfig"] = dns
        if not container.get("command") and not container.get("args"):
            container["command"] = ["/usr/sbin/sshd", "-De"]
        _env(container, [(ROLE_ENV, "worker")])
    else:
        spec["hostname"] = launcher_hostname(job)
        pairs = [(ROLE_ENV, "launcher"), *IMPLEMENTATION_ENV[s.implementation]]
        if s.implementation in SLOTS_ENV:
            pairs.append((SLOTS_ENV[s.implementation], str(s.slots)))
        if not s.launcher_as_worker:
            pairs += [(name, "") for name in NVIDIA_DISABLE_ENV]
        _env(container, pairs)
    ssh_volume: dict[str, Any] = {
        "name": SSH_VOLUME,
        "secret": {
            "secretName": job.name + SSH_SECRET_SUFFIX,
            "items": [
                {"key": SSH_PRIVATE_KEY, "path": "id_rsa"},
                {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
                {"key": SSH_PUBLIC_KEY, "path": "authorized_keys"},
            ],
        },
    }
    if s.ssh_path == DEFAULT_SSH_PATH:
        ssh_volume["secret"]["defaultMode"] = 0o600
    _mount(spec, container, ssh_volume, s.ssh_path)
    if replica_type == LAUNCHER:
        config_volume = {
            "name": CONFIG_VOLUME,
            "configMap": {
                "name": job.name + CONFIG_SUFFIX,
                "items": [
                    {"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444},
                    {"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555},
                ],
            },
        }
        _mount(spec, container, config_volume, CONFIG_MOUNT_PATH)
