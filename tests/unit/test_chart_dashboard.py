"""The chart's dashboard: off by default; when on, a Deployment under the restricted pod security
profile whose arguments the real CLI parses, a read-only ClusterRole (impersonation only in proxy
mode), a Service. Rendered and linted by the real Helm engine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest
from unit.test_chart_render import CHART, NAMESPACE, of_kind, render, restricted_violations, validate_k8s

from kubetrain import cli
from kubetrain.commands import dashboard as dashboard_command


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def dashboard_docs(chart: helm.Chart, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in render(chart, values) if d["metadata"]["name"].endswith("-dashboard")}


def test_off_by_default(chart: helm.Chart) -> None:
    assert dashboard_docs(chart, {}) == {}


@pytest.mark.parametrize("auth", ["token", "proxy"])
def test_on_it_is_restricted_read_only_and_its_args_parse(chart: helm.Chart, auth: str) -> None:
    values = {"dashboard": {"enabled": True, "auth": auth}, "apiGroups": ["kubetrain.io", "kubeflow.org"]}
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version="v1.27.0")
    assert report["errors"] == [], report
    assert [m for m in report["messages"] if m["severity"] >= 2] == [], report
    for doc in render(chart, values):
        if doc["metadata"]["name"].endswith("-dashboard"):
            validate_k8s(doc)
    docs = dashboard_docs(chart, values)
    assert set(docs) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    args = cli.build_parser().parse_args(pod["containers"][0]["args"])
    assert args.func is dashboard_command.run
    assert (args.auth, args.host, args.api_groups) == (auth, "0.0.0.0", ["kubetrain.io", "kubeflow.org"])
    rules = docs["ClusterRole"]["rules"]
    verbs = {verb for rule in rules for verb in rule["verbs"]}
    assert verbs == ({"list", "watch", "impersonate"} if auth == "proxy" else {"list", "watch"})
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == "http"
    names = sorted(d["metadata"]["name"] for d in of_kind(render(chart, values), "Deployment"))
    assert names == ["kt-kubetrain", "kt-kubetrain-dashboard"]  # beside the operator


def test_impersonation_can_be_narrowed(chart: helm.Chart) -> None:
    values = {"dashboard": {"enabled": True, "auth": "proxy", "proxy": {"impersonateGroups": ["ml-team"]}}}
    rules = dashboard_docs(chart, values)["ClusterRole"]["rules"]
    groups = next(r for r in rules if r["resources"] == ["groups"])
    users = next(r for r in rules if r["resources"] == ["users"])
    assert groups["resourceNames"] == ["ml-team"] and "resourceNames" not in users


@pytest.mark.parametrize("groups", [["kubetrain.io"], ["kubetrain.io", "trainer.kubeflow.org"]])
def test_configmaps_are_read_only_when_trainjobs_are_served(chart: helm.Chart, groups: list[str]) -> None:
    """Serving TrainJobs, the dashboard watches their snapshot ConfigMaps (their recorded
    restarts); otherwise it has no right to ConfigMaps at all."""
    rules = dashboard_docs(chart, {"dashboard": {"enabled": True}, "apiGroups": groups})["ClusterRole"][
        "rules"
    ]
    config_maps = [r for r in rules if "configmaps" in r["resources"]]
    if "trainer.kubeflow.org" in groups:
        assert config_maps == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}]
    else:
        assert config_maps == []
