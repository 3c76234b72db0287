"""Fixtures' machinery for the e2e scenarios (tests/e2e/test_scenarios.py).

Against the cluster named by $KUBECONFIG this installs the CRDs (only if missing; removed again
only if this run created them), starts the real operator — `kubetrain run`, through
`kubetrain.cli.main`, in a child process of the test run — with its webhook serving a
certificate made here, registers URL-mode webhook configurations pointing at that process
(taken from the Helm chart's own webhook configurations, so the chart's rules are what the
real API server applies), and, on clusters whose nodes have no kubelet, runs the pod simulator.
Everything is scoped to one throw-away namespace, so a shared cluster is not disturbed:
the operator watches only that namespace and the webhooks only match it.

Environment:
- `KUBECONFIG` (required): the cluster.
- `KUBETRAIN_E2E_WEBHOOK_HOST` (default 127.0.0.1): the address the API server uses to reach
  the webhook on this machine. Loopback works for an API server on this machine; for kind use
  the host's address on the kind network (e.g. 172.18.0.1).
- `KUBETRAIN_E2E_SIMULATE_PODS` = auto (default) | 1 | 0: run
  `kubetrain.devcluster.kubelet.simulator.PodSimulator`; auto = when no node is Ready.
- `KUBETRAIN_E2E_IMAGE` (default busybox:1.36): image of the job containers (real kubelets).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib
import ipaddress
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from jobs import job
from serving import free_port

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.jobs.trainercrds import group_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    ResourceRef,
    job_resource,
)

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "crds"
CHART_DIR = ROOT / "charts" / "kubetrain"
NODES = ResourceRef("", "v1", "nodes", "Node", False)
SIMULATED_NODE_PREFIX = "kubetrain-sim-node"  # PodSimulator's default node_prefix
T = TypeVar("T")
Obj = dict[str, Any]

# The marks of every e2e module (`pytestmark = support.E2E`): run with `-m e2e` against the
# cluster $KUBECONFIG names, one event loop per module (the `cluster` fixture of conftest.py).
E2E = [
    pytest.mark.e2e,
    pytest.mark.skipif(not os.environ.get("KUBECONFIG"), reason="e2e needs a cluster: set KUBECONFIG"),
    pytest.mark.asyncio(loop_scope="module"),
]


# --------------------------------------------------------------------------------------------
# Waiting


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, within: float = 60.0, what: str = "condition"
) -> T:
    """Poll `probe` until it returns something other than None/False; fail after `within` s."""
    deadline = time.monotonic() + within
    last: T | None = None
    while True:
        last = await probe()
        if last is not None and last is not False:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:.0f}s waiting for {what}")
        await asyncio.sleep(0.25)


async def read(cluster: Any, ref: ResourceRef, name: str) -> Obj | None:
    """Object `name` of `ref` in the scenario's namespace (`cluster.namespace`), None when there
    is none."""
    try:
        obj: Obj = await cluster.client.get(ref, cluster.namespace, name)
        return obj
    except ApiError as exc:
        if exc.is_not_found:
            return None
        raise


def created_at(obj: Obj) -> datetime:
    """`metadata.creationTimestamp` (whole seconds, as the API server writes it)."""
    return datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def condition(job: Obj, type_: str) -> Obj | None:
    for cond in job.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == type_:
            result: Obj = cond
            return result
    return None


def has_condition(job: Obj, type_: str, status: str = "True") -> bool:
    cond = condition(job, type_)
    return cond is not None and cond.get("status") == status


# --------------------------------------------------------------------------------------------
# Job manifests


def job_manifest(
    kind: str,
    name: str,
    namespace: str,
    replicas: dict[str, int],
    *,
    restart_policy: str | None = None,
    run_policy: Obj | None = None,
    image: str | None = None,
) -> Obj:
    """A minimal job whose containers exit 0 at once on a real kubelet."""
    return job(
        kind,
        name,
        replicas,
        namespace=namespace,
        image=image or os.environ.get("KUBETRAIN_E2E_IMAGE", "busybox:1.36"),
        restart_policy=restart_policy or None,
        resources={"requests": {"cpu": "10m", "memory": "16Mi"}},
        container_extra={"command": ["sh", "-c", "exit 0"]},
        run_policy=run_policy or None,
    )


# --------------------------------------------------------------------------------------------
# The operator process


def write_serving_certificate(cert_dir: Path, host: str) -> bytes:
    """A CA and a serving certificate for `host` (IP or DNS name) in cert_dir; returns the CA PEM."""
    from kubetrain.certs.generate import generate_bundle

    try:
        ipaddress.ip_address(host)
        bundle = generate_bundle(["localhost"], [host])
    except ValueError:
        bundle = generate_bundle([host])
    cert_dir.mkdir(parents=True, exist_ok=True)
    (cert_dir / "tls.crt").write_bytes(bundle.serving.cert_pem)
    (cert_dir / "tls.key").write_bytes(bundle.serving.key_pem)
    (cert_dir / "ca.crt").write_bytes(bundle.ca.cert_pem)  # what pods verify the progress endpoint with
    return bundle.ca_bundle


@dataclass
class OperatorProcess:
    """`kubetrain run` as a child process, started exactly as the Deployment starts it
    (flags as rendered by the chart, directory certificate mode), but scoped to one namespace."""

    kubeconfig: str
    namespace: str
    cert_dir: Path
    webhook_host: str
    webhook_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    log_path: Path = field(default_factory=lambda: Path(tempfile.mkstemp(suffix=".log")[1]))
    process: subprocess.Popen[bytes] | None = None
    api_groups: tuple[str, ...] = ("kubetrain.io",)
    extra_args: tuple[str, ...] = ()  # more `kubetrain run` flags (e.g. the progress endpoint's)

    def args(self) -> list[str]:
        listen = "127.0.0.1" if self.webhook_host in ("127.0.0.1", "localhost") else "0.0.0.0"
        return [
            "run",
            f"--kubeconfig={self.kubeconfig}",
            f"--namespaces={self.namespace}",
            "--no-leader-elect",
            "--gang-scheduler=none",
            "--log-level=debug",
            f"--metrics-port={self.metrics_port}",
            f"--webhook-host={listen}",
            f"--webhook-port={self.webhook_port}",
            "--cert-mode=directory",
            f"--cert-dir={self.cert_dir}",
            f"--api-groups={','.join(self.api_groups)}",
            *self.extra_args,
        ]

    def start(self) -> None:
        code = "import sys; from kubetrain.cli import main; sys.exit(main(sys.argv[1:]))"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code, *self.args()],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def wait_ready(self, within: float = 90.0) -> None:
        url = f"http://127.0.0.1:{self.metrics_port}/readyz"

        def ready() -> bool:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    return bool(resp.status == 200)
            except (urllib.error.URLError, OSError):
                return False

        async def probe() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(
                    f"kubetrain run exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            return await asyncio.to_thread(ready)

        try:
            await eventually(probe, within=within, what="the operator's /readyz")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- operator log ---\n{self.log_tail()}") from None

    def stop(self) -> None:
        """SIGTERM (graceful stop, as the kubelet does), then SIGKILL after 20 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


