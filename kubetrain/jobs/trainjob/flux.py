"""Trainer 2.3's Flux ML policy (`mlPolicy.flux`, its pkg/runtime/framework/plugins/flux): the
nodes of a TrainJob run as one Flux Framework HPC cluster, the training command run by `flux run`
on the lead broker (`<tj>-node-0-0`), or an interactive cluster when the command is empty.

What a Flux TrainJob's `node` replicated job gets, as Trainer's plug-in builds it:
- the `node` container's command becomes `/bin/bash /etc/flux-config/entrypoint.sh "<command>"`,
  `<command>` the TrainJob's command (else the runtime's) and the TrainJob's args joined by
  spaces; the TrainJob's args are dropped (the runtime's own args stay);
- an init container `flux-installer` (the Flux view image, `/bin/bash /etc/flux-config/init.sh`)
  that copies Flux into the shared `flux-install` volume;
- the volumes `spack-install`, `flux-install`, `<tj>-flux-entrypoint` (the ConfigMap, mode
  0755), `shared-memory` (memory emptyDir, on /dev/shm) and `flux-curve` (the Secret, mode 0400),
  mounted into the `node` container, replacing volumes of the same name and mounts at the same
  path.
- Children, before the pods: the ConfigMap `<tj>-flux-entrypoint` (`entrypoint.sh`, `init.sh`
  with the broker configuration: hosts `<tj>-node-0-[0-N]`, bind `tcp://<device>:%p`, connect
  `tcp://%h.<subdomain>.<ns>.svc.<domain>:%p` — `<domain>` the operator's cluster domain, where
  Trainer hard-codes `cluster.local` (its default); `<subdomain>` the runtime template's
  `network.subdomain`, else `<tj>`, where Trainer always writes `<tj>` — queue policy) kept up to
  date, and the Secret
  `<tj>-flux-curve`, `curve.cert` the brokers' ZeroMQ CURVE certificate. **Decision:** its key
  pair is random, made when the Secret is created (`kubetrain.certs.secretdata`), where Trainer
  derives the secret key from the TrainJob's uid (its SHA-256) — which anyone who may read the
  TrainJob, or a pod's ownerReferences, can compute. **Decision:** a broker `%h` is a pod's
  hostname, which resolves under its pods' subdomain: JobSet (jobset_controller.go, `GetSubdomain`)
  gives the pods `spec.subdomain` and names the headless Service after the template's
  `network.subdomain` when set, so a name under `<tj>` (Trainer's flux.go) resolves to nothing
  there and the brokers never meet; kubetrain connects through the subdomain the pods have.

Settings: `FLUX_VIEW_IMAGE`, `FLUX_NETWORK_DEVICE`, `FLUX_QUEUE_POLICY` default to Trainer's and
are read from the runtime's `node` container env, then the TrainJob's `trainer.env` (a literal
`value` only). Flags: `-N <nodes> -n <nodes * procs>` plus `-g <GPUs>` when the node asks for
GPUs (the TrainJob's resourcesPerNode merged over the runtime's), procs the TrainJob's numProcPerNode,
else the policy's (default 1).

Rules (admission and, for a TrainJob stored past the webhook, resolution): numProcPerNode ≥ 1
(the TrainJob's, else the policy's: Trainer's CRD rules and message since Trainer #3809, which
dropped its Flux webhook's own check) and no `flux-installer` init container in the runtime's
`node` job (Trainer's paths and messages); kubetrain adds that the TrainJob's name leaves
`<tj>-flux-entrypoint` a DNS label (a longer one makes pods a real API server refuses). Pure."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.dnsnames import MAX_LABEL_LENGTH
from kubetrain.api.errors import QUOTE, FieldError, invalid, json_int
from kubetrain.api.labels import ANNOTATION_CURVE_CERTIFICATE
from kubetrain.api.trainer import constants as c
from kubetrain.frameworks.mlpolicies import gpus_per_node
from kubetrain.jobs.trainjob.model import Step
from kubetrain.jobs.trainjob.patches import counted_resources, merge_named

Obj = dict[str, Any]

INSTALLER = "flux-installer"
CONFIG_MAP_SUFFIX = "-flux-entrypoint"
SECRET_SUFFIX = "-flux-curve"
CONFIG_PATH = "/etc/flux-config"
INSTALL_VOLUME, INSTALL_PATH = "flux-install", "/mnt/flux"
SPACK_VOLUME, SPACK_PATH = "spack-install", "/opt/software"
CURVE_VOLUME, CURVE_PATH = "flux-curve", "/curve"
MEMORY_VOLUME, MEMORY_PATH = "shared-memory", "/dev/shm"
# The broker settings a runtime or TrainJob may set by env, with Trainer's defaults.
SETTINGS = {
    "FLUX_VIEW_IMAGE": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
    "FLUX_NETWORK_DEVICE": "eth0",
    "FLUX_QUEUE_POLICY": "fcfs",
}
VIEW_ROOT = "/opt/view"  # where the Flux view image keeps Flux
# `<tj>-flux-entrypoint` names a pod volume: a DNS label.
MAX_NAME_LENGTH = MAX_LABEL_LENGTH - len(CONFIG_MAP_SUFFIX)


@dataclass(frozen=True)
class FluxPolicy:
    """What the Flux plug-in reads of a TrainJob and its runtime."""

    name: str
    namespace: str
    num_nodes: int
    procs_per_node: int
    gpus: int
    settings: Mapping[str, str]
    cluster_domain: ClusterDomain = UNSET  # the operator's (api/clusterdomain.py)
    subdomain: str = ""  # the pods' subdomain and headless Service ("": the TrainJob's name)


def config_map_name(tj: str) -> str:
    return f"{tj}{CONFIG_MAP_SUFFIX}"


def secret_name(tj: str) -> str:
    return f"{tj}{SECRET_SUFFIX}"


def procs_per_node(policy: Mapping[str, Any], trainer: Mapping[str, Any]) -> object:
    """The TrainJob's numProcPerNode, else the policy's (its CRD default 1)."""
    if trainer.get("numProcPerNode") is not None:
        return trainer["numProcPerNode"]
    return 1 if policy.get("numProcPerNode") is None else policy["numProcPerNode"]


def validate(
    name: str, policy: Mapping[str, Any], trainer: Mapping[str, Any], node_template: Mapping[str, Any]
) -> list[FieldError]:
    """Trainer's Flux rules for one TrainJob of a Flux runtime (`node_template`: the runtime's
    `node` pod template, after the TrainJob's patches); kubetrain's own name limit."""
    errors: list[FieldError] = []
    procs = procs_per_node(policy, trainer)
    if (json_int(procs) or 0) < 1:
        errors.append(
            invalid(
                "spec.trainer.numProcPerNode",
                f"numProcPerNode must be greater than or equal to 1, not {QUOTE.encode(procs)}",
            )
        )
    for container in (node_template.get("spec") or {}).get("initContainers") or []:
        if isinstance(container, Mapping) and container.get("name") == INSTALLER:
            errors.append(
                invalid(
                    "spec.trainer.initContainers",
                    f"{QUOTE.encode(INSTALLER)}: InitContainer '{INSTALLER}' is reserved",
                )
            )
    if len(name) > MAX_NAME_LENGTH:
        errors.append(
            invalid(
                "metadata.name",
                f"must be no more than {MAX_NAME_LENGTH} characters for a Flux TrainJob: its volume "
                f"{QUOTE.encode(config_map_name(name))} must be a DNS label of at most {MAX_LABEL_LENGTH}",
            )
        )
    return errors


def read_policy(
    meta: Mapping[str, Any],
    policy: Mapping[str, Any],
    trainer: Mapping[str, Any],
    num_nodes: int,
    runtime_node: Mapping[str, Any],
    runtime_resources: Mapping[str, Any],
    cluster_domain: ClusterDomain = UNSET,
    subdomain: str = "",
) -> FluxPolicy:
    """The policy's facts; `runtime_node` is the runtime's own `node` container (its env read
    before the TrainJob's); `subdomain` the pods' (the runtime's `network.subdomain`, "" when
    it sets none)."""
    settings = dict(SETTINGS)
    for var in [*(runtime_node.get("env") or []), *(trainer.get("env") or [])]:
        if isinstance(var, Mapping) and var.get("name") in settings and isinstance(var.get("value"), str):
            settings[str(var["name"])] = var["value"]
    procs = procs_per_node(policy, trainer)
    return FluxPolicy(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        num_nodes=num_nodes,
        procs_per_node=json_int(procs) or 1,
        gpus=gpus_per_node(counted_resources(trainer, runtime_resources)),
        settings=settings,
        cluster_domain=cluster_domain,
        subdomain=subdomain,
    )


def enforce(
    steps: Sequence[Step], flux: FluxPolicy, trainer: Mapping[str, Any], runtime_args: object
) -> None:
    """The `node` step's pod template as Trainer's plug-in leaves it (module docstring).
    `runtime_args`: the runtime's own `node` container args (the TrainJob's are dropped)."""
    cm = config_map_name(flux.name)
    volumes: list[Obj] = [
        {"name": SPACK_VOLUME, "emptyDir": {}},
        {"name": INSTALL_VOLUME, "emptyDir": {}},
        {"name": cm, "configMap": {"name": cm, "defaultMode": 0o755}},
        {"name": MEMORY_VOLUME, "emptyDir": {"medium": "Memory"}},
        {"name": CURVE_VOLUME, "secret": {"secretName": secret_name(flux.name), "defaultMode": 0o400}},
    ]
    config_mount: Obj = {"name": cm, "mountPath": CONFIG_PATH, "readOnly": True}
    mounts: list[Obj] = [
        {"name": INSTALL_VOLUME, "mountPath": INSTALL_PATH},
        {"name": SPACK_VOLUME, "mountPath": SPACK_PATH},
        config_mount,
        {"name": CURVE_VOLUME, "mountPath": CURVE_PATH, "readOnly": True},
        {"name": MEMORY_VOLUME, "mountPath": MEMORY_PATH, "readOnly": True},
    ]
    installer = {
        "name": INSTALLER,
        "image": flux.settings["FLUX_VIEW_IMAGE"],
        "command": ["/bin/bash", f"{CONFIG_PATH}/init.sh"],
        "volumeMounts": [{"name": INSTALL_VOLUME, "mountPath": INSTALL_PATH}, dict(config_mount)],
    }
    for step in steps:
        if step.name != c.NODE:
            continue
        spec = step.pod_template.get("spec")
        if not isinstance(spec, dict):
            continue
        spec["volumes"] = merge_named(spec.get("volumes") or [], volumes, replace=True)
        spec["initContainers"] = [*(spec.get("initContainers") or []), copy.deepcopy(installer)]
        for container in spec.get("containers") or []:
            if not isinstance(container, dict) or container.get("name") != c.NODE:
                continue
            original = [*(container.get("command") or []), *(trainer.get("args") or [])]
            container["command"] = [
                "/bin/bash",
                f"{CONFIG_PATH}/entrypoint.sh",
                " ".join(map(str, original)).strip(),
            ]
            if runtime_args is None:
                container.pop("args", None)
            else:
                container["args"] = copy.deepcopy(runtime_args)
            container["volumeMounts"] = merge_named(
                container.get("volumeMounts") or [], copy.deepcopy(mounts), key="mountPath", replace=True
            )


def children(flux: FluxPolicy) -> tuple[Obj, Obj]:
    """The entrypoint ConfigMap and the CURVE certificate Secret, without its data (no namespace,
    labels or owner: the TrainJob's children get them)."""
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map_name(flux.name)},
        "data": {"entrypoint.sh": entrypoint_script(flux), "init.sh": init_script(flux)},
    }
    secret = {  # its certificate is made when it is created (kubetrain.certs.secretdata)
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(flux.name),
            "annotations": {ANNOTATION_CURVE_CERTIFICATE: flux.name},
        },
    }
    return config_map, secret


