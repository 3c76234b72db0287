"""The Helm chart, rendered and linted by the real Helm engine (helm-python-sdk, in-process).

Every value combination that changes the output is rendered (3 certificate modes x replicas
1/2 x ServiceMonitor off/on x 3 gang schedulers x all/some namespaces = 72 releases; secure
metrics with 2 replicas, so secure and plain metrics each meet ServiceMonitor off/on), linted
with `helm lint --strict`, and every manifest is validated strictly against the Kubernetes
OpenAPI schemas (kubernetes-validate) of the oldest and the newest supported Kubernetes.
On top: RBAC is exactly the documented least-privilege set, the pod passes Pod Security
"restricted", the webhooks fail closed and only match kubetrain jobs and TrainingPolicies (the
same names and rules as kubetrain.webhook.configurations), names cross-reference.

How to render the chart in a test (no helm binary, no network):

    import helm_python as helm
    with helm.Chart.load("charts/kubetrain") as chart:
        manifests = chart.render(values, name="kt", namespace="kubetrain-system")
        # {"kubetrain/templates/deployment.yaml": "<yaml>", ...}; values.schema.json applies
    helm.lint("charts/kubetrain", values, strict=True, kube_version="v1.27.0")
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from kubetrain.commands import _flags
from kubetrain.commands._progress import add_progress_flags
from kubetrain.frameworks.registry import FRAMEWORKS, conversion_crd_names
from kubetrain.kube.resources import JOB_RESOURCES, POD_GROUP_RESOURCES
from kubetrain.operator.apigroups import crd_names
from kubetrain.operator.gang_api import crd_name
from kubetrain.webhook import configurations
from kubetrain.webhook.crons import cron_rules

CHART = Path(__file__).resolve().parents[2] / "charts" / "kubetrain"
RELEASE = "kt"
NAMESPACE = "kubetrain-system"
FULLNAME = "kt-kubetrain"
# Chart.yaml says kubeVersion >=1.27: validate against the oldest and the newest schemas.
KUBE_VERSIONS = ("1.27", kubernetes_validate.latest_version())
CA_BUNDLE = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="

CERT_MODES = ("selfManaged", "certManager", "existingSecret")
GANG_SCHEDULERS = _flags.GANG_SCHEDULERS  # every gang scheduler descriptor, and none
WATCH_NAMESPACES: tuple[tuple[str, ...], ...] = ((), ("team-a", "team-b"))


def operator_parser() -> argparse.ArgumentParser:
    """The flags `kubetrain run` is built from (kubetrain.commands._flags)."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    _flags.add_common_flags(parser)
    _flags.add_controller_flags(parser)
    _flags.add_webhook_flags(parser)
    add_progress_flags(parser)
    return parser


# The flags `kubetrain run` accepts; a rendered arg outside this set would crash-loop the pod.
RUN_FLAGS = {opt for action in operator_parser()._actions for opt in action.option_strings} - {
    "-h",
    "--help",
}

Manifest = dict[str, Any]


def combo_values(
    cert_mode: str, replicas: int, service_monitor: bool, gang: str, namespaces: tuple[str, ...]
) -> dict[str, Any]:
    certificates: dict[str, Any] = {"mode": cert_mode}
    if cert_mode == "existingSecret":
        certificates.update(secretName="my-webhook-tls", caBundle=CA_BUNDLE)
    return {
        "certificates": certificates,
        "replicas": replicas,
        "metrics": {"serviceMonitor": {"enabled": service_monitor}, "secure": replicas > 1},
        "gangScheduler": gang,
        "watchNamespaces": list(namespaces),
    }