# --------------------------------------------------------------------------------------------
# Cluster set-up and clean-up


def chart_webhook_configurations(
    name: str, base_url: str, ca_pem: bytes, namespace: str, values: Obj | None = None
) -> tuple[Obj, Obj]:
    """The chart's two webhook configurations (rendered with `values`), switched to URL mode and
    limited to `namespace`."""
    import helm_python as helm

    with helm.Chart.load(CHART_DIR) as chart:
        rendered = chart.render(values or {}, name="kubetrain-e2e", namespace=namespace)
    docs = [d for d in yaml.safe_load_all(rendered["kubetrain/templates/webhooks.yaml"]) if d]
    by_kind = {d["kind"]: d for d in docs}
    ca_bundle = base64.b64encode(ca_pem).decode()
    out: list[Obj] = []
    for kind, suffix, path in (
        ("MutatingWebhookConfiguration", "mutating", "/mutate"),
        ("ValidatingWebhookConfiguration", "validating", "/validate"),
    ):
        config = by_kind[kind]
        config["metadata"] = {
            "name": f"{name}-{suffix}",
            "labels": {"app.kubernetes.io/part-of": "kubetrain-e2e"},
        }
        for hook in config["webhooks"]:
            assert hook["clientConfig"]["service"]["path"] == path
            hook["clientConfig"] = {"url": f"{base_url}{path}", "caBundle": ca_bundle}
            hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        out.append(config)
    return out[0], out[1]


