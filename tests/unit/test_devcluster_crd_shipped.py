"""Every CustomResourceDefinition the project ships passes devcluster's apiextensions validation:
the generated files (crds/, charts/kubetrain/crds/, charts/kubetrain/files/crds/), what
`kubetrain crds` generates for each servable group (with and without MPIJob's conversion
webhook), the group CRDs the chart renders (conversion client config and caBundle filled in),
and devcluster's gang-scheduler PodGroup CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from crd_builders import causes

from kubetrain.api.groups import SERVABLE_GROUPS
from kubetrain.commands.crds import rendered_files
from kubetrain.devcluster.gang.crds import SCHEDULER_PLUGINS, VOLCANO, podgroup_crd

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kubetrain"
DIRECTORIES = ("crds", "charts/kubetrain/crds", "charts/kubetrain/files/crds")


def yaml_crds(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "CustomResourceDefinition"]


def shipped_files() -> list[Path]:
    return [p for d in DIRECTORIES for p in sorted((ROOT / d).glob("*.yaml"))]


def test_the_shipped_directories_hold_crds() -> None:
    assert len(shipped_files()) >= 20


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_crd_files_are_accepted(path: Path) -> None:
    crds = yaml_crds(path.read_text())
    assert crds
    for crd in crds:
        assert causes(crd) == [], crd["metadata"]["name"]


@pytest.mark.parametrize("group", SERVABLE_GROUPS)
@pytest.mark.parametrize("service", [None, ("kubetrain-system", "kubetrain-webhook")])
def test_generated_crds_are_accepted(group: str, service: tuple[str, str] | None) -> None:
    for text in rendered_files(group, service).values():
        for crd in yaml_crds(text):
            assert causes(crd) == [], crd["metadata"]["name"]


@pytest.mark.parametrize(
    ("groups", "certificates"),
    [
        (["kubetrain.io", "kubeflow.org", "trainer.kubeflow.org"], {"mode": "selfManaged"}),
        (
            ["kubetrain.io", "kubeflow.org"],
            {"mode": "existingSecret", "secretName": "tls", "caBundle": "Y2E="},
        ),
        (["kubetrain.io", "training.kubedl.io"], {"mode": "certManager"}),
    ],
)
def test_chart_rendered_group_crds_are_accepted(groups: list[str], certificates: dict[str, str]) -> None:
    values = {"apiGroups": groups, "installGroupCRDs": True, "certificates": certificates}
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name="kt", namespace="kubetrain-system", is_install=True)
        chart_crds = [crd for c in chart.crds for crd in yaml_crds(c["data"])]
    manifests = [text for path, text in rendered.items() if not path.endswith("NOTES.txt")]
    crds = chart_crds + [crd for text in manifests for crd in yaml_crds(text)]
    assert {crd["spec"]["group"] for crd in crds} == set(groups)
    webhooks = [c for c in crds if (c["spec"].get("conversion") or {}).get("strategy") == "Webhook"]
    assert bool(webhooks) == ("kubeflow.org" in groups)  # MPIJob's v1 <-> v2beta1 conversion
    for crd in crds:
        assert causes(crd) == [], crd["metadata"]["name"]


@pytest.mark.parametrize("scheduler", [VOLCANO, SCHEDULER_PLUGINS])
def test_gang_podgroup_crds_are_accepted(scheduler: str) -> None:
    assert causes(podgroup_crd(scheduler)) == []
