"""The Helm chart's RBAC is sufficient: `kubetrain run` under the chart's ServiceAccount never gets a 403.

The chart is rendered by the real Helm engine (helm-python-sdk); its ServiceAccount, Roles,
ClusterRoles, bindings and webhook configurations are applied to a devcluster that authorizes
with Kubernetes RBAC semantics (`DevCluster(authorization="RBAC")`, kubetrain.devcluster.apiserver.auth.rbac),
next to the CRDs. Then the real operator (`kubetrain.commands.run.serve`) runs in-process with the
container args of the rendered Deployment, authenticated as that ServiceAccount. Only what a pod
provides differently is overridden: free loopback ports, the kubeconfig (the ServiceAccount's
token, as in-cluster config would), `--webhook-host 127.0.0.1` and a private `--cert-dir`.

The operator then does everything it does in production: leader election (a Lease in the release
namespace), self-managed certificates (creates its Secret, patches caBundle into the rendered
webhook configurations, watches both by name), admission reviews from the API server through the
rendered webhook Service reference, a PyTorchJob to Succeeded with events, an MPIJob to Succeeded
(its ConfigMap and SSH Secret created — while the ServiceAccount is refused get and list on
Secrets), TTL deletion, and a TrainingPolicy status write. The API server must refuse none of
its requests. Removing one verb the operator needs from the chart's ClusterRole makes the same
run produce a 403, so the check can fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import helm_python as helm
import pytest
import yaml
from jobs import job
from serving import free_port
from trainjobs import torchtune_runtime

from kubetrain import cli
from kubetrain.commands import run
from kubetrain.devcluster import DevCluster, GangSchedulerSimulator, PodSimulator, podgroup_crd
from kubetrain.jobs.trainercrds import group_crds
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    TRAINING_POLICIES,
    TRAINJOBS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    ResourceRef,
    job_resource,
)

from .controller_support import eventually

CHART = Path(__file__).resolve().parents[2] / "charts" / "kubetrain"
RELEASE = "kt"
NAMESPACE = "kubetrain-system"
WAIT = 60.0  # upper bound for one asynchronous step on a loaded 2-core CI machine
# Readiness includes the status-server child (`statusServer.separateProcess`): a Python process
# importing kubetrain and syncing its informers — about 3 s, far more on a loaded 2-core machine.
READY_WAIT = 180.0

Obj = dict[str, Any]

# The kinds of the rendered chart applied to the API server (the Deployment is the operator
# itself, run in-process; Services and the PodDisruptionBudget need no API permission).
APPLIED: dict[str, ResourceRef] = {
    "ServiceAccount": ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True),
    "ClusterRole": ResourceRef("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    "ClusterRoleBinding": ResourceRef(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
    "Role": ResourceRef("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    "RoleBinding": ResourceRef("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
}


def render(values: Obj) -> list[Obj]:
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs: list[Obj] = []
    for path, text in sorted(rendered.items()):
        if not path.endswith("NOTES.txt"):
            docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def one(docs: list[Obj], kind: str) -> Obj:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


@dataclass
class Release:
    docs: list[Obj]
    cluster: DevCluster
    admin: KubeClient
    user: str  # the operator's username
    metrics_port: int
    kubeconfig: str  # the operator's: its ServiceAccount token
    scheme: str = "http"  # of the metrics port: https with metrics.secure

    @property
    def metrics_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.metrics_port}"

    def operator_denials(self) -> list[str]:
        return [d.message for d in self.cluster.denials if d.user == self.user]


def pytorch_job(name: str, ttl: int | None = None) -> Obj:
    run_policy: Obj = {"cleanPodPolicy": "None"}
    if ttl is not None:
        run_policy["ttlSecondsAfterFinished"] = ttl
    return job(
        "PyTorchJob",
        name,
        {"Master": 1, "Worker": 2},
        namespace=None,
        image="docker.io/pytorch/pytorch:2.3.0",
        restart_policy="OnFailure",
        template_metadata={"annotations": {"sim.kubetrain.io/run-seconds": "0.2"}},
        run_policy=run_policy,
    )


def mpi_job(name: str) -> Obj:
    template = {
        "metadata": {"annotations": {"sim.kubetrain.io/run-seconds": "0.2"}},
        "spec": {"containers": [{"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}]},
    }
    worker = {"metadata": {}, "spec": template["spec"]}  # sshd: runs until the launcher is done
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {"template": template},
                "Worker": {"replicas": 2, "template": worker},
            },
        },
    }


SECRETS = ResourceRef("", "v1", "secrets", "Secret", True)
CONFIG_MAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
LEASES = ResourceRef("coordination.k8s.io", "v1", "leases", "Lease", True)
CERT_SECRET = f"{RELEASE}-kubetrain-webhook-tls"
RBAC_GROUP = "rbac.authorization.k8s.io"


async def apply_chart(
    cluster: DevCluster, admin: KubeClient, docs: list[Obj], gang: str, groups: list[str]
) -> None:
    namespaces = {NAMESPACE} | {d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")}
    for ns in sorted(namespaces):
        with contextlib.suppress(ApiError):
            await admin.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            )
    crds = [crd for group in groups for crd in group_crds(group)]
    crds += [podgroup_crd(gang)] if gang != "none" else []
    for crd in crds:
        await admin.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    for crd in crds:
        spec = crd["spec"]
        group, version, plural = spec["group"], spec["versions"][0]["name"], spec["names"]["plural"]
        await eventually(
            functools.partial(admin.has_api, group, version, plural), within=WAIT, what=f"the {plural} API"
        )
    for doc in docs:
        ref = APPLIED.get(doc["kind"])
        if ref is not None:
            await admin.create(ref, doc, namespace=doc["metadata"].get("namespace"))


@contextlib.asynccontextmanager
async def running_release(
    tmp_path: Path,
    values: Obj,
    edit: Callable[[list[Obj]], None] | None = None,
    stale_secret: bool = False,
) -> AsyncIterator[Release]:
    """The chart applied to an RBAC-enforcing devcluster and the operator running as its
    ServiceAccount. `stale_secret`: the certificate Secret exists without certificates (left
    over from an earlier install), so the operator has to update it rather than create it."""
    docs = render(values)
    if edit is not None:
        edit(docs)
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    sa = one(docs, "ServiceAccount")["metadata"]["name"]
    webhook_port, metrics_port = free_port(), free_port()
    service = next(
        d for d in docs if d["kind"] == "Service" and any(p["port"] == 443 for p in d["spec"]["ports"])
    )
    cluster = DevCluster(
        workdir=str(tmp_path / "devcluster"),
        authorization="RBAC",
        service_ports={(NAMESPACE, service["metadata"]["name"], 443): webhook_port},
    )
    await cluster.start()
    admin = await KubeClient.connect(cluster.kubeconfig_path)
    stop = asyncio.Event()
    operator: asyncio.Task[None] | None = None
    gang = values.get("gangScheduler", "none")
    # Binds default-scheduler pods; with a gang scheduler, its simulator binds the gang's pods.
    simulator = PodSimulator(cluster.kubeconfig_path, scheduler_names=("default-scheduler",))
    gang_simulator: GangSchedulerSimulator | None = None
    try:
        await apply_chart(cluster, admin, docs, gang, list(values.get("apiGroups") or ["kubetrain.io"]))
        if stale_secret:
            # a kubernetes.io/tls Secret must hold tls.crt and tls.key; these do not parse
            stale = {"tls.crt": "c3RhbGU=", "tls.key": "c3RhbGU="}
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "data": stale}
            secret["metadata"] = {"name": CERT_SECRET}
            await admin.create(SECRETS, secret, namespace=NAMESPACE)
        token = cluster.add_service_account_token(NAMESPACE, sa)
        args = cli.build_parser().parse_args(container["args"])
        assert args.func is run.run
        args.kubeconfig = cluster.write_token_kubeconfig(str(tmp_path / "sa-kubeconfig"), token, NAMESPACE)
        args.metrics_port, args.webhook_port, args.webhook_host = metrics_port, webhook_port, "127.0.0.1"
        if args.status_server_port:  # the child (`--status-server-process`) binds it on 0.0.0.0
            args.status_server_port = free_port()
        args.cert_dir = str(tmp_path / "certs")  # the pod's emptyDir
        operator = asyncio.create_task(run.serve(args, stop), name="kubetrain run")
        scheme = "https" if "--metrics-secure" in container["args"] else "http"
        user = f"system:serviceaccount:{NAMESPACE}:{sa}"
        release = Release(docs, cluster, admin, user, metrics_port, args.kubeconfig, scheme)
        await simulator.start()
        if gang != "none":
            gang_simulator = GangSchedulerSimulator(
                cluster.kubeconfig_path, gang, node_names=simulator.node_names
            )
            await gang_simulator.start()
        yield release
    finally:
        stop.set()
        if operator is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(operator, 30)
        if gang_simulator is not None:
            await gang_simulator.stop()
        await simulator.stop()
        await admin.close()
        await cluster.stop()


async def ready(release: Release) -> None:
    async def check() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{release.metrics_url}/readyz", ssl=False) as resp,
            ):
                return resp.status == 200
        except aiohttp.ClientError:
            return False

    await eventually(check, within=READY_WAIT, what="the operator's /readyz")


async def ca_bundles_injected(release: Release) -> None:
    for doc in release.docs:
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            ref, name = APPLIED[doc["kind"]], doc["metadata"]["name"]

            async def injected(ref: ResourceRef = ref, name: str = name) -> bool:
                config = await release.admin.get(ref, None, name)
                return all(w["clientConfig"].get("caBundle") for w in config["webhooks"])

            await eventually(injected, within=WAIT, what=f"caBundle in {name}")


async def job_succeeded(admin: KubeClient, namespace: str, name: str, kind: str = "PyTorchJob") -> Obj:
    ref = job_resource(kind)

    async def succeeded() -> Obj | None:
        job = await admin.get(ref, namespace, name)
        conditions = (job.get("status") or {}).get("conditions") or []
        done = any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)
        return job if done else None

    result: Obj = await eventually(succeeded, within=WAIT, what=f"{kind} {namespace}/{name} Succeeded")
    return result


async def deleted(admin: KubeClient, ref: ResourceRef, namespace: str, name: str) -> None:
    async def gone() -> bool:
        try:
            await admin.get(ref, namespace, name)
        except ApiError as err:
            return err.status == 404
        return False

    await eventually(gone, within=WAIT, what=f"{ref.plural} {namespace}/{name} deleted")


SCENARIOS = [
    pytest.param({}, "default", False, id="defaults-all-namespaces"),
    pytest.param(
        {"watchNamespaces": ["team-a", "team-b"]}, "team-b", True, id="watch-namespaces-renew-secret"
    ),
    pytest.param({"gangScheduler": "volcano", "replicas": 2}, "default", False, id="volcano-two-replicas"),
]


@pytest.mark.parametrize(("values", "job_namespace", "stale_secret"), SCENARIOS)
async def test_operator_under_the_chart_rbac_is_never_refused(
    tmp_path: Path, values: Obj, job_namespace: str, stale_secret: bool
) -> None:
    values = {**values, "certificates": {"mode": "selfManaged"}}
    async with running_release(tmp_path, values, stale_secret=stale_secret) as release:
        admin = release.admin
        await ready(release)
        await ca_bundles_injected(release)
        # The operator's Secret: created (or, when stale, updated by name) under the Role.
        secret = await admin.get(SECRETS, NAMESPACE, CERT_SECRET)
        assert secret["type"] == "kubernetes.io/tls"
        assert {"tls.crt", "tls.key", "ca.crt"} <= set(secret["data"])
        records = release.cluster.requests.records
        writes = {r.verb for r in records if r.user == release.user and r.resource == "secrets"}
        assert ("update" if stale_secret else "create") in writes

        # A PyTorchJob through the webhooks (Service reference -> the operator) to Succeeded.
        jobs = job_resource("PyTorchJob")
        created = await admin.create(jobs, pytorch_job("ddp"), namespace=job_namespace)
        master = created["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
        # the webhook's default port, its protocol the CRD's default (as Kubeflow's CRD has it)
        assert master["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}]
        await job_succeeded(admin, job_namespace, "ddp")

        async def job_event() -> bool:  # Events are recorded right after the status write
            events = await admin.list(ResourceRef("", "v1", "events", "Event", True), job_namespace)
            return any(e["involvedObject"]["name"] == "ddp" for e in events["items"])

        await eventually(job_event, within=WAIT, what="an Event on the job")

        # An MPIJob: its ConfigMap and SSH Secret are created, and the operator reads no Secret.
        await admin.create(job_resource("MPIJob"), mpi_job("pi"), namespace=job_namespace)
        await job_succeeded(admin, job_namespace, "pi", kind="MPIJob")
        ssh = await admin.get(SECRETS, job_namespace, "pi-ssh")
        assert ssh["type"] == "kubernetes.io/ssh-auth" and set(ssh["data"]) == {
            "ssh-privatekey",
            "ssh-publickey",
        }
        config = await admin.get(CONFIG_MAPS, job_namespace, "pi-config")
        assert config["data"]["hostfile"].count("slots=1") == 2
        secret_verbs = {
            r.verb
            for r in records
            if r.user == release.user and r.resource == "secrets" and r.namespace == job_namespace
        }
        assert secret_verbs == {"create"}
        # The chart's ServiceAccount itself is refused reading Secrets (get, list in the job's
        # namespace and cluster-wide): these probes are the only denials the run may show.
        before = len(release.cluster.denials)
        async with await KubeClient.connect(release.kubeconfig) as operator_client:
            for attempt in (
                operator_client.get(SECRETS, job_namespace, "pi-ssh"),
                operator_client.list(SECRETS, job_namespace),
                operator_client.list(SECRETS, None),
            ):
                with pytest.raises(ApiError) as refused:
                    await attempt
                assert refused.value.status == 403
        probes = [d.message for d in release.cluster.denials[before:]]
        assert len(probes) == 3 and all("secrets" in m for m in probes), probes

        # TTL: a finished job with ttlSecondsAfterFinished 0 is deleted by the operator.
        await admin.create(jobs, pytorch_job("ttl", ttl=0), namespace=job_namespace)
        await deleted(admin, jobs, job_namespace, "ttl")

        # A TrainingPolicy: the operator writes its status.
        policy = yaml.safe_load((CHART.parents[1] / "examples/policies/gpu-quota.yaml").read_text())
        await admin.create(TRAINING_POLICIES, policy)

        async def policy_status() -> bool:
            got = await admin.get(TRAINING_POLICIES, None, policy["metadata"]["name"])
            return (got.get("status") or {}).get("observedGeneration") == got["metadata"]["generation"]

        await eventually(policy_status, within=WAIT, what="the TrainingPolicy status")

        # Leader election: the Lease was created, and is renewed (get + update by name).
        lease_name = f"{RELEASE}-kubetrain-controller"
        first = await admin.get(LEASES, NAMESPACE, lease_name)
        assert first["spec"]["holderIdentity"]

        async def renewed() -> bool:
            lease = await admin.get(LEASES, NAMESPACE, lease_name)
            return bool(lease["spec"]["renewTime"] != first["spec"]["renewTime"])

        await eventually(renewed, within=WAIT, what="a Lease renewal")

        if values.get("gangScheduler", "none") != "none":  # the ddp job ran as a gang
            podgroups = {r.verb for r in records if r.user == release.user and r.resource == "podgroups"}
            assert {"list", "watch", "create"} <= podgroups
            # The PodGroup CRD is watched by name (installing the scheduler later needs no restart).
            crds = {
                r.verb
                for r in records
                if r.user == release.user and r.resource == "customresourcedefinitions"
            }
            assert crds == {"list", "watch"}

        operator_requests = [r for r in release.cluster.requests.records if r.user == release.user]
        assert len(operator_requests) > 20, "the operator did talk to the API server as its ServiceAccount"
        assert [m for m in release.operator_denials() if m not in probes] == []


SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)


async def test_secure_metrics_under_the_chart_rbac(tmp_path: Path) -> None:
    """metrics.secure: the operator reviews a scraper's token and access under the chart's
    ClusterRole (no 403 for its TokenReviews and SubjectAccessReviews); a scraper bound to the
    chart's metrics-reader ClusterRole gets the metrics, one without the binding a 403."""
    values = {"certificates": {"mode": "selfManaged"}, "metrics": {"secure": True}}
    async with running_release(tmp_path, values) as release:
        assert release.scheme == "https"
        await ready(release)
        admin, cluster = release.admin, release.cluster
        await admin.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}}
        )
        for name in ("prometheus", "stranger"):
            await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace="monitoring")
        reader = next(
            d
            for d in release.docs
            if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("-metrics-reader")
        )
        await admin.create(
            APPLIED["ClusterRoleBinding"],
            {
                "metadata": {"name": "prometheus-kubetrain"},
                "roleRef": {
                    "apiGroup": RBAC_GROUP,
                    "kind": "ClusterRole",
                    "name": reader["metadata"]["name"],
                },
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
            },
        )

        async def scrape(token: str | None) -> tuple[int, str]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{release.metrics_url}/metrics", headers=headers, ssl=False) as resp,
            ):
                return resp.status, await resp.text()

        assert (await scrape(None))[0] == 401
        status, body = await scrape(cluster.add_service_account_token("monitoring", "stranger"))
        assert status == 403 and 'cannot get path \\"/metrics\\"' in body
        status, body = await scrape(cluster.add_service_account_token("monitoring", "prometheus"))
        assert status == 200 and "kubetrain_api_requests_total" in body
        reviews = {
            r.resource for r in cluster.requests.records if r.user == release.user and r.verb == "create"
        }
        assert {"tokenreviews", "subjectaccessreviews"} <= reviews
        assert release.operator_denials() == []