async def install_crds(client: KubeClient, groups: tuple[str, ...] = ("kubetrain.io",)) -> list[str]:
    """Create the job CRDs that are missing (kubetrain.io's from crds/, another group's as
    `kubetrain crds --group` makes them); returns the names this call created."""
    files = sorted(CRD_DIR.glob("*.yaml"))
    assert files, f"no CRDs in {CRD_DIR} (kubetrain crds --out crds/)"
    crds = [crd for path in files for crd in yaml.safe_load_all(path.read_text()) if crd]
    crds += [crd for group in groups if group != "kubetrain.io" for crd in group_crds(group)]
    created = await create_missing(client, CUSTOM_RESOURCE_DEFINITIONS, crds)
    for crd in crds:
        await wait_established(client, crd["metadata"]["name"])
    return created


async def wait_established(client: KubeClient, name: str) -> None:
    async def established() -> bool:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, None, name)
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in crd.get("status", {}).get("conditions", [])
        )

    await eventually(established, within=60, what=f"CRD {name} to be Established")


async def delete_quietly(client: KubeClient, ref: ResourceRef, namespace: str | None, name: str) -> None:
    with contextlib.suppress(ApiError):
        await client.delete(ref, namespace, name, propagation_policy="Background")


async def create_missing(client: KubeClient, ref: ResourceRef, objs: list[Obj]) -> list[str]:
    """Create the cluster-scoped `objs` that do not exist yet; the names this call created."""
    created: list[str] = []
    for obj in objs:
        try:
            await client.create(ref, obj)
            created.append(obj["metadata"]["name"])
        except ApiError as exc:
            if not exc.is_already_exists:
                raise
    return created


def trainjob(namespace: str, name: str, trainer: Obj, runtime: str = "torch-distributed") -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
    }


@contextlib.asynccontextmanager
async def default_runtimes_installed(client: KubeClient) -> AsyncIterator[None]:
    """Trainer's default ClusterTrainingRuntimes, created where missing (removed again after)."""
    created: list[str] = []
    try:
        created = await create_missing(client, CLUSTER_TRAINING_RUNTIMES, default_runtimes())
        yield
    finally:
        for name in created:
            await delete_quietly(client, CLUSTER_TRAINING_RUNTIMES, None, name)


def invalid_job(namespace: str, name: str = "invalid") -> Obj:
    """A PyTorchJob only the validating webhook can refuse: the CRD keeps pod templates as
    unknown fields, so a container without an image passes the CRD schema."""
    job = job_manifest("PyTorchJob", name, namespace, {"Master": 1})
    del job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
    return job


async def create_dry_run(client: KubeClient, job: Obj) -> Obj:
    ref = job_resource(job["kind"])
    path = ref.path(job["metadata"]["namespace"])
    result: Obj = await client.request("create", "POST", path, query={"dryRun": "All"}, body=job)
    return result


