"""values.schema.json rejects bad values through the Helm engine itself, as `helm install` would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import pytest

from kubetrain.api.gangschedulers import CHOICES

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kubetrain"


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def test_chart_metadata() -> None:
    with helm.Chart.load(CHART) as chart:
        meta = chart.metadata
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "kubetrain"
    assert meta["type"] == "application"


def test_schema_is_valid_and_closed_everywhere(chart: helm.Chart) -> None:
    schema = chart.schema
    assert schema is not None
    jsonschema.Draft7Validator.check_schema(schema)

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and path not in FREE_FORM:
                assert "additionalProperties" in node, f"{path} accepts any key"
                assert node["additionalProperties"] is False or isinstance(
                    node["additionalProperties"], dict
                ), path
            for key, child in node.items():
                walk(child, f"{path}/{key}")
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{path}/{i}")

    walk(schema, "")


# Kubernetes objects passed through verbatim (validated by the API server, not by us).
FREE_FORM = {
    "/properties/global",
    "/properties/affinity",
    "/properties/tolerations/items",
    "/properties/topologySpreadConstraints/items",
}


def test_defaults_pass_the_schema(chart: helm.Chart) -> None:
    chart.validate_schema(chart.values)
    chart.validate_schema({})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"replica": 2}, "additional properties 'replica' not allowed", id="typo-top-level"),
        pytest.param({"image": {"repo": "x"}}, "additional properties 'repo' not allowed", id="typo-nested"),
        pytest.param(
            {"metrics": {"serviceMonitor": {"enable": True}}}, "'enable' not allowed", id="typo-deep"
        ),
        pytest.param({"certificates": {"mode": "cert-manager"}}, "/certificates/mode", id="enum-cert-mode"),
        pytest.param({"gangScheduler": "kueue"}, "/gangScheduler", id="enum-gang"),
        pytest.param({"apiGroups": ["kubeflow.com"]}, "/apiGroups/0", id="unknown-api-group"),
        pytest.param({"apiGroups": ["trainer.kubeflow.org"]}, "/apiGroups", id="trainer-alone"),
        pytest.param({"installGroupCRDs": "yes"}, "/installGroupCRDs", id="type-install-group-crds"),
        pytest.param({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy", id="enum-pull-policy"),
        pytest.param({"replicas": "2"}, "/replicas", id="type-replicas"),
        pytest.param({"replicas": 0}, "/replicas", id="min-replicas"),
        pytest.param({"watchNamespaces": "team-a"}, "/watchNamespaces", id="type-namespaces"),
        pytest.param({"watchNamespaces": ["Team_A"]}, "/watchNamespaces/0", id="bad-namespace-name"),
        pytest.param({"webhook": {"timeoutSeconds": 30}}, "/webhook/timeoutSeconds", id="timeout-over-10"),
        pytest.param({"leaderElection": {"enabled": "yes"}}, "/leaderElection/enabled", id="type-bool"),
        pytest.param(
            {"resources": {"limits": {"memory": "lots"}}}, "/resources/limits/memory", id="quantity"
        ),
        pytest.param({"certificates": {"mode": "existingSecret"}}, "caBundle", id="existing-needs-ca"),
        pytest.param({"metrics": {"serviceMonitor": {"interval": "30 seconds"}}}, "interval", id="duration"),
        pytest.param({"clusterDomain": "Corp_Example"}, "/clusterDomain", id="bad-cluster-domain"),
        pytest.param({"clusterDomain": "corp.example."}, "/clusterDomain", id="cluster-domain-dot"),
    ],
)
def test_bad_values_are_rejected_by_helm(chart: helm.Chart, values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmValuesError) as excinfo:
        chart.validate_schema(values)
    assert message in str(excinfo.value)
    # Rendering (what install/upgrade/template do) applies the schema too.
    with pytest.raises(helm.HelmValuesError):
        chart.render(values, name="kt", namespace="kubetrain-system")
    report = helm.lint(CHART, values, namespace="kubetrain-system")
    assert report["errors"] or any(m["severity"] == 3 for m in report["messages"]), report


def test_value_defaults_match_the_operator_flag_defaults(chart: helm.Chart) -> None:
    """values.yaml documents the same defaults `kubetrain run` has (kubetrain.commands._flags),
    so leaving a value unset in the chart and leaving the flag off mean the same thing."""
    import argparse

    from kubetrain.commands import _flags

    parser = argparse.ArgumentParser()
    _flags.add_common_flags(parser)
    _flags.add_controller_flags(parser)
    _flags.add_webhook_flags(parser)
    flags = parser.parse_args([])
    values = chart.values
    assert values["controller"] == {"workers": flags.workers, "qps": flags.qps, "burst": flags.burst}
    assert (values["controller"]["qps"], values["controller"]["burst"]) == (150, 300)
    assert values["metrics"]["port"] == flags.metrics_port
    assert values["webhook"]["port"] == flags.webhook_port
    assert values["logLevel"] == flags.log_level
    assert values["gangScheduler"] == flags.gang_scheduler
    assert values["leaderElection"]["enabled"] is flags.leader_elect
    assert values["watchNamespaces"] == flags.namespaces
    assert values["clusterDomain"] == flags.cluster_domain.configured == ""


def test_gang_scheduler_values_are_the_registered_gang_schedulers() -> None:
    # A gang scheduler added to kubetrain.api.gangschedulers must be selectable in the chart.
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["properties"]["gangScheduler"]["enum"] == list(CHOICES)