async def torchtune_trainjob_started(admin: KubeClient) -> None:
    """A TrainJob `default/tune` of the torchtune runtime, once its two initializer pods exist."""
    await admin.create(CLUSTER_TRAINING_RUNTIMES, torchtune_runtime())
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tune"},
        "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}},
    }
    await admin.create(TRAINJOBS, trainjob, namespace="default")

    async def initializers() -> bool:
        pods = await admin.list(PODS, "default", label_selector="jobset.sigs.k8s.io/jobset-name=tune")
        return len(pods["items"]) == 2

    await eventually(initializers, within=WAIT, what="the TrainJob's initializer pods")


async def test_a_trainjob_with_a_volume_claim_under_the_chart_rbac_is_never_refused(tmp_path: Path) -> None:
    """Serving Trainer: a TrainJob of the torchtune runtime gets its PVC (create only) and its
    initializer pods, with no 403 for the operator."""
    values = {"apiGroups": ["kubetrain.io", "trainer.kubeflow.org"], "certificates": {"mode": "selfManaged"}}
    async with running_release(tmp_path, values) as release:
        admin = release.admin
        await ready(release)
        await ca_bundles_injected(release)
        await torchtune_trainjob_started(admin)
        pvc = await admin.get(PERSISTENT_VOLUME_CLAIMS, "default", "initializer-tune")
        assert pvc["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
        used = {
            r.verb
            for r in release.cluster.requests.records
            if r.user == release.user and r.resource == "persistentvolumeclaims"
        }
        assert used == {"create"}

        # A spec update is checked against the runtime snapshot: the webhook GETs its ConfigMap.
        async def suspended() -> bool:
            tune = await admin.get(TRAINJOBS, "default", "tune")
            tune["spec"]["suspend"] = True
            try:
                return bool((await admin.replace(TRAINJOBS, tune))["spec"]["suspend"])
            except ApiError as err:
                if err.is_conflict:  # the operator wrote the status meanwhile
                    return False
                raise

        await eventually(suspended, within=WAIT, what="the TrainJob suspended")
        reads = [
            r.name
            for r in release.cluster.requests.records
            if r.user == release.user and r.resource == "configmaps" and r.verb == "get"
        ]
        assert reads and set(reads) == {"tune-runtime-snapshot"}
        assert release.operator_denials() == []


def _drop_verb(kind: str, resource: str, verb: str) -> Callable[[list[Obj]], None]:
    def edit(docs: list[Obj]) -> None:
        for doc in docs:
            if doc["kind"] != kind:
                continue
            for rule in doc["rules"]:
                if resource in rule.get("resources", []) and verb in rule["verbs"]:
                    rule["verbs"] = [v for v in rule["verbs"] if v != verb]
                    return
        raise AssertionError(f"no {kind} grants {verb} {resource}")

    return edit


async def test_a_missing_verb_in_the_cluster_role_is_refused_with_kubes_message(tmp_path: Path) -> None:
    values = {"certificates": {"mode": "selfManaged"}}
    async with running_release(tmp_path, values, _drop_verb("ClusterRole", "pods", "create")) as release:
        await ready(release)
        await ca_bundles_injected(release)
        await release.admin.create(job_resource("PyTorchJob"), pytorch_job("ddp"), namespace="default")
        expected = (
            f'pods is forbidden: User "{release.user}" cannot create resource "pods" '
            'in API group "" in the namespace "default"'
        )
        await eventually(
            lambda: expected in release.operator_denials(),
            within=WAIT,
            what="the operator's 403 on pod create",
        )
        denied = [r for r in release.cluster.requests.records if r.code == 403]
        assert denied and all(r.user == release.user for r in denied)
        assert {(r.verb, r.resource, r.namespace) for r in denied} == {("create", "pods", "default")}


def _drop_rule(kind: str, resource: str) -> Callable[[list[Obj]], None]:
    def edit(docs: list[Obj]) -> None:
        for doc in docs:
            if doc["kind"] == kind and any(resource in r.get("resources", []) for r in doc["rules"]):
                doc["rules"] = [r for r in doc["rules"] if resource not in r.get("resources", [])]
                return
        raise AssertionError(f"no {kind} grants {resource}")

    return edit


async def test_an_older_chart_without_the_podgroup_crd_rule_falls_back_to_discovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A chart from before the operator watched the PodGroup CRD: one 403 and one warning, then the
    operator runs as before (discovery at start found the PodGroup API), not stalled in cache sync."""
    values = {"gangScheduler": "volcano", "certificates": {"mode": "selfManaged"}}
    edit = _drop_rule("ClusterRole", "customresourcedefinitions")
    async with running_release(tmp_path, values, edit) as release:
        await ready(release)
        await ca_bundles_injected(release)
        await release.admin.create(job_resource("PyTorchJob"), pytorch_job("ddp"), namespace="default")
        await job_succeeded(release.admin, "default", "ddp")
        denied = [r for r in release.cluster.requests.records if r.code == 403]
        assert [(r.user, r.verb, r.resource) for r in denied] == [
            (release.user, "list", "customresourcedefinitions")
        ]
        warnings = [r.getMessage() for r in caplog.records if "no permission to watch" in r.getMessage()]
        assert len(warnings) == 1 and "podgroups.scheduling.volcano.sh" in warnings[0]


async def test_an_older_chart_without_the_nodes_and_priorityclasses_rules_still_runs_trainjobs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A chart from before the operator watched Nodes and PriorityClasses (for JobSet's exclusive
    placement): one 403 and one warning each, then TrainJobs run as before — the start is held
    by neither informer."""
    values = {"apiGroups": ["kubetrain.io", "trainer.kubeflow.org"], "certificates": {"mode": "selfManaged"}}
    drop_nodes, drop_classes = (
        _drop_rule("ClusterRole", "nodes"),
        _drop_rule("ClusterRole", "priorityclasses"),
    )

    def edit(docs: list[Obj]) -> None:
        drop_nodes(docs)
        drop_classes(docs)

    async with running_release(tmp_path, values, edit) as release:
        admin = release.admin
        await ready(release)
        await ca_bundles_injected(release)
        await torchtune_trainjob_started(admin)
        denied = [r for r in release.cluster.requests.records if r.code == 403]
        assert sorted((r.user, r.verb, r.resource) for r in denied) == [
            (release.user, "list", "nodes"),
            (release.user, "list", "priorityclasses"),
        ]
        for resource in ("nodes", "priorityclasses"):
            warnings = [
                r.getMessage()
                for r in caplog.records
                if f"no permission to list/watch {resource}" in r.getMessage()
            ]
            assert len(warnings) == 1 and "exclusive" in warnings[0]


async def test_an_older_chart_without_the_resourcequotas_rule_still_runs_jobs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A chart from before the operator watched ResourceQuotas: one 403 and one warning, then jobs
    run as before — the start is not held by that informer."""
    async with running_release(tmp_path, {}, _drop_rule("ClusterRole", "resourcequotas")) as release:
        admin = release.admin
        await ready(release)
        await admin.create(job_resource("PyTorchJob"), pytorch_job("ddp"), namespace="default")
        await job_succeeded(admin, "default", "ddp")
        denied = [r for r in release.cluster.requests.records if r.code == 403]
        assert [(r.user, r.verb, r.resource) for r in denied] == [(release.user, "list", "resourcequotas")]
        warnings = [
            r.getMessage()
            for r in caplog.records
            if "no permission to list/watch resourcequotas" in r.getMessage()
        ]
        assert len(warnings) == 1 and "back-off" in warnings[0]
