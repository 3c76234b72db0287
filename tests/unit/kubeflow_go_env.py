"""The pod environment Kubeflow's training-operator v1 sets, transcribed from its Go code.

Each function names the Go function it follows (training-operator `v1.9.0`,
`pkg/controller.v1/{tensorflow,pytorch,xgboost,jax,paddlepaddle}`; MXNet from `v1.8.1`,
`pkg/controller.v1/mxnet`, the last release with MXJob). The input is the defaulted job as a dict
(Kubeflow's controller, too, works on the defaulted object); the output maps each container name
to the variables Kubeflow adds to it, in the order it adds them.

One substitution, everywhere Go writes an address: Kubeflow gives every pod a Service of its own
and writes the pod's bare Service name `<job>-<type>-<index>` (TF: `<job>-<type>-<index>.<ns>.svc`;
XGBoost and JAX: `replicaName`); kubetrain has one headless Service per job and writes the pod's
DNS name under it, `<job>-<type>-<index>.<job>.<ns>.svc` (docs/behaviour.md §4). `host()` is that
substitution.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# (name, value); a value Kubernetes fills in is the EnvVar's `valueFrom` mapping instead.
Env = list[tuple[str, Any]]


def host(job: Mapping[str, Any], rtype: str, index: int) -> str:
    """common.GenGeneralName(job, rt, index), as kubetrain names the pod's address."""
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace") or "default"
    return f"{name}-{rtype.lower()}-{index}.{name}.{ns}.svc"


def _replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def _port(spec: Mapping[str, Any], container_name: str, port_name: str) -> int:
    """getPortFromTFJob / getPortFromPyTorchJob / getPortFromMXJob: the port named `port_name`
    of the container named `container_name` (defaulting put it there)."""
    for container in spec["template"]["spec"]["containers"]:
        if container.get("name") == container_name:
            for port in container.get("ports") or []:
                if port.get("name") == port_name:
                    return int(port["containerPort"])
    raise AssertionError(f"no port {port_name} on container {container_name}")


def _containers(spec: Mapping[str, Any]) -> list[str]:
    return [c["name"] for c in spec["template"]["spec"]["containers"]]


# --- TensorFlow: tensorflow.go, tfjob_controller.go, util.go -------------------------------------


def tf_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """TFJobReconciler.SetClusterSpec: TF_CONFIG in the first container named `tensorflow` only,
    and only when isDistributed."""
    specs = job["spec"]["tfReplicaSpecs"]
    out: dict[str, Env] = {name: [] for name in _containers(specs[rtype])}
    if not _tf_is_distributed(specs):
        return out
    value = _tf_config(job, rtype, index)
    if "tensorflow" in out:
        out["tensorflow"].append(("TF_CONFIG", value))
    return out


def _tf_is_distributed(specs: Mapping[str, Any]) -> bool:
    """isDistributed: the replicas of every type (nil counts 1) add up to something else than 1."""
    return sum(_replicas(s) for s in specs.values()) != 1


def _tf_cluster_spec(job: Mapping[str, Any]) -> dict[str, list[str]]:
    """genClusterSpec: every replica type of the spec (zero replicas: an empty list)."""
    cluster: dict[str, list[str]] = {}
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        port = _port(spec, "tensorflow", "tfjob-port")
        cluster[rtype.lower()] = [f"{host(job, rtype, i)}:{port}" for i in range(_replicas(spec))]
    return cluster


def _tf_config(job: Mapping[str, Any], rtype: str, index: int) -> str:
    """genTFConfigJSONStr (with convertClusterSpecToSparseClusterSpec for enableDynamicWorker)."""
    cluster = _tf_cluster_spec(job)
    rt = rtype.lower()
    task = {"type": rt, "index": index}
    if job["spec"].get("enableDynamicWorker"):
        sparse: dict[str, Any] = {"worker": {}, "ps": []}
        if rt == "ps":
            sparse["ps"] = [cluster[rt][index]]
        elif rt == "worker":
            # Go copies clusterSpec["ps"], which is nil (JSON null) without PS; kubetrain writes
            # [] there (TensorFlow's ClusterSpec refuses null) — the only difference.
            sparse["ps"] = cluster.get("ps", [])
            sparse["worker"] = {str(index): cluster[rt][index]}
        return json.dumps({"cluster": sparse, "task": task})
    return json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})


# --- PyTorch: envvar.go, master.go, elastic.go ---------------------------------------------------