@functools.cache
def _template(name: str) -> str:
    """Trainer's template `name` (package data), read once per process: a Flux TrainJob's
    ConfigMap is built at every reconcile."""
    return resources.files("kubetrain.api.trainer").joinpath("flux", name).read_text(encoding="utf-8")


def _fill(template: str, *values: str) -> str:
    """Go's Sprintf for a template whose only verbs are `%s`."""
    parts = template.split("%s")
    if len(parts) != len(values) + 1:
        raise ValueError(f"template has {len(parts) - 1} %s, {len(values)} values given")
    out = [parts[0]]
    for value, part in zip(values, parts[1:], strict=True):
        out += [value, part]
    return "".join(out)


def index_range(size: int, start: int = 0) -> str:
    """`0` for one, `0-3` for four: Flux's idset of `size` indexes from `start`."""
    return str(start) if size == 1 else f"{start}-{start + size - 1}"


def hostlist(tj: str, size: int) -> str:
    return f"{tj}-{c.NODE}-0-[{index_range(size)}]"


def broker_config(flux: FluxPolicy) -> str:
    """Trainer's broker.toml; brokers connect to `<host>.<subdomain>.<ns>.svc.<domain>`, the
    name a pod's hostname has under its subdomain's headless Service."""
    fqdn = flux.cluster_domain.service_fqdn(flux.subdomain or flux.name, flux.namespace)
    bind = f"tcp://{flux.settings['FLUX_NETWORK_DEVICE']}:%p"
    connect = f"tcp://%h.{fqdn}:%p"
    return _fill(
        _template("broker.toml"),
        bind,
        connect,
        hostlist(flux.name, flux.num_nodes),
        flux.settings["FLUX_QUEUE_POLICY"],
    )


def init_script(flux: FluxPolicy) -> str:
    return _fill(
        _template("init.sh"),
        VIEW_ROOT,
        f"{flux.name}-0",
        hostlist(flux.name, flux.num_nodes),
        broker_config(flux),
    )


def entrypoint_script(flux: FluxPolicy) -> str:
    flags = f"-N {flux.num_nodes} -n {flux.procs_per_node * flux.num_nodes}"
    resource_spec = f"--cores={index_range(flux.procs_per_node)}"
    if flux.gpus > 0:
        flags += f" -g {flux.gpus}"
        resource_spec += f" --gpu={index_range(flux.gpus)}"
    return _fill(_template("entrypoint.sh"), resource_spec, f"{flux.name}-{c.NODE}-0-0", flags)