async def wait_webhooks_active(client: KubeClient, namespace: str) -> None:
    """The API server picks up new webhook configurations asynchronously: wait until a
    dry-run create of an invalid job is refused by our webhook."""

    async def refused() -> bool:
        try:
            await create_dry_run(client, invalid_job(namespace, "webhook-probe"))
        except ApiError as exc:
            return "denied the request" in exc.message
        return False

    await eventually(refused, within=60, what="the webhook configurations to take effect")


async def should_simulate_pods(client: KubeClient) -> bool:
    setting = os.environ.get("KUBETRAIN_E2E_SIMULATE_PODS", "auto").lower()
    if setting in ("1", "true", "yes"):
        return True
    if setting in ("0", "false", "no"):
        return False
    nodes = await client.list(NODES)
    for node in nodes.get("items", []):
        if node["metadata"]["name"].startswith(SIMULATED_NODE_PREFIX):
            continue  # left by an earlier simulated run, no kubelet behind it
        for cond in node.get("status", {}).get("conditions", []):
            if cond.get("type") == "Ready" and cond.get("status") == "True":
                return False
    return True


@dataclass
class Cluster:
    """What a scenario gets: a client, its namespace, and the pod simulator when pods are
    simulated (None on clusters with real kubelets)."""

    client: KubeClient
    namespace: str
    kubeconfig: str
    simulator: Any | None
    operator: OperatorProcess

    async def create_job(self, job: Obj) -> Obj:
        ref = job_resource(job["kind"])
        created: Obj = await self.client.create(ref, job)
        return created

    async def get_job(self, kind: str, name: str) -> Obj | None:
        try:
            job: Obj = await self.client.get(job_resource(kind), self.namespace, name)
            return job
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    async def wait_job(
        self, kind: str, name: str, what: str, check: Callable[[Obj], bool], within: float = 90
    ) -> Obj:
        async def probe() -> Obj | None:
            job = await self.get_job(kind, name)
            return job if job is not None and check(job) else None

        try:
            return await eventually(probe, within=within, what=f"{kind} {name}: {what}")
        except AssertionError as exc:
            job = await self.get_job(kind, name)
            status = (job or {}).get("status")
            raise AssertionError(
                f"{exc}\nstatus: {status}\n--- operator log ---\n{self.operator.log_tail()}"
            ) from None

    async def pods(self, job_name: str) -> list[Obj]:
        page = await self.client.list(
            PODS, self.namespace, label_selector=f"kubetrain.io/job-name={job_name}"
        )
        items: list[Obj] = page.get("items", [])
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    async def wait_pods(self, job_name: str, count: int, *, running: bool, within: float = 90) -> list[Obj]:
        """Wait for `count` live pods of the job (Running ones when `running`)."""

        async def probe() -> list[Obj] | None:
            pods = await self.pods(job_name)
            if running:
                pods = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
            return pods if len(pods) == count else None

        try:
            return await eventually(probe, within=within, what=f"{count} pods of {job_name}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- operator log ---\n{self.operator.log_tail()}") from None

    async def finish_pods(self, job_name: str, count: int, exit_codes: dict[str, int] | None = None) -> None:
        """Let the job's `count` pods terminate: through the simulator with the given exit codes
        (pod name -> code, default 0), or, with real kubelets, by their own `exit 0`."""
        if self.simulator is None:
            return
        pods = await self.wait_pods(job_name, count, running=True)
        # The master-role pod last: its success ends the job, and cleanPodPolicy then deletes
        # pods that are still running.
        pods.sort(key=lambda p: p["metadata"].get("labels", {}).get("kubetrain.io/job-role") == "master")
        for pod in pods:
            name = pod["metadata"]["name"]
            await self.simulator.finish(self.namespace, name, exit_code=(exit_codes or {}).get(name, 0))