def pytorch_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """setPodEnv: the same variables in every container of the pod."""
    spec = job["spec"]
    specs = spec["pytorchReplicaSpecs"]
    env: Env = [("PYTHONUNBUFFERED", "1")]
    total = sum(_replicas(s) for s in specs.values())  # getTotalReplicas
    nproc = spec.get("nprocPerNode")
    nproc_int = (
        int(nproc) if nproc is not None and str(nproc).lstrip("-").isdigit() else 1
    )  # getNprocPerNodeInt
    if "Master" in specs:
        port = _port(specs["Master"], "pytorch", "pytorchjob-port")
        addr = host(job, "Master", 0)
        # MasterEnvVarGenerator.Generate
        env += [("MASTER_PORT", str(port)), ("PET_MASTER_PORT", str(port))]
        env += [("MASTER_ADDR", addr), ("PET_MASTER_ADDR", addr)]
        rank = index + 1 if rtype == "Worker" else index
        env += [("WORLD_SIZE", str(total * nproc_int)), ("RANK", str(rank)), ("PET_NODE_RANK", str(rank))]
    if nproc is not None:
        env.append(("PET_NPROC_PER_NODE", str(nproc)))
    elastic = spec.get("elasticPolicy")
    if elastic is not None:
        env += _pytorch_elastic_env(job, elastic)
    else:
        env.append(("PET_NNODES", str(total)))
    return {name: list(env) for name in _containers(specs[rtype])}


def _pytorch_elastic_env(job: Mapping[str, Any], elastic: Mapping[str, Any]) -> Env:
    """ElasticEnvVarGenerator.Generate."""
    specs = job["spec"]["pytorchReplicaSpecs"]
    # generateEnvRDZVEndpoint: rdzvHost, else Worker 0; rdzvPort, else the Worker port.
    rdzv_host = elastic.get("rdzvHost") or host(job, "Worker", 0)
    rdzv_port = elastic.get("rdzvPort") or _port(specs["Worker"], "pytorch", "pytorchjob-port")
    env: Env = [("PET_RDZV_ENDPOINT", f"{rdzv_host}:{rdzv_port}")]
    env.append(("PET_RDZV_BACKEND", elastic.get("rdzvBackend") or "c10d"))  # generateEnvBackend
    lo, hi = elastic.get("minReplicas"), elastic.get("maxReplicas")  # generateEnvNnodes
    env.append(("PET_NNODES", str(_replicas(specs["Worker"])) if lo is None and hi is None else f"{lo}:{hi}"))
    if elastic.get("maxRestarts") is not None:
        env.append(("PET_MAX_RESTARTS", str(elastic["maxRestarts"])))
    if elastic.get("nProcPerNode") is not None:
        env.append(("PET_NPROC_PER_NODE", str(elastic["nProcPerNode"])))
    if elastic.get("rdzvId") is not None:
        env.append(("PET_RDZV_ID", str(elastic["rdzvId"])))
    if elastic.get("rdzvConf") is not None:  # generateEnvRDZVConf
        env.append(
            ("PET_RDZV_CONF", ",".join(f"{c['key']}={c.get('value', '')}" for c in elastic["rdzvConf"]))
        )
    if elastic.get("standalone"):
        # Go writes "" (torchrun cannot parse an empty boolean); kubetrain writes "1"
        # (docs/behaviour.md §4, Decision).
        env.append(("PET_STANDALONE", "1"))
    return env


# --- MXNet: mxnet.go (v1.8.1) ---------------------------------------------------------------------


def mxnet_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """SetPodEnv: MX_CONFIG and the DMLC_* variables in every container of the pod."""
    specs = job["spec"]["mxReplicaSpecs"]
    config = _mx_config(job, rtype, index)
    scheduler = config["cluster"].get("scheduler") or []
    # getConfigAddr: Scheduler 0, else {"url": "", "port": 0}.
    root = scheduler[0] if scheduler else {"url": "", "port": 0}
    env: Env = [
        ("MX_CONFIG", json.dumps(config)),
        ("DMLC_PS_ROOT_PORT", str(root["port"])),
        ("DMLC_PS_ROOT_URI", str(root["url"])),
        ("DMLC_NUM_SERVER", str(len(config["cluster"].get("server") or []))),  # getConfigReplica
        ("DMLC_NUM_WORKER", str(len(config["cluster"].get("worker") or []))),
        ("DMLC_ROLE", rtype.lower()),
        ("DMLC_USE_KUBERNETES", "1"),
    ]
    if rtype == "Worker":  # addBytePSEnv
        env.append(("DMLC_WORKER_ID", str(index)))
    return {name: list(env) for name in _containers(specs[rtype])}