COMBOS = [
    pytest.param(
        combo_values(*c),
        id=f"{c[0]}-r{c[1]}-sm{int(c[2])}-{c[3]}-{'ns' if c[4] else 'all'}",
    )
    for c in itertools.product(CERT_MODES, (1, 2), (False, True), GANG_SCHEDULERS, WATCH_NAMESPACES)
]


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> list[Manifest]:
    """Render through Helm and split into objects (NOTES.txt is text, not a manifest)."""
    rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs: list[Manifest] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def of_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [d for d in of_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container(docs: list[Manifest]) -> Manifest:
    containers = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: Manifest = containers[0]
    return result


def flags(docs: list[Manifest]) -> dict[str, str | None]:
    """`--name=value` / `--name` args of the operator container as a dict."""
    args = container(docs)["args"]
    assert args[0] == "run"
    parsed: dict[str, str | None] = {}
    for arg in args[1:]:
        name, sep, value = arg.partition("=")
        assert name not in parsed, f"flag {name} given twice"
        parsed[name] = value if sep else None
    return parsed


_validated: set[tuple[str, str]] = set()


def validate_k8s(doc: Manifest) -> None:
    """Strict schema validation; cached on the exact manifest (many repeat across combos)."""
    key = json.dumps(doc, sort_keys=True)
    for version in KUBE_VERSIONS:
        if (key, version) in _validated:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            pytest.fail(
                f"{doc['kind']}/{doc['metadata']['name']} invalid for {version}: {path}: {exc.message}"
            )
        _validated.add((key, version))


# Kinds served by CRDs of other projects: kubernetes-validate has no schema for them; their
# fields are asserted one by one in the tests below.
THIRD_PARTY = {
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
}


# ---------------------------------------------------------------------------------------------
# RBAC: the exact grants the code may use (the team's RBAC contract), per binding scope.


def grants(rules: list[Manifest]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """(apiGroup, resource, verb, resourceNames) for every rule, expanded."""
    out: set[tuple[str, str, str, tuple[str, ...]]] = set()
    for rule in rules:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        names = tuple(sorted(rule.get("resourceNames", [])))
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((group, resource, verb, names))
    return out


def expand(
    group: str, resources: list[str], verbs: list[str], names: tuple[str, ...] = ()
) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {(group, r, v, names) for r in resources for v in verbs}


# What `kubetrain run` does, call by call (kubetrain/operator/{controller,apply,gang_api}.py,
# kubetrain/kube/{leader,events}.py, kubetrain/webhook/policies.py, kubetrain/certs/); the job
# kinds and PodGroup APIs come from the code, so a new framework or gang scheduler cannot miss
# its grants.
JOB_KINDS = [ref.plural for ref in JOB_RESOURCES.values()]
EXPECTED_JOBS_ROLE = (
    # informers (list + watch); TTL deletes the job; a TrainingCron creates (and deletes) its
    # jobs and GETs an active one its cache does not show
    expand("kubetrain.io", JOB_KINDS, ["get", "list", "watch", "create", "delete"])
    # the TrainingCron informer, its status (PUT), blockOwnerDeletion on its jobs
    | expand("kubetrain.io", ["trainingcrons"], ["get", "list", "watch"])
    | expand("kubetrain.io", ["trainingcrons/status", "trainingcrons/finalizers"], ["update"])
    # status: a PUT to /status; the status server's merge patch of status.trainerStatus
    | expand("kubetrain.io", [f"{k}/status" for k in JOB_KINDS], ["update", "patch"])
    # the status server without the informer cache (a replica that does not lead): GETs
    | expand("kubetrain.io", JOB_KINDS, ["get"])
    | expand("", ["pods"], ["get"])
    # blockOwnerDeletion on children under OwnerReferencesPermissionEnforcement
    | expand("kubetrain.io", [f"{k}/finalizers" for k in JOB_KINDS], ["update"])
    | expand("", ["pods"], ["list", "watch", "create", "delete"])
    | expand("", ["services"], ["list", "watch", "create", "delete"])
    | expand("", ["events"], ["create", "patch"])
    # extra children: MPIJob's ConfigMap (informer on labelled ConfigMaps, create, PUT on change)
    | expand("", ["configmaps"], ["list", "watch", "create", "update"])
    # and its SSH Secret: create only, never read
    | expand("", ["secrets"], ["create"])
    # the HPA of an elastic PyTorchJob with metrics: informer, create, PUT on change, delete
    | expand("autoscaling", ["horizontalpodautoscalers"], ["list", "watch", "create", "update", "delete"])
    # ResourceQuotas: an informer only (a quota with more room wakes the jobs it refused)
    | expand("", ["resourcequotas"], ["list", "watch"])
    # a job's TensorBoard Ingress (kubedl.io/tensorboard-config): create, delete, never read
    | expand("networking.k8s.io", ["ingresses"], ["list", "watch", "create", "delete"])
)
for _ref in POD_GROUP_RESOURCES.values():  # PUT when the job's schedulingPolicy changes
    EXPECTED_JOBS_ROLE |= expand(_ref.group, [_ref.plural], ["list", "watch", "create", "update", "delete"])
EXPECTED_CLUSTER_ROLE_BASE = (
    expand("", ["namespaces"], ["list", "watch"])
    | expand("kubetrain.io", ["trainingpolicies"], ["list", "watch"])
    # PolicyWatcher.sync_status: a merge patch of /status
    | expand("kubetrain.io", ["trainingpolicies/status"], ["patch"])
)
# With a gang scheduler, the controller watches the CRD serving its PodGroups by name (list + watch
# with a metadata.name field selector), so installing the scheduler later needs no restart.
EXPECTED_POD_GROUP_CRD_GRANTS = {
    gang: expand("apiextensions.k8s.io", ["customresourcedefinitions"], ["list", "watch"], (crd_name(ref),))
    for gang, ref in POD_GROUP_RESOURCES.items()
}
# SelfManagedCertificates: get, watch with a metadata.name field selector, JSON patch of caBundle.
EXPECTED_WEBHOOK_CONFIG_GRANTS = expand(
    "admissionregistration.k8s.io",
    ["mutatingwebhookconfigurations"],
    ["get", "watch", "patch"],
    (f"{FULLNAME}-mutating",),
) | expand(
    "admissionregistration.k8s.io",
    ["validatingwebhookconfigurations"],
    ["get", "watch", "patch"],
    (f"{FULLNAME}-validating",),
)
EXPECTED_LEASE_GRANTS = expand("coordination.k8s.io", ["leases"], ["create"]) | expand(
    "coordination.k8s.io", ["leases"], ["get", "update"], (f"{FULLNAME}-controller",)
)
EXPECTED_SECRET_GRANTS = expand("", ["secrets"], ["create"]) | expand(
    "", ["secrets"], ["get", "update", "watch"], (f"{FULLNAME}-webhook-tls",)
)


# ---------------------------------------------------------------------------------------------
# Pod Security Standards, "restricted" profile (kubernetes.io/docs/concepts/security/pod-security-standards)

RESTRICTED_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def restricted_violations(pod: Manifest) -> list[str]:
    """Every "baseline" and "restricted" rule the pod spec breaks (empty when compliant)."""
    problems: list[str] = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            problems.append(f"{field} is set")
    pod_ctx = pod.get("securityContext", {})
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            problems.append(f"volume {volume['name']} uses {sorted(kinds)}")
    for sysctl in pod_ctx.get("sysctls", []):
        problems.append(f"sysctl {sysctl['name']}")
    containers = pod.get("initContainers", []) + pod["containers"] + pod.get("ephemeralContainers", [])
    for c in containers:
        ctx = c.get("securityContext", {})
        where = f"container {c['name']}"

        def effective(key: str, ctx: Manifest = ctx) -> Any:
            return ctx.get(key, pod_ctx.get(key))

        if ctx.get("privileged"):
            problems.append(f"{where}: privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation must be false")
        if effective("runAsNonRoot") is not True:
            problems.append(f"{where}: runAsNonRoot must be true")
        if effective("runAsUser") == 0:
            problems.append(f"{where}: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: seccompProfile must be RuntimeDefault or Localhost")
        caps = ctx.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            problems.append(f"{where}: capabilities must drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{where}: adds capabilities {caps['add']}")
        if ctx.get("procMount", "Default") != "Default":
            problems.append(f"{where}: procMount")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                problems.append(f"{where}: hostPort {port['hostPort']}")
    return problems


# ---------------------------------------------------------------------------------------------
# Every combination.


@pytest.mark.parametrize("values", COMBOS)
def test_every_combination_lints_renders_and_is_schema_valid(
    chart: helm.Chart, values: dict[str, Any]
) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version="v1.27.0")
    assert report["errors"] == [], report
    assert [m for m in report["messages"] if m["severity"] >= 2] == [], report

    docs = render(chart, values)
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in THIRD_PARTY:
            continue
        validate_k8s(doc)

    # Every namespaced object lands in the release namespace (RoleBindings for watched
    # namespaces excepted); cluster-scoped ones carry no namespace.
    cluster_scoped = {
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    for doc in docs:
        ns = doc["metadata"].get("namespace")
        if doc["kind"] in cluster_scoped:
            assert ns is None, doc["metadata"]
        elif doc["kind"] == "RoleBinding" and ns != NAMESPACE:
            assert ns in values["watchNamespaces"]
        else:
            assert ns == NAMESPACE, doc["metadata"]
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(names) == len(set(names)), "two objects with the same kind/namespace/name"

    check_rbac(docs, values)
    check_workload(docs, values)
    check_webhooks(docs, values)
    check_certificates(docs, values)
    check_metrics(docs, values)


def check_rbac(docs: list[Manifest], values: dict[str, Any]) -> None:
    self_managed = values["certificates"]["mode"] == "selfManaged"
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"] in ("ClusterRole", "Role")}
    for role in roles.values():
        text = json.dumps(role["rules"])
        assert "*" not in text, f"wildcard in {role['kind']} {role['metadata']['name']}"
    # No cluster-wide Secret access in any ClusterRole but create (MPIJob's SSH Secret): never
    # get, list, watch, update, patch or delete.
    for (kind, name), role in roles.items():
        if kind == "ClusterRole":
            for rule in role["rules"]:
                if "secrets" in rule.get("resources", []):
                    assert rule["verbs"] == ["create"] and rule["resources"] == ["secrets"], name

    assert grants(roles[("ClusterRole", f"{FULLNAME}-jobs")]["rules"]) == EXPECTED_JOBS_ROLE
    expected_cluster = (
        EXPECTED_CLUSTER_ROLE_BASE
        | (EXPECTED_WEBHOOK_CONFIG_GRANTS if self_managed else set())
        | EXPECTED_POD_GROUP_CRD_GRANTS.get(values["gangScheduler"], set())
    )
    assert grants(roles[("ClusterRole", f"{FULLNAME}-cluster")]["rules"]) == expected_cluster
    check_metrics_rbac(roles, docs, values["metrics"].get("secure", False))
    # The status server (on by default) reviews report tokens: TokenReview create, nothing else.
    status_auth = ("ClusterRole", f"{FULLNAME}-status-auth")
    assert grants(roles[status_auth]["rules"]) == {("authentication.k8s.io", "tokenreviews", "create", ())}

    role = roles[("Role", FULLNAME)]  # leader election is on by default, so the Role exists
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role["rules"]) == EXPECTED_LEASE_GRANTS | (
        EXPECTED_SECRET_GRANTS if self_managed else set()
    )

    sa = one(docs, "ServiceAccount")["metadata"]
    subject = {"kind": "ServiceAccount", "name": sa["name"], "namespace": NAMESPACE}
    bindings = of_kind(docs, "ClusterRoleBinding") + of_kind(docs, "RoleBinding")
    for binding in bindings:
        assert binding["subjects"] == [subject]
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in roles, f"binding {binding['metadata']['name']} refers to nothing"
        if ref["kind"] == "Role":
            assert binding["metadata"]["namespace"] == roles[("Role", ref["name"])]["metadata"]["namespace"]
    bound = {(b["kind"], b["metadata"].get("namespace"), b["roleRef"]["name"]) for b in bindings}
    assert ("ClusterRoleBinding", None, f"{FULLNAME}-cluster") in bound
    assert ("RoleBinding", NAMESPACE, FULLNAME) in bound
    if values["watchNamespaces"]:
        # Job permissions only inside the watched namespaces.
        assert ("ClusterRoleBinding", None, f"{FULLNAME}-jobs") not in bound
        for ns in values["watchNamespaces"]:
            assert ("RoleBinding", ns, f"{FULLNAME}-jobs") in bound
    else:
        assert ("ClusterRoleBinding", None, f"{FULLNAME}-jobs") in bound
    assert len(bound) == len(bindings)


def check_metrics_rbac(roles: dict[tuple[str, str], Manifest], docs: list[Manifest], secure: bool) -> None:
    """Secure metrics: the operator may create TokenReviews and SubjectAccessReviews (nothing
    else), and a metrics-reader ClusterRole (bound by nobody in the chart) may get /metrics."""
    auth, reader = ("ClusterRole", f"{FULLNAME}-metrics-auth"), ("ClusterRole", f"{FULLNAME}-metrics-reader")
    binding = [b for b in of_kind(docs, "ClusterRoleBinding") if b["roleRef"]["name"] == auth[1]]
    if not secure:
        assert auth not in roles and reader not in roles and binding == []
        return
    assert grants(roles[auth]["rules"]) == {
        ("authentication.k8s.io", "tokenreviews", "create", ()),
        ("authorization.k8s.io", "subjectaccessreviews", "create", ()),
    }
    assert len(binding) == 1
    assert roles[reader]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert not any(b["roleRef"]["name"] == reader[1] for b in of_kind(docs, "ClusterRoleBinding"))


def check_workload(docs: list[Manifest], values: dict[str, Any]) -> None:
    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    c = container(docs)
    assert deployment["spec"]["replicas"] == values["replicas"]
    assert restricted_violations(pod) == []
    ctx = c["securityContext"]
    assert ctx["readOnlyRootFilesystem"] is True
    assert isinstance(ctx["runAsUser"], int) and ctx["runAsUser"] > 0
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["serviceAccountName"] == one(docs, "ServiceAccount")["metadata"]["name"]
    assert c["resources"]["requests"] and c["resources"]["limits"]

    # Probes on the metrics port: HTTPS when it is secure (unauthenticated either way).
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    scheme = {"scheme": "HTTPS"} if values["metrics"].get("secure") else {}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics", **scheme}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics", **scheme}
    assert ("--metrics-secure" in flags(docs)) == bool(values["metrics"].get("secure"))
    # Writable places with a read-only root filesystem: /tmp and the cert dir.
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]

    f = flags(docs)
    assert set(f) <= RUN_FLAGS, set(f) - RUN_FLAGS
    assert int(f["--metrics-port"] or 0) == ports["metrics"]
    assert int(f["--webhook-port"] or 0) == ports["webhook"]
    assert int(f["--status-server-port"] or 0) == ports["status"] == 10443
    assert f["--status-server-url"] == f"https://{FULLNAME}-webhook.{NAMESPACE}.svc:10443"
    assert "--status-server-process" in f  # reports never compete with admission for the CPU
    assert f["--gang-scheduler"] == values["gangScheduler"]
    if values["watchNamespaces"]:
        assert f["--namespaces"] == ",".join(values["watchNamespaces"])
    else:
        assert "--namespaces" not in f
    assert "--leader-elect" in f and "--no-leader-elect" not in f
    assert f["--leader-election-namespace"] == NAMESPACE
    assert f["--leader-election-id"] == f"{FULLNAME}-controller"

    pdbs = of_kind(docs, "PodDisruptionBudget")
    if values["replicas"] > 1:
        (pdb,) = pdbs
        assert pdb["spec"]["minAvailable"] == 1
        assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    else:
        assert pdbs == []
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for service in of_kind(docs, "Service"):
        selector = service["spec"]["selector"]
        assert selector.items() <= labels.items(), f"Service {service['metadata']['name']} selects no pod"
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports


def check_webhooks(docs: list[Manifest], values: dict[str, Any]) -> None:
    service = one(docs, "Service", f"{FULLNAME}-webhook")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"},
        # the training-progress endpoint pods reach under the certificate's (this Service's) name
        {"name": "status", "port": 10443, "targetPort": "status", "protocol": "TCP"},
    ]
    job_rule = {
        "apiGroups": ["kubetrain.io"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": JOB_KINDS,  # every kind in the framework registry
        "scope": "Namespaced",
    }
    policy_rule = {
        "apiGroups": ["kubetrain.io"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["trainingpolicies"],
        "scope": "Cluster",
    }
    # kubectl scale / HPAs write the scale subresource: validated like a spec update of replicas
    scale_rule = {
        "apiGroups": ["kubetrain.io"],
        "apiVersions": ["v1"],
        "operations": ["UPDATE"],
        "resources": [f"{f.plural}/scale" for f in FRAMEWORKS.values() if f.scalable_replica_type],
        "scope": "Namespaced",
    }
    expected = {
        "MutatingWebhookConfiguration": [("mutate.jobs.kubetrain.io", "/mutate", [job_rule])],
        "ValidatingWebhookConfiguration": [
            ("validate.jobs.kubetrain.io", "/validate", [job_rule, scale_rule]),
            ("validate.trainingpolicies.kubetrain.io", "/validate", [policy_rule]),
            ("validate.crons.kubetrain.io", "/validate", cron_rules(["kubetrain.io"])),
        ],
    }
    for kind, hooks in expected.items():
        config = one(docs, kind)
        assert [h["name"] for h in config["webhooks"]] == [name for name, _, _ in hooks]
        for hook, (_, path, rule) in zip(config["webhooks"], hooks, strict=True):
            assert hook["failurePolicy"] == "Fail"
            assert hook["sideEffects"] == "None"
            assert hook["timeoutSeconds"] == 10
            assert hook["admissionReviewVersions"] == ["v1"]
            assert hook["matchPolicy"] == "Equivalent"
            assert hook["rules"] == rule
            assert "namespaceSelector" not in hook
            assert "objectSelector" not in hook
            assert hook["clientConfig"]["service"] == {
                "name": service["metadata"]["name"],
                "namespace": NAMESPACE,
                "path": path,
                "port": 443,
            }
            if kind == "MutatingWebhookConfiguration":
                assert hook["reinvocationPolicy"] == "Never"


def check_certificates(docs: list[Manifest], values: dict[str, Any]) -> None:
    mode = values["certificates"]["mode"]
    f = flags(docs)
    c = container(docs)
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    cert_dir = f["--cert-dir"]
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == cert_dir]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    configs = of_kind(docs, "MutatingWebhookConfiguration") + of_kind(docs, "ValidatingWebhookConfiguration")
    cm_objects = [d for d in docs if d["apiVersion"] == "cert-manager.io/v1"]
    if mode == "selfManaged":
        assert f["--cert-mode"] == "self-managed"
        assert f["--cert-secret"] == f"{FULLNAME}-webhook-tls"
        assert f["--webhook-service"] == f"{FULLNAME}-webhook"
        assert f["--webhook-namespace"] == NAMESPACE
        assert f["--mutating-webhook-config"] == one(docs, "MutatingWebhookConfiguration")["metadata"]["name"]
        assert (
            f["--validating-webhook-config"]
            == one(docs, "ValidatingWebhookConfiguration")["metadata"]["name"]
        )
        assert "emptyDir" in volume and not mount.get("readOnly")
        for config in configs:
            for hook in config["webhooks"]:
                assert "caBundle" not in hook["clientConfig"]  # the operator patches every webhook
            assert "annotations" not in config["metadata"]
        assert cm_objects == []
        return
    assert f["--cert-mode"] == "directory"
    for flag in (
        "--cert-secret",
        "--webhook-service",
        "--mutating-webhook-config",
        "--validating-webhook-config",
    ):
        assert flag not in f
    assert mount["readOnly"] is True
    if mode == "existingSecret":
        assert volume["secret"]["secretName"] == "my-webhook-tls"
        for config in configs:
            for hook in config["webhooks"]:
                assert hook["clientConfig"]["caBundle"] == CA_BUNDLE
        assert cm_objects == []
        return
    # certManager: self-signed root -> CA Certificate -> CA Issuer -> serving Certificate.
    serving = one(docs, "Certificate", f"{FULLNAME}-webhook")
    assert volume["secret"]["secretName"] == serving["spec"]["secretName"]
    svc = f"{FULLNAME}-webhook"
    assert serving["spec"]["dnsNames"] == [
        svc,
        f"{svc}.{NAMESPACE}",
        f"{svc}.{NAMESPACE}.svc",
        f"{svc}.{NAMESPACE}.svc.cluster.local",
    ]
    ca_issuer = one(docs, "Issuer", serving["spec"]["issuerRef"]["name"])
    ca_cert = one(docs, "Certificate", f"{FULLNAME}-ca")
    assert ca_issuer["spec"]["ca"]["secretName"] == ca_cert["spec"]["secretName"]
    assert ca_cert["spec"]["isCA"] is True
    root = one(docs, "Issuer", ca_cert["spec"]["issuerRef"]["name"])
    assert root["spec"] == {"selfSigned": {}}
    for config in configs:
        assert config["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{svc}"}
        for hook in config["webhooks"]:
            assert "caBundle" not in hook["clientConfig"]  # the CA injector fills every webhook


def check_metrics(docs: list[Manifest], values: dict[str, Any]) -> None:
    service = one(docs, "Service", f"{FULLNAME}-metrics")
    monitors = of_kind(docs, "ServiceMonitor")
    if not values["metrics"]["serviceMonitor"]["enabled"]:
        assert monitors == []
        return
    (monitor,) = monitors
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    # The metrics Service is the only Service the monitor selects.
    webhook_labels = one(docs, "Service", f"{FULLNAME}-webhook")["metadata"]["labels"]
    assert not monitor["spec"]["selector"]["matchLabels"].items() <= webhook_labels.items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert endpoint["path"] == "/metrics"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    if values["metrics"].get("secure"):
        # The scraper authenticates with its ServiceAccount token; the certificate is self-signed.
        assert endpoint["scheme"] == "https"
        assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
        assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    else:
        assert endpoint["scheme"] == "http"
        assert "bearerTokenFile" not in endpoint and "tlsConfig" not in endpoint


# ---------------------------------------------------------------------------------------------
# Individual values.


def test_defaults_are_self_managed_single_replica_all_namespaces(chart: helm.Chart) -> None:
    docs = render(chart)
    f = flags(docs)
    assert f["--cert-mode"] == "self-managed"
    assert f["--gang-scheduler"] == "none"
    assert f["--service-mode"] == "headless"
    assert "--namespaces" not in f
    assert one(docs, "Deployment")["spec"]["replicas"] == 1
    assert of_kind(docs, "PodDisruptionBudget") == []
    assert of_kind(docs, "ServiceMonitor") == []
    assert container(docs)["image"] == "ghcr.io/kubetrain/kubetrain:0.1.0"  # appVersion


def test_leader_election_is_forced_on_with_more_than_one_replica(chart: helm.Chart) -> None:
    single = render(chart, {"leaderElection": {"enabled": False}})
    assert "--no-leader-elect" in flags(single) and "--leader-elect" not in flags(single)
    # Without leader election and without self-managed certs there is nothing namespaced to grant.
    no_role = render(chart, {"leaderElection": {"enabled": False}, "certificates": {"mode": "certManager"}})
    assert of_kind(no_role, "Role") == [] and of_kind(no_role, "RoleBinding") == []
    many = render(chart, {"leaderElection": {"enabled": False}, "replicas": 3})
    assert "--leader-elect" in flags(many)
    assert grants(one(many, "Role")["rules"]) >= EXPECTED_LEASE_GRANTS


def test_image_scheduler_name_and_controller_tuning_reach_the_pod(chart: helm.Chart) -> None:
    docs = render(
        chart,
        {
            "image": {"repository": "registry.example/kt", "tag": "1.2.3", "pullPolicy": "Always"},
            "schedulerName": "my-volcano",
            "gangScheduler": "volcano",
            "serviceMode": "per-pod",
            "controller": {"workers": 8, "qps": 200, "burst": 400},
            "logLevel": "debug",
        },
    )
    c = container(docs)
    assert c["image"] == "registry.example/kt:1.2.3"
    assert c["imagePullPolicy"] == "Always"
    f = flags(docs)
    assert f["--scheduler-name"] == "my-volcano"
    assert f["--service-mode"] == "per-pod"
    assert (f["--workers"], f["--qps"], f["--burst"], f["--log-level"]) == ("8", "200", "400", "debug")


def test_cluster_domain_reaches_the_operator_and_the_certificate(chart: helm.Chart) -> None:
    """Unset: no flag (the operator's default, `$CUSTOM_CLUSTER_DOMAIN` if the pod has it, else
    cluster.local) and cert-manager's SAN under cluster.local; set: the flag, parsed by the real
    CLI, and the SAN under the domain."""
    from kubetrain import cli
    from kubetrain.api.clusterdomain import ClusterDomain

    cert_manager = {"certificates": {"mode": "certManager"}}
    plain = render(chart, cert_manager)
    assert "--cluster-domain" not in flags(plain)
    serving = one(plain, "Certificate", f"{FULLNAME}-webhook")
    assert serving["spec"]["dnsNames"][-1] == f"{FULLNAME}-webhook.{NAMESPACE}.svc.cluster.local"
    docs = render(chart, {**cert_manager, "clusterDomain": "corp.example"})
    assert flags(docs)["--cluster-domain"] == "corp.example"
    parsed = cli.build_parser().parse_args(container(docs)["args"])
    assert parsed.cluster_domain == ClusterDomain("corp.example")
    serving = one(docs, "Certificate", f"{FULLNAME}-webhook")
    assert serving["spec"]["dnsNames"][-1] == f"{FULLNAME}-webhook.{NAMESPACE}.svc.corp.example"
    validate_k8s(one(docs, "Deployment"))
    # Self-managed: the operator issues the certificate from the same flag.
    assert flags(render(chart, {"clusterDomain": "corp.example"}))["--cluster-domain"] == "corp.example"


def test_placement_and_pod_metadata_values_reach_the_pod(chart: helm.Chart) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}
                ]
            }
        }
    }
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]
    docs = render(
        chart,
        {
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": tolerations,
            "affinity": affinity,
            "podAnnotations": {"example.com/scrape": "true"},
            "podLabels": {"team": "ml"},
            "priorityClassName": "system-cluster-critical",
            "imagePullSecrets": [{"name": "regcred"}],
        },
    )
    deployment = one(docs, "Deployment")
    template = deployment["spec"]["template"]
    pod = template["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == tolerations
    assert pod["affinity"] == affinity
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert template["metadata"]["annotations"] == {"example.com/scrape": "true"}
    assert template["metadata"]["labels"]["team"] == "ml"
    # Extra pod labels never leak into the (immutable) selector.
    assert "team" not in deployment["spec"]["selector"]["matchLabels"]
    for doc in docs:
        if doc["kind"] in ("Deployment",):
            validate_k8s(doc)


def test_namespace_selector_applies_to_the_job_webhooks_only(chart: helm.Chart) -> None:
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
    docs = render(chart, {"webhook": {"namespaceSelector": selector, "timeoutSeconds": 5}})
    hooks = {}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = one(docs, kind)
        validate_k8s(config)
        hooks.update({h["name"]: h for h in config["webhooks"]})
    assert set(hooks) == {
        "mutate.jobs.kubetrain.io",
        "validate.jobs.kubetrain.io",
        "validate.trainingpolicies.kubetrain.io",
        "validate.crons.kubetrain.io",
    }
    assert hooks["validate.crons.kubetrain.io"]["namespaceSelector"] == selector
    for hook in hooks.values():
        assert hook["timeoutSeconds"] == 5
    assert hooks["mutate.jobs.kubetrain.io"]["namespaceSelector"] == selector
    assert hooks["validate.jobs.kubetrain.io"]["namespaceSelector"] == selector
    # TrainingPolicies are cluster-scoped: a namespaceSelector would not apply to them.
    assert "namespaceSelector" not in hooks["validate.trainingpolicies.kubetrain.io"]


def test_webhooks_match_the_url_mode_configurations_in_code(chart: helm.Chart) -> None:
    """The chart (service references) and kubetrain.webhook.configurations (URL mode, used by
    `kubetrain dev` and the integration tests) register the same webhooks with the same rules and
    settings, so what is tested against devcluster is what the chart installs."""
    docs = render(chart)
    built = configurations.webhook_configurations("https://127.0.0.1:9443", b"ca")
    for config, code in zip(
        (one(docs, "MutatingWebhookConfiguration"), one(docs, "ValidatingWebhookConfiguration")),
        built,
        strict=True,
    ):
        assert config["kind"] == code["kind"]
        ours = [
            {k: v for k, v in h.items() if k not in ("clientConfig", "reinvocationPolicy")}
            for h in config["webhooks"]
        ]
        theirs = [{k: v for k, v in h.items() if k != "clientConfig"} for h in code["webhooks"]]
        assert ours == theirs
        paths = [h["clientConfig"]["service"]["path"] for h in config["webhooks"]]
        assert paths == [
            h["clientConfig"]["url"].removeprefix("https://127.0.0.1:9443") for h in code["webhooks"]
        ]


def test_cert_manager_with_an_existing_issuer_skips_the_chart_ca(chart: helm.Chart) -> None:
    docs = render(
        chart,
        {
            "certificates": {
                "mode": "certManager",
                "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
            }
        },
    )
    assert of_kind(docs, "Issuer") == []
    (cert,) = of_kind(docs, "Certificate")
    assert cert["spec"]["issuerRef"] == {
        "name": "corp-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


def test_existing_secret_without_ca_bundle_is_refused_with_a_clear_message(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmValuesError, match="caBundle"):
        render(chart, {"certificates": {"mode": "existingSecret", "secretName": "tls"}})


def test_restricted_checker_catches_violations() -> None:
    """The Pod Security checker used above is not vacuous."""
    pod = {
        "hostNetwork": True,
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "containers": [
            {
                "name": "c",
                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                "ports": [{"containerPort": 80, "hostPort": 80}],
            }
        ],
    }
    problems = restricted_violations(pod)
    for expected in (
        "hostNetwork",
        "hostPath",
        "privileged",
        "allowPrivilegeEscalation",
        "runAsNonRoot",
        "seccompProfile",
        "drop ALL",
        "SYS_ADMIN",
        "hostPort",
    ):
        assert any(expected in p for p in problems), (expected, problems)


def test_run_args_parse_with_the_real_cli(chart: helm.Chart) -> None:
    """The container's args are a `kubetrain run` command line the real CLI accepts, for every
    combination (an unknown flag would crash-loop the pod)."""
    from kubetrain import cli
    from kubetrain.commands import run

    assert "run" in cli.COMMAND_MODULES
    parser = cli.build_parser()
    for param in COMBOS:
        (values,) = param.values
        args = container(render(chart, values))["args"]  # type: ignore[arg-type]
        parsed = parser.parse_args(args)
        assert parsed.command == "run"
        assert parsed.func is run.run
        assert parsed.namespaces == values["watchNamespaces"]  # type: ignore[index]
        assert parsed.gang_scheduler == values["gangScheduler"]  # type: ignore[index]
        assert (parsed.workers, parsed.qps, parsed.burst) == (4, 150.0, 300)
        assert parsed.training_policies is True  # the policy webhook needs the policy watches


def test_run_args_parse_with_the_shared_operator_flags(chart: helm.Chart) -> None:
    """The flags `kubetrain run` is built from (kubetrain.commands._flags) accept every rendered
    argument list and read back the values the chart meant."""
    parser = operator_parser()
    for param in COMBOS:
        (values,) = param.values
        args = container(render(chart, values))["args"]  # type: ignore[arg-type]
        assert args[0] == "run"
        parsed = parser.parse_args(args[1:])
        assert parsed.gang_scheduler == values["gangScheduler"]  # type: ignore[index]
        assert parsed.namespaces == values["watchNamespaces"]  # type: ignore[index]
        assert parsed.leader_elect is True
        assert parsed.leader_election_namespace == NAMESPACE
        assert parsed.metrics_port == 8080 and parsed.webhook_port == 9443
        assert parsed.cert_dir == "/tmp/kubetrain/certs"
        mode = values["certificates"]["mode"]  # type: ignore[index]
        assert parsed.cert_mode == ("self-managed" if mode == "selfManaged" else "directory")
        if mode == "selfManaged":
            assert parsed.cert_secret == f"{FULLNAME}-webhook-tls"
            assert parsed.webhook_service == f"{FULLNAME}-webhook"
            assert parsed.webhook_namespace == NAMESPACE
            assert parsed.mutating_webhook_config == f"{FULLNAME}-mutating"
            assert parsed.validating_webhook_config == f"{FULLNAME}-validating"
    single = parser.parse_args(container(render(chart, {"leaderElection": {"enabled": False}}))["args"][1:])
    assert single.leader_elect is False


def test_hardening_values_reach_the_flags(chart: helm.Chart) -> None:
    f = flags(render(chart))
    assert f["--max-replicas-per-job"] == "10000"
    assert f["--webhook-workers"] == "1"
    assert f["--webhook-max-request-bytes"] == str(7 * 1024 * 1024)
    assert f["--webhook-review-processes"] == "2"
    assert f["--metrics-bind-address"] == "0.0.0.0"
    f = flags(
        render(
            chart,
            {
                "maxReplicasPerJob": 500,
                "webhook": {"workers": 2, "maxRequestBytes": 4194304, "reviewProcesses": 0},
                "metrics": {"bindAddress": "10.0.0.1"},
            },
        )
    )
    assert (f["--max-replicas-per-job"], f["--webhook-workers"]) == ("500", "2")
    assert (f["--webhook-max-request-bytes"], f["--metrics-bind-address"]) == ("4194304", "10.0.0.1")
    assert f["--webhook-review-processes"] == "0"


def test_secure_metrics_value(chart: helm.Chart) -> None:
    plain = render(chart)
    assert "--metrics-secure" not in flags(plain)
    assert "scheme" not in container(plain)["readinessProbe"]["httpGet"]
    docs = render(chart, {"metrics": {"secure": True, "serviceMonitor": {"enabled": True}}})
    assert "--metrics-secure" in flags(docs)
    assert container(docs)["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert one(docs, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "https"
    one(docs, "ClusterRole", f"{FULLNAME}-metrics-reader")
    one(docs, "ClusterRoleBinding", f"{FULLNAME}-metrics-auth")
    with pytest.raises(Exception, match="secure"):
        render(chart, {"metrics": {"secure": "yes"}})


def test_network_policy_admits_only_the_webhook_status_and_metrics_ports(chart: helm.Chart) -> None:
    assert of_kind(render(chart), "NetworkPolicy") == []
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    api_server = {"ipBlock": {"cidr": "10.0.0.0/24"}}
    docs = render(
        chart,
        {"networkPolicy": {"enabled": True, "webhookFrom": [api_server], "metricsFrom": [monitoring]}},
    )
    policy = one(docs, "NetworkPolicy")
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [
        {"ports": [{"protocol": "TCP", "port": 9443}], "from": [api_server]},
        {"ports": [{"protocol": "TCP", "port": 10443}]},  # training pods, from any namespace
        {"ports": [{"protocol": "TCP", "port": 8080}], "from": [monitoring]},
    ]


def test_api_groups_reach_rbac_webhooks_and_the_operator(chart: helm.Chart) -> None:
    """Serving kubeflow.org (too): the job rules, the webhook rules and the CRD read of the
    ownership check follow `apiGroups`, for every registered kind."""
    groups = ["kubetrain.io", "kubeflow.org"]
    docs = render(chart, {"apiGroups": groups})
    assert flags(docs)["--api-groups"] == "kubetrain.io,kubeflow.org"
    jobs_role = grants(one(docs, "ClusterRole", f"{FULLNAME}-jobs")["rules"])
    for group in groups:
        assert expand(group, JOB_KINDS, ["list", "watch", "delete"]) <= jobs_role
        assert expand(group, [f"{k}/status" for k in JOB_KINDS], ["update"]) <= jobs_role
        assert expand(group, [f"{k}/finalizers" for k in JOB_KINDS], ["update"]) <= jobs_role
    # The takeover adopts Kubeflow-made pods and Services by labelling them.
    assert expand("", ["pods", "services"], ["patch"]) <= jobs_role
    # ... and marks each adopted job kubetrain.io/adopted-from.
    assert expand("kubeflow.org", JOB_KINDS, ["patch"]) <= jobs_role
    assert not expand("kubetrain.io", JOB_KINDS, ["patch"]) & jobs_role
    assert not expand("training.kubedl.io", JOB_KINDS, ["patch"]) & jobs_role
    cluster_role = grants(one(docs, "ClusterRole", f"{FULLNAME}-cluster")["rules"])
    crds = tuple(sorted(crd_names("kubeflow.org")))
    assert expand("apiextensions.k8s.io", ["customresourcedefinitions"], ["get"], crds) <= cluster_role
    # Self-managed certificates: the caBundle of MPIJob's conversion webhook, injected and kept.
    conversion = tuple(conversion_crd_names(groups))
    assert conversion == ("mpijobs.kubeflow.org",)
    crd_grants = expand(
        "apiextensions.k8s.io", ["customresourcedefinitions"], ["get", "watch", "patch"], conversion
    )
    assert crd_grants <= cluster_role
    built = configurations.webhook_configurations("https://127.0.0.1:9443", b"ca", api_groups=groups)
    chart_rules = [h["rules"] for h in one(docs, "MutatingWebhookConfiguration")["webhooks"]]
    assert chart_rules == [h["rules"] for h in built[0]["webhooks"]]
    only_kubeflow = render(chart, {"apiGroups": ["kubeflow.org"]})
    role = grants(one(only_kubeflow, "ClusterRole", f"{FULLNAME}-jobs")["rules"])
    assert not any(g == "kubetrain.io" and not r.startswith("trainingcrons") for g, r, *_ in role)
    assert grants(one(docs, "ClusterRole", f"{FULLNAME}-cluster")["rules"]) >= EXPECTED_CLUSTER_ROLE_BASE
    default_cluster = grants(one(render(chart), "ClusterRole", f"{FULLNAME}-cluster")["rules"])
    assert not any(r == "customresourcedefinitions" and v == "get" for _, r, v, _n in default_cluster)


def test_serving_trainer_grants_creating_pvcs_and_nothing_else_on_them(chart: helm.Chart) -> None:
    """A TrainJob's volumeClaimPolicies PVCs are created, and read only when the create is
    answered AlreadyExists: `create` and `get` (no list or watch), and only when
    trainer.kubeflow.org is served."""

    def pvc_grants(groups: list[str]) -> set[tuple[str, str, str, tuple[str, ...]]]:
        docs = render(chart, {"apiGroups": groups})
        role = grants(one(docs, "ClusterRole", f"{FULLNAME}-jobs")["rules"])
        return {g for g in role if g[1] == "persistentvolumeclaims"}

    assert pvc_grants(["kubetrain.io", "trainer.kubeflow.org"]) == expand(
        "", ["persistentvolumeclaims"], ["create", "get"]
    )
    assert pvc_grants(["kubetrain.io"]) == set()


GROUP_CRD_DIR = CHART / "files" / "crds"
KUBEFLOW_GROUPS = ("kubeflow.org", "training.kubedl.io", "trainer.kubeflow.org")


def test_job_webhook_rules_per_group_and_version(chart: helm.Chart) -> None:
    """Every job group served at once: the chart's job webhook rules are the code's, one rule per
    group and version — kubeflow.org's MPIJob at v2beta1 only, training.kubedl.io with KubeDL's
    kinds only at v1alpha1 — and the scale rule covers every group's version."""
    groups = ["kubetrain.io", "kubeflow.org", "training.kubedl.io"]
    docs = render(chart, {"apiGroups": groups})
    built = configurations.webhook_configurations("https://127.0.0.1:9443", b"ca", api_groups=groups)
    for doc, code in zip(
        (one(docs, "MutatingWebhookConfiguration"), one(docs, "ValidatingWebhookConfiguration")),
        built,
        strict=True,
    ):
        chart_hooks = {h["name"]: h["rules"] for h in doc["webhooks"]}
        code_hooks = {h["name"]: h["rules"] for h in code["webhooks"]}
        assert chart_hooks.keys() == code_hooks.keys()
        for name, rules in chart_hooks.items():
            if name == "validate.jobs.kubetrain.io":  # the scale rule: versions and resources as sets
                *rules, scale = rules
                *code_rules, code_scale = code_hooks[name]
                assert set(scale["apiVersions"]) == set(code_scale["apiVersions"]) == {"v1", "v1alpha1"}
                assert set(scale["resources"]) == set(code_scale["resources"])
                assert rules == code_rules
            else:
                assert rules == code_hooks[name]
    jobs = one(docs, "MutatingWebhookConfiguration")["webhooks"][0]["rules"]
    assert [(r["apiGroups"], r["apiVersions"], r["resources"]) for r in jobs] == [
        (["kubetrain.io"], ["v1"], JOB_KINDS),
        (["kubeflow.org"], ["v1"], [k for k in JOB_KINDS if k != "mpijobs"]),
        (["kubeflow.org"], ["v2beta1"], ["mpijobs"]),
        (["training.kubedl.io"], ["v1alpha1"], ["tfjobs", "pytorchjobs", "xgboostjobs", "mpijobs"]),
    ]


def test_group_crd_files_are_the_generators_output() -> None:
    """charts/kubetrain/files/crds/ is `kubetrain crds --group G --out` for the groups the
    chart can install (scripts/check fails on drift too)."""
    from kubetrain.commands.crds import rendered_files

    expected = {name: text for group in KUBEFLOW_GROUPS for name, text in rendered_files(group).items()}
    present = {p.name: p.read_text() for p in GROUP_CRD_DIR.glob("*.yaml")}
    assert present == expected


@pytest.mark.parametrize("mode", ["selfManaged", "certManager", "existingSecret"])
def test_install_group_crds_installs_the_served_groups_crds(chart: helm.Chart, mode: str) -> None:
    from kubetrain.jobs.trainercrds import group_crds

    certificates: dict[str, Any] = {"mode": mode}
    if mode == "existingSecret":
        certificates.update(secretName="kt-certs", caBundle="Y2EtYnVuZGxl")
    groups = ["kubetrain.io", *KUBEFLOW_GROUPS]
    docs = render(chart, {"apiGroups": groups, "installGroupCRDs": True, "certificates": certificates})
    crds = {d["metadata"]["name"]: d for d in of_kind(docs, "CustomResourceDefinition")}
    generated = {c["metadata"]["name"]: c for g in KUBEFLOW_GROUPS for c in group_crds(g)}
    assert set(crds) == set(generated)  # kubetrain.io's come from crds/, not templates
    service = one(docs, "Service", f"{FULLNAME}-webhook")
    for name, crd in crds.items():
        annotations = crd["metadata"]["annotations"]
        assert annotations["helm.sh/resource-policy"] == "keep"  # uninstall never deletes the jobs
        want = json.loads(json.dumps(generated[name]))
        webhook = (crd["spec"].get("conversion") or {}).get("webhook")
        if webhook is None:
            assert crd["spec"] == want["spec"] and "cert-manager.io/inject-ca-from" not in annotations
            continue
        # MPIJob: its conversion webhook is this release's webhook Service at /convert.
        client = webhook.pop("clientConfig")
        want["spec"]["conversion"]["webhook"].pop("clientConfig")
        assert crd["spec"] == want["spec"]
        assert client["service"] == {
            "namespace": NAMESPACE,
            "name": service["metadata"]["name"],
            "path": "/convert",
            "port": service["spec"]["ports"][0]["port"],
        }
        if mode == "certManager":
            assert annotations["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/{FULLNAME}-webhook"
        if mode == "existingSecret":
            assert client["caBundle"] == "Y2EtYnVuZGxl"
        if mode == "selfManaged":
            assert "caBundle" not in client  # the operator injects it (RBAC: test_api_groups_...)
        kubernetes_validate.validate(crd, "1.34", strict=True)
    # Off by default, and only the served groups' CRDs when on.
    assert of_kind(render(chart, {"apiGroups": groups}), "CustomResourceDefinition") == []
    only_kubeflow = render(chart, {"apiGroups": ["kubeflow.org"], "installGroupCRDs": True})
    names = {d["metadata"]["name"] for d in of_kind(only_kubeflow, "CustomResourceDefinition")}
    assert names == set(crd_names("kubeflow.org"))


def test_upgrade_from_kubetrain_io_only_to_kubeflow_org_keeps_every_running_job(chart: helm.Chart) -> None:
    """`helm upgrade --set 'apiGroups={kubetrain.io,kubeflow.org}' --set installGroupCRDs=true`
    from the defaults: nothing of the kubetrain.io release goes away or is renamed (its jobs, CRDs
    from crds/, RBAC and webhook rules stay), the operator keeps serving kubetrain.io, and the new
    group's CRDs, RBAC and webhook rules are added."""
    before = render(chart)
    after = render(chart, {"apiGroups": ["kubetrain.io", "kubeflow.org"], "installGroupCRDs": True})
    keys = lambda docs: {(d["kind"], d["metadata"]["name"]) for d in docs}  # noqa: E731
    assert keys(before) <= keys(after)
    added = keys(after) - keys(before)
    assert added == {("CustomResourceDefinition", n) for n in crd_names("kubeflow.org")}
    old_deploy, new_deploy = one(before, "Deployment"), one(after, "Deployment")
    assert old_deploy["spec"]["selector"] == new_deploy["spec"]["selector"]
    assert flags(after)["--api-groups"] == "kubetrain.io,kubeflow.org"
    for kind, name in (("ClusterRole", f"{FULLNAME}-jobs"), ("ClusterRole", f"{FULLNAME}-cluster")):
        assert grants(one(before, kind, name)["rules"]) <= grants(one(after, kind, name)["rules"])

    def matched(docs: list[Manifest], kind: str) -> set[tuple[str, str, str, str, str]]:
        """(webhook, group, version, resource, operation) every rule of the configuration covers."""
        return {
            (h["name"], g, v, r, op)
            for h in one(docs, kind)["webhooks"]
            for rule in h["rules"]
            for g, v, r, op in itertools.product(
                rule["apiGroups"], rule["apiVersions"], rule["resources"], rule["operations"]
            )
        }

    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert matched(before, kind) <= matched(after, kind)


def test_serving_kubedl_grants_the_takeover_its_patches(chart: helm.Chart) -> None:
    """Serving training.kubedl.io alone: the takeover labels KubeDL-made pods and Services and
    marks each adopted job kubetrain.io/adopted-from; without it no patch is granted."""
    jobs_role = grants(
        one(render(chart, {"apiGroups": ["training.kubedl.io"]}), "ClusterRole", f"{FULLNAME}-jobs")["rules"]
    )
    assert expand("", ["pods", "services"], ["patch"]) <= jobs_role
    assert expand("training.kubedl.io", JOB_KINDS, ["patch"]) <= jobs_role
    assert not expand("kubeflow.org", JOB_KINDS, ["patch"]) & jobs_role
    plain = grants(
        one(render(chart, {"apiGroups": ["kubetrain.io"]}), "ClusterRole", f"{FULLNAME}-jobs")["rules"]
    )
    assert not expand("", ["pods", "services"], ["patch"]) & plain


def test_kubedl_cron_reaches_rbac_webhooks_and_the_operator(chart: helm.Chart) -> None:
    """kubedlCron: the operator serves apps.kubedl.io's Cron (flag), reads and updates crons,
    reads their CRD by name, and the cron webhook validates them too."""
    docs = render(chart, {"kubedlCron": True})
    assert flags(docs)["--api-groups"] == "kubetrain.io,apps.kubedl.io"
    jobs_role = grants(one(docs, "ClusterRole", f"{FULLNAME}-jobs")["rules"])
    assert expand("apps.kubedl.io", ["crons"], ["get", "list", "watch"]) <= jobs_role
    assert expand("apps.kubedl.io", ["crons/status", "crons/finalizers"], ["update"]) <= jobs_role
    cluster_role = grants(one(docs, "ClusterRole", f"{FULLNAME}-cluster")["rules"])
    names = ("crons.apps.kubedl.io",)
    assert expand("apiextensions.k8s.io", ["customresourcedefinitions"], ["get"], names) <= cluster_role
    hooks = {h["name"]: h for h in one(docs, "ValidatingWebhookConfiguration")["webhooks"]}
    assert hooks["validate.crons.kubetrain.io"]["rules"] == cron_rules(["kubetrain.io", "apps.kubedl.io"])
    default = grants(one(render(chart), "ClusterRole", f"{FULLNAME}-jobs")["rules"])
    assert not any(g == "apps.kubedl.io" for g, *_ in default)


def test_status_server_in_the_operators_process_on_request(chart: helm.Chart) -> None:
    f = flags(render(chart, {"statusServer": {"separateProcess": False}}))
    assert "--status-server-port" in f and "--status-server-process" not in f


def test_status_server_off_removes_its_port_flags_and_grants(chart: helm.Chart) -> None:
    docs = render(chart, {"statusServer": {"enabled": False}})
    f = flags(docs)
    assert "--status-server-port" not in f and "--status-server-url" not in f
    assert "--status-server-process" not in f
    assert "status" not in {p["name"] for p in container(docs)["ports"]}
    names = {d["metadata"]["name"] for d in of_kind(docs, "ClusterRole")}
    assert f"{FULLNAME}-status-auth" not in names
    jobs_role = grants(one(docs, "ClusterRole", f"{FULLNAME}-jobs")["rules"])
    assert ("", "pods", "get", ()) not in jobs_role
    assert ("kubetrain.io", "pytorchjobs/status", "patch", ()) not in jobs_role
    # (jobs keep `get` for the cron controller: an active job its cache does not show)