async def open_cluster(
    kubeconfig: str,
    api_groups: tuple[str, ...] = ("kubetrain.io",),
    operator_args: Callable[[str], tuple[str, ...]] | None = None,
) -> tuple[Cluster, Callable[[], Awaitable[None]]]:
    """Set everything up, the operator serving `api_groups` (with the extra `kubetrain run`
    flags `operator_args(host)` returns, `host` being the address the operator is reached at);
    returns the cluster handle and the clean-up coroutine function."""
    client = await KubeClient.connect(kubeconfig)
    namespace = f"kubetrain-e2e-{uuid.uuid4().hex[:8]}"
    host = os.environ.get("KUBETRAIN_E2E_WEBHOOK_HOST", "127.0.0.1")
    cleanups: list[Callable[[], Awaitable[None]]] = []

    async def cleanup() -> None:
        for step in reversed(cleanups):
            with contextlib.suppress(Exception):
                await step()
        await client.close()

    try:
        created_crds = await install_crds(client, api_groups)

        async def remove_crds() -> None:
            for name in created_crds:
                await delete_quietly(client, CUSTOM_RESOURCE_DEFINITIONS, None, name)

        cleanups.append(remove_crds)

        await client.create(
            NAMESPACES,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {"app.kubernetes.io/part-of": "kubetrain-e2e"}},
            },
        )

        async def remove_namespace() -> None:
            await delete_quietly(client, NAMESPACES, None, namespace)

        cleanups.append(remove_namespace)

        cert_dir = Path(tempfile.mkdtemp(prefix="kubetrain-e2e-certs-"))
        ca_pem = write_serving_certificate(cert_dir, host)
        operator = OperatorProcess(
            kubeconfig,
            namespace,
            cert_dir,
            host,
            api_groups=api_groups,
            extra_args=operator_args(host) if operator_args is not None else (),
        )
        operator.start()

        async def stop_operator() -> None:
            await asyncio.to_thread(operator.stop)

        cleanups.append(stop_operator)
        await operator.wait_ready()

        url_host = f"[{host}]" if ":" in host else host
        mutating, validating = chart_webhook_configurations(
            namespace,
            f"https://{url_host}:{operator.webhook_port}",
            ca_pem,
            namespace,
            {"apiGroups": list(api_groups)},
        )
        await client.create(MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, validating)

        async def remove_webhooks() -> None:
            await delete_quietly(client, MUTATING_WEBHOOK_CONFIGURATIONS, None, mutating["metadata"]["name"])
            await delete_quietly(
                client, VALIDATING_WEBHOOK_CONFIGURATIONS, None, validating["metadata"]["name"]
            )

        cleanups.append(remove_webhooks)
        await wait_webhooks_active(client, namespace)
        # CRDs with a conversion webhook (mpijobs.kubeflow.org) this call installed: /convert on
        # the operator's webhook port, trusted by the same CA (the chart injects the caBundle).
        for crd in [c for g in api_groups if g != "kubetrain.io" for c in group_crds(g)]:
            if crd["spec"].get("conversion") and crd["metadata"]["name"] in created_crds:
                client_config = {
                    "url": f"https://{url_host}:{operator.webhook_port}/convert",
                    "caBundle": base64.b64encode(ca_pem).decode(),
                }
                patch = [
                    {"op": "replace", "path": "/spec/conversion/webhook/clientConfig", "value": client_config}
                ]
                await client.patch(
                    CUSTOM_RESOURCE_DEFINITIONS, None, crd["metadata"]["name"], patch, patch_type="json"
                )

        simulator = None
        if await should_simulate_pods(client):
            kubelet = importlib.import_module("kubetrain.devcluster.kubelet.simulator")
            simulator = kubelet.PodSimulator(kubeconfig, nodes=3, namespace=namespace)
            await simulator.start()

            async def stop_simulator() -> None:
                await simulator.stop()

            cleanups.append(stop_simulator)
    except BaseException:
        await cleanup()
        raise
    return Cluster(client, namespace, kubeconfig, simulator, operator), cleanup
