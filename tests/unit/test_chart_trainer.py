"""The chart with trainer.kubeflow.org served: Trainer's default ClusterTrainingRuntimes (the
same as `kubetrain dev` installs) and the kubeflow-trainer-public ConfigMap, off with
trainer.defaultRuntimes=false; RBAC for TrainJobs and runtimes; the webhooks kubetrain builds for
URL mode (names and rules); trainer.kubeflow.org alone is refused (it has no job kinds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from kubetrain.api.trainer.defaults import default_runtimes
from kubetrain.webhook.configurations import webhook_configurations

GROUPS = ["kubetrain.io", "trainer.kubeflow.org"]


def render(values: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    with helm.Chart.load("charts/kubetrain") as chart:
        manifests = chart.render(values, name="kt", namespace="kubetrain-system")
    return {
        path: [d for d in yaml.safe_load_all(text) if d]
        for path, text in manifests.items()
        if path.endswith(".yaml")
    }


def test_default_runtimes_and_public_configmap() -> None:
    docs = render({"apiGroups": GROUPS})["kubetrain/templates/trainer-runtimes.yaml"]
    runtimes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterTrainingRuntime"}
    expected = {r["metadata"]["name"]: r for r in default_runtimes()}
    assert set(runtimes) == set(expected)
    for name, runtime in runtimes.items():
        assert runtime["spec"] == expected[name]["spec"]
        assert runtime["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    [public] = [d for d in docs if d["kind"] == "ConfigMap"]
    assert public["metadata"]["name"] == "kubeflow-trainer-public"
    assert public["data"] == {"kubeflow_trainer_version": "v2.3.0"}
    assert public["metadata"]["namespace"] == "kubetrain-system"  # the release's, by default
    moved = render({"apiGroups": GROUPS, "trainer": {"publicNamespace": "kubeflow-system"}})
    [public] = [d for d in moved["kubetrain/templates/trainer-runtimes.yaml"] if d["kind"] == "ConfigMap"]
    assert public["metadata"]["namespace"] == "kubeflow-system"  # where the SDK looks by default
    off = render({"apiGroups": GROUPS, "trainer": {"defaultRuntimes": False}})
    assert not off.get("kubetrain/templates/trainer-runtimes.yaml")
    assert not render({})["kubetrain/templates/trainer-runtimes.yaml"]


def test_rbac_and_webhooks_follow_the_group() -> None:
    out = render({"apiGroups": GROUPS})
    roles = [d for d in out["kubetrain/templates/rbac.yaml"] if d["kind"] == "ClusterRole"]
    grants = {
        (res, verb)
        for role in roles
        for rule in role["rules"]
        if "trainer.kubeflow.org" in rule.get("apiGroups", [])
        for res in rule["resources"]
        for verb in rule["verbs"]
    }
    assert ("trainjobs", "watch") in grants and ("trainjobs/status", "update") in grants
    assert ("clustertrainingruntimes", "get") in grants and ("trainingruntimes", "list") in grants
    assert not any(
        "trainer.kubeflow.org" in rule.get("apiGroups", []) and "tfjobs" in rule["resources"]
        for role in roles
        for rule in role["rules"]
    )
    mutating, validating = out["kubetrain/templates/webhooks.yaml"]
    url_mutating, url_validating = webhook_configurations("https://x", b"ca", api_groups=GROUPS)
    for chart, url in ((mutating, url_mutating), (validating, url_validating)):
        assert [h["name"] for h in chart["webhooks"]] == [h["name"] for h in url["webhooks"]]
        assert [h["rules"] for h in chart["webhooks"]] == [h["rules"] for h in url["webhooks"]]


def test_trainer_group_alone_is_refused() -> None:
    with pytest.raises(Exception, match="apiGroups"):
        render({"apiGroups": ["trainer.kubeflow.org"]})


def test_the_default_runtimes_are_trainers_own_files_unchanged() -> None:
    """Every shipped runtime (package data and the chart's copy) is byte for byte the file of
    Trainer 2.3's manifests/base/runtimes kept under tests/data (torchtune/<family>/<file> shipped
    as torchtune_<file>), and every runtime of that folder is shipped."""
    root = Path(__file__).resolve().parents[2]
    upstream = root / "tests/data/trainer/runtimes"
    shipped = {
        (f"torchtune_{p.name}" if "torchtune" in p.parts else p.name): p.read_bytes()
        for p in upstream.rglob("*.yaml")
        if p.name != "torch_distributed_with_cache.yaml"  # manifests/base/runtimes/data-cache: not a default
    }
    for folder in (root / "kubetrain/api/trainer/runtimes", root / "charts/kubetrain/files/trainer-runtimes"):
        assert {p.name: p.read_bytes() for p in folder.glob("*.yaml")} == shipped, folder
