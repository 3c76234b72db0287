"""The operator's cluster domain (`--cluster-domain`, `$CUSTOM_CLUSTER_DOMAIN`): every DNS name
kubetrain writes into a pod or its config, with the domain set and not set — TF_CONFIG as
training-operator v1.9 writes it (pkg/controller.v1/tensorflow/pod_test.go's cases), MPIJob's
hostfile as mpi-operator's `--cluster-domain` (newConfigMap, updateDiscoverHostsInConfigMap), the
DNS search, Trainer's Flux broker config, the webhook certificate's SANs — and the names that
carry no domain left alone."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_builders import env_of, job, replica
from test_env_mpi import mpijob
from test_trainjob_flux import runtime as flux_runtime
from test_trainjob_flux import trainjob as flux_trainjob

from kubetrain import cli
from kubetrain.api.clusterdomain import DEFAULT_CLUSTER_DOMAIN, UNSET, ClusterDomain, cluster_domain
from kubetrain.api.labels import ANNOTATION_NETWORK_MODE, NETWORK_MODE_HOST
from kubetrain.certs.generate import covers, generate_bundle, service_dns_names
from kubetrain.certs.selfmanaged import SelfManagedCertificates
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.operator.desired import desired_children
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.plan import plan
from kubetrain.operator.prepare import JobCache, prepare_job
from kubetrain.operator.trainedge import plan_trainjob

Obj = dict[str, Any]
CORP = ClusterDomain("corp.example")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pods(obj: Obj, domain: ClusterDomain = UNSET, **settings: Any) -> dict[str, Obj]:
    prepared = prepare_job(obj, cluster_domain=domain, **settings)
    assert prepared.shape is not None, prepared.errors
    return {p["metadata"]["name"]: p for p in desired_children(prepared.shape).pods()}


def children(obj: Obj, domain: ClusterDomain = UNSET) -> dict[tuple[str, str], Obj]:
    prepared = prepare_job(obj, cluster_domain=domain)
    assert prepared.shape is not None, prepared.errors
    return {(c["kind"], c["metadata"]["name"]): c for c in desired_children(prepared.shape).all()}


# --- the setting ---------------------------------------------------------------------------------
def test_not_set_means_cluster_local_for_names_that_always_carry_a_domain() -> None:
    assert UNSET.name == DEFAULT_CLUSTER_DOMAIN == "cluster.local"
    assert UNSET.service_fqdn("pi", "ns") == "pi.ns.svc.cluster.local"
    assert UNSET.qualify("pi-worker-0.pi.ns.svc") == "pi-worker-0.pi.ns.svc"
    assert CORP.service_fqdn("pi", "ns") == "pi.ns.svc.corp.example"
    assert CORP.qualify("pi-worker-0.pi.ns.svc") == "pi-worker-0.pi.ns.svc.corp.example"
    assert CORP.qualify("pi-worker-0") == "pi-worker-0"  # a bare name is not made a broken FQDN
    # Set to cluster.local explicitly: qualified names get it, as training-operator's do.
    assert cluster_domain("cluster.local").qualify("a.ns.svc") == "a.ns.svc.cluster.local"


@pytest.mark.parametrize("good", ["", "cluster.local", "corp", "k8s.corp.example", "a-1.b2", "x" * 63])
def test_dns_subdomains_are_valid_cluster_domains(good: str) -> None:
    assert cluster_domain(good) == ClusterDomain(good)


@pytest.mark.parametrize(
    "bad",
    [
        "Cluster.Local",
        "cluster_local",
        "-corp.example",
        "corp.example.",
        ".corp",
        "a..b",
        "x" * 64,
        "a." * 127,
    ],
)
def test_anything_else_is_refused_saying_what_is_valid(bad: str) -> None:
    with pytest.raises(ValueError, match=r"must be a DNS subdomain such as cluster\.local") as refused:
        cluster_domain(bad)
    assert json.dumps(bad) in str(refused.value)


# --- TF_CONFIG: training-operator's CUSTOM_CLUSTER_DOMAIN ----------------------------------------
def tfjob(**kw: Any) -> Obj:
    replicas = {"PS": replica("TFJob", 1), "Worker": replica("TFJob", 1)}
    return job("TFJob", replicas, name="t", namespace="ns2", **kw)


def tf_config(obj: Obj, domain: ClusterDomain, pod: str = "t-worker-0", **settings: Any) -> Any:
    return json.loads(env_of(pods(obj, domain, **settings)[pod])["TF_CONFIG"])


def test_tf_config_hosts_end_in_svc_when_no_domain_is_set() -> None:
    assert tf_config(tfjob(), UNSET)["cluster"] == {
        "ps": ["t-ps-0.t.ns2.svc:2222"],
        "worker": ["t-worker-0.t.ns2.svc:2222"],
    }


def test_tf_config_hosts_carry_the_domain_when_set() -> None:
    domain = ClusterDomain("tf.training.org")
    assert tf_config(tfjob(), domain) == {
        "cluster": {
            "ps": ["t-ps-0.t.ns2.svc.tf.training.org:2222"],
            "worker": ["t-worker-0.t.ns2.svc.tf.training.org:2222"],
        },
        "task": {"type": "worker", "index": 0},
        "environment": "cloud",
    }


def test_per_pod_service_mode_writes_training_operators_exact_tf_config() -> None:
    """pod_test.go "should generate desired cluster spec", the case with tf.training.org: per-pod
    Services, `<pod>.<ns>.svc.<domain>:2222`; and without a domain `<pod>.<ns>.svc:2222`."""
    expected = (
        '{"cluster":{"ps":["t-ps-0.ns2.svc.tf.training.org:2222"],"worker":["t-worker-0.ns2.svc.'
        'tf.training.org:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}'
    )
    per_pod = pods(tfjob(), ClusterDomain("tf.training.org"), service_mode="per-pod")
    assert env_of(per_pod["t-worker-0"])["TF_CONFIG"] == expected
    plain = pods(tfjob(), UNSET, service_mode="per-pod")
    assert json.loads(env_of(plain["t-ps-0"])["TF_CONFIG"])["cluster"]["ps"] == ["t-ps-0.ns2.svc:2222"]


def test_sparse_tf_config_carries_the_domain_too() -> None:
    sparse = tf_config(tfjob(enableDynamicWorker=True), CORP)
    assert sparse["cluster"] == {
        "ps": ["t-ps-0.t.ns2.svc.corp.example:2222"],
        "worker": {"0": "t-worker-0.t.ns2.svc.corp.example:2222"},
    }


def test_host_network_ports_stay_with_the_qualified_host() -> None:
    annotated = tfjob()
    annotated["metadata"]["annotations"] = {ANNOTATION_NETWORK_MODE: NETWORK_MODE_HOST}
    config = tf_config(annotated, CORP)
    (worker,) = config["cluster"]["worker"]
    host, port = worker.rsplit(":", 1)
    assert host == "t-worker-0.t.ns2.svc.corp.example" and port != "2222"


# --- MPIJob: DNS search (always), hostfile (when set) --------------------------------------------


def test_mpi_workers_search_the_jobs_subdomain_under_the_domain_in_effect() -> None:
    assert pods(mpijob())["pi-worker-0"]["spec"]["dnsConfig"] == {"searches": ["pi.ns.svc.cluster.local"]}
    worker = pods(mpijob(), CORP)["pi-worker-1"]
    assert worker["spec"]["dnsConfig"] == {"searches": ["pi.ns.svc.corp.example"]}
    assert "dnsConfig" not in pods(mpijob(), CORP)["pi-launcher-0"]["spec"]


def test_mpi_hostfile_follows_mpi_operators_cluster_domain_flag() -> None:
    """newConfigMap / updateDiscoverHostsInConfigMap: `%s.%s.%s.svc`, `.<domain>` appended only
    when --cluster-domain is given."""
    job_obj = mpijob(runLauncherAsWorker=True)
    plain = children(job_obj)[("ConfigMap", "pi-config")]["data"]
    assert plain["hostfile"] == (
        "pi-launcher.pi.ns.svc slots=1\npi-worker-0.pi.ns.svc slots=1\npi-worker-1.pi.ns.svc slots=1\n"
    )
    qualified = children(job_obj, CORP)[("ConfigMap", "pi-config")]["data"]
    assert qualified["hostfile"] == (
        "pi-launcher.pi.ns.svc.corp.example slots=1\n"
        "pi-worker-0.pi.ns.svc.corp.example slots=1\n"
        "pi-worker-1.pi.ns.svc.corp.example slots=1\n"
    )
    assert qualified["discover_hosts.sh"] == "#!/bin/sh\necho pi-launcher.pi.ns.svc.corp.example\n"


# --- names that carry no domain stay as they are -------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "replicas"),
    [
        ("PyTorchJob", {"Master": 1, "Worker": 2}),
        ("PyTorchJob", {"Worker": 2}),
        ("JAXJob", {"Worker": 2}),
        ("PaddleJob", {"Master": 1, "Worker": 1}),
        ("XGBoostJob", {"Master": 1, "Worker": 1}),
        ("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 1}),
    ],
)
def test_other_frameworks_env_is_the_same_with_a_domain(kind: str, replicas: dict[str, int]) -> None:
    obj = job(kind, {t: replica(kind, n) for t, n in replicas.items()}, name="j")
    plain = {name: p["spec"]["containers"][0].get("env") for name, p in pods(obj).items()}
    assert plain and all(plain.values())
    assert {name: p["spec"]["containers"][0].get("env") for name, p in pods(obj, CORP).items()} == plain


# --- Trainer's Flux broker config ----------------------------------------------------------------
def flux_init(domain: ClusterDomain) -> str:
    tj = flux_trainjob(name="lammps", numNodes=2)
    tj["metadata"]["namespace"] = "hpc"
    resolved, errors = resolve(tj, flux_runtime(), cluster_domain=domain)
    assert resolved is not None and errors == []
    (config_map,) = [o for o in resolved.extra if o["kind"] == "ConfigMap"]
    init: str = config_map["data"]["init.sh"]
    return init


def test_flux_brokers_connect_under_the_domain_in_effect() -> None:
    assert 'default_connect = "tcp://%h.lammps.hpc.svc.cluster.local:%p"' in flux_init(UNSET)
    assert 'default_connect = "tcp://%h.lammps.hpc.svc.corp.example:%p"' in flux_init(CORP)


def test_the_trainjob_planner_passes_its_domain_to_the_flux_config_map() -> None:
    tj = flux_trainjob(name="lammps", uid="u-flux", numNodes=2)
    p = plan_trainjob(tj, Observed(pods=[]), flux_runtime(), NOW, PlannerConfig(cluster_domain=CORP))
    (config_map,) = [o for o in p.create_children if o["metadata"]["name"] == "lammps-flux-entrypoint"]
    assert "tcp://%h.lammps.default.svc.corp.example:%p" in config_map["data"]["init.sh"]


# --- the planner and its cache -------------------------------------------------------------------
def test_prepared_jobs_are_cached_per_cluster_domain() -> None:
    cache = JobCache()
    obj = tfjob(uid="u-tf")
    plain = cache.get(obj)
    qualified = cache.get(obj, cluster_domain=CORP)
    assert plain.layout is not None and qualified.layout is not None
    assert plain.layout.cluster_domain == UNSET and qualified.layout.cluster_domain == CORP
    assert cache.get(obj, cluster_domain=CORP) is qualified and len(cache) == 2


def test_the_planner_writes_its_configured_domain_into_new_pods() -> None:
    obj = tfjob(uid="u-plan")
    p = plan(obj, Observed(pods=[]), NOW, PlannerConfig(cluster_domain=CORP), cache=JobCache())
    worker = next(x for x in p.create_pods if x["metadata"]["name"] == "t-worker-0")
    assert "t-ps-0.t.ns2.svc.corp.example:2222" in env_of(worker)["TF_CONFIG"]


# --- the webhook certificate ---------------------------------------------------------------------
def test_the_serving_certificate_names_the_service_under_the_domain() -> None:
    assert service_dns_names("kubetrain-webhook", "ops", CORP) == [
        "kubetrain-webhook",
        "kubetrain-webhook.ops",
        "kubetrain-webhook.ops.svc",
        "kubetrain-webhook.ops.svc.corp.example",
    ]
    assert service_dns_names("kubetrain-webhook", "ops")[-1] == "kubetrain-webhook.ops.svc.cluster.local"


def test_a_self_managed_certificate_of_another_domain_is_renewed(tmp_path: Path) -> None:
    """The stored certificate names cluster.local; a process configured for corp.example does
    not find it usable, so it issues one that names its domain."""
    stored_names = service_dns_names("kubetrain-webhook", "ops")
    bundle = generate_bundle(stored_names)
    certs = SelfManagedCertificates(
        api=None,  # type: ignore[arg-type]  # no API call is made here
        namespace="ops",
        secret_name="s",
        service="kubetrain-webhook",
        cert_dir=str(tmp_path),
        cluster_domain=CORP,
    )
    assert "kubetrain-webhook.ops.svc.corp.example" in certs.dns_names
    assert covers(bundle.serving.cert_pem, stored_names, [])
    assert not covers(bundle.serving.cert_pem, certs.dns_names, [])


# --- the flag and the variable -------------------------------------------------------------------
def test_the_flag_beats_the_variable_and_the_variable_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "from.env")
    parser = cli.build_parser()
    assert parser.parse_args(["run"]).cluster_domain == ClusterDomain("from.env")
    assert parser.parse_args(["controller", "--cluster-domain", "corp.example"]).cluster_domain == CORP
    assert parser.parse_args(["webhook"]).cluster_domain == ClusterDomain("from.env")
    assert parser.parse_args(["dev", "--cluster-domain", "corp.example"]).cluster_domain == CORP
    monkeypatch.delenv("CUSTOM_CLUSTER_DOMAIN")
    assert cli.build_parser().parse_args(["run"]).cluster_domain == UNSET


def test_a_bad_flag_value_is_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["controller", "--cluster-domain", "Corp_Example"])
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        'kubetrain controller: error: argument --cluster-domain: "Corp_Example": must be a DNS '
        "subdomain such as cluster.local: lower-case letters, digits, '-' and '.'"
    )


def test_a_bad_variable_is_one_line_naming_the_flag_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "svc.cluster.local.")
    with pytest.raises(SystemExit) as exited:
        cli.main(["run"])
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert 'argument --cluster-domain: $CUSTOM_CLUSTER_DOMAIN="svc.cluster.local.": must be a DNS' in line
    # The flag given, the variable is not read.
    args = cli.build_parser().parse_args(["run", "--cluster-domain", "corp.example"])
    assert args.cluster_domain == CORP


def test_webhook_worker_children_get_the_parents_domain_and_not_a_stale_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubetrain.webhook.workers import child_argv

    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "Not_Valid")  # the flag overrides it in the parent
    args = cli.build_parser().parse_args(["run", "--cluster-domain", ""])
    assert args.cluster_domain == UNSET
    child = cli.build_parser().parse_args(child_argv(args))
    assert child.cluster_domain == UNSET


def test_render_writes_the_domain_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    manifest = tmp_path / "pi.yaml"
    manifest.write_text(yaml.safe_dump(mpijob()))
    assert cli.main(["render", str(manifest), "--cluster-domain", "corp.example"]) == 0
    rendered = list(yaml.safe_load_all(capsys.readouterr().out))
    worker = next(o for o in rendered if o["metadata"]["name"] == "pi-worker-0")
    assert worker["spec"]["dnsConfig"] == {"searches": ["pi.ns.svc.corp.example"]}
    config = next(o for o in rendered if o["kind"] == "ConfigMap")
    assert "pi-worker-1.pi.ns.svc.corp.example slots=1" in config["data"]["hostfile"]


def test_a_restart_with_another_domain_rewrites_the_hostfile_but_not_existing_pods() -> None:
    """Pods keep the names they were created with; the job's hostfile ConfigMap is rewritten at
    its next reconcile (operations.md, "Cluster domain", limits)."""
    obj = mpijob()
    obj["metadata"]["generation"] = 1
    first = plan(obj, Observed(pods=[]), NOW, PlannerConfig(), cache=JobCache())
    (config_map,) = [c for c in first.create_children if c["kind"] == "ConfigMap"]
    assert "pi-worker-0.pi.ns.svc slots=1" in config_map["data"]["hostfile"]
    pods = [{**p, "status": {"phase": "Running"}} for p in first.create_pods]
    stored = {**config_map, "metadata": {**config_map["metadata"], "resourceVersion": "7"}}
    after = plan(
        obj, Observed(pods=pods, extra=[stored]), NOW, PlannerConfig(cluster_domain=CORP), cache=JobCache()
    )
    (updated,) = after.update_children
    assert updated["metadata"]["resourceVersion"] == "7"
    assert "pi-worker-0.pi.ns.svc.corp.example slots=1" in updated["data"]["hostfile"]
    assert after.create_pods == [] and after.delete_pods == []