def _mx_config(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Any]:
    """genMXConfig: genClusterSpec, genLabelsSpec (the `tuner-server-key` annotation of every
    type's pod template, "" without one) and the task."""
    cluster: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for rt, spec in job["spec"]["mxReplicaSpecs"].items():
        port = _port(spec, "mxnet", "mxjob-port")
        cluster[rt.lower()] = [{"url": host(job, rt, i), "port": port} for i in range(_replicas(spec))]
        annotations = (spec["template"].get("metadata") or {}).get("annotations") or {}
        labels[rt.lower()] = annotations.get("tuner-server-key", "")
    return {"cluster": cluster, "labels": labels, "task": {"type": rtype.lower(), "index": index}}


# --- XGBoost: xgboost.go (v1.9.0) ------------------------------------------------------------------


def xgboost_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """SetPodEnv: the same variables in every container of the pod, whatever the job's size."""
    specs = job["spec"]["xgbReplicaSpecs"]
    rank = index + _replicas(specs["Master"]) if rtype == "Worker" else index  # "master offset"
    total = sum(_replicas(s) for s in specs.values())  # computeTotalReplicas
    env: Env = [
        ("MASTER_PORT", str(_port(specs["Master"], "xgboost", "xgboostjob-port"))),  # getPortFromXGBoostJob
        ("MASTER_ADDR", host(job, "Master", 0)),  # replicaName(job, Master, 0)
        ("WORLD_SIZE", str(total)),
        ("RANK", str(rank)),
        ("PYTHONUNBUFFERED", "1"),
    ]
    if total > 1:  # "used if it is a LightGBM job"
        env.append(("WORKER_PORT", str(_port(specs["Worker"], "xgboost", "xgboostjob-port"))))
        env.append(("WORKER_ADDRS", ",".join(host(job, "Worker", i) for i in range(total - 1))))
    return {name: list(env) for name in _containers(specs[rtype])}


# --- JAX: envvar.go (v1.9.0) ------------------------------------------------------------------------


def jax_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """setPodEnv: the same variables in every container of the pod, whatever the job's size."""
    specs = job["spec"]["jaxReplicaSpecs"]
    env: Env = [
        ("PYTHONUNBUFFERED", "1"),
        ("COORDINATOR_PORT", str(_port(specs["Worker"], "jax", "jaxjob-port"))),  # getPortFromJAXJob
        ("COORDINATOR_ADDRESS", host(job, "Worker", 0)),  # replicaName(job, Worker, 0)
        ("NUM_PROCESSES", str(sum(_replicas(s) for s in specs.values()))),  # getTotalReplicas
        ("PROCESS_ID", str(index)),
    ]
    return {name: list(env) for name in _containers(specs[rtype])}


# --- PaddlePaddle: paddlepaddle/envvar.go ---------------------------------------------------------


def paddle_env(job: Mapping[str, Any], rtype: str, index: int) -> dict[str, Env]:
    """setPodEnv: the same variables in every container of the pod."""
    specs = job["spec"]["paddleReplicaSpecs"]
    total = sum(_replicas(s) for s in specs.values())  # getTotalReplicas
    env: Env = [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", job["metadata"]["name"]),  # EnvJobID
        ("PADDLE_NNODES", str(total)),  # EnvNumNodes
    ]
    pod_ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    if "Master" not in specs:
        # Collective mode: Worker 0 is the rendezvous endpoint; `rank == 0` (any type) listens
        # on its own IP. replicaName(...) is host(), getPortFromPaddleJob is _port().
        port = _port(specs["Worker"], "paddle", "master")
        if index == 0:
            env += [("POD_IP_DUMMY", pod_ip), ("PADDLE_MASTER", f"$(POD_IP_DUMMY):{port}")]
        else:
            env.append(("PADDLE_MASTER", f"{host(job, 'Worker', 0)}:{port}"))
    else:
        # PS mode: Master 0 is the rendezvous endpoint.
        port = _port(specs["Master"], "paddle", "master")
        if index == 0 and rtype == "Master":
            env += [("POD_IP_DUMMY", pod_ip), ("PADDLE_MASTER", f"$(POD_IP_DUMMY):{port}")]
        else:
            env.append(("PADDLE_MASTER", f"{host(job, 'Master', 0)}:{port}"))
        # "Each pod will have only one server or trainer."
        env.append(("PADDLE_SERVER_NUM", "1") if rtype == "Master" else ("PADDLE_TRAINER_NUM", "1"))
    return {name: list(env) for name in _containers(specs[rtype])}


KUBEFLOW_ENV = {
    "TFJob": tf_env,
    "PyTorchJob": pytorch_env,
    "MXJob": mxnet_env,
    "XGBoostJob": xgboost_env,
    "JAXJob": jax_env,
    "PaddleJob": paddle_env,
}
JSON_VALUES = frozenset({"TF_CONFIG", "MX_CONFIG"})
