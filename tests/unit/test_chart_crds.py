"""The chart ships the generated CRDs: charts/kubetrain/crds/ is a byte-for-byte copy of the
top-level crds/ (which `kubetrain crds --check` keeps equal to the pydantic models)."""

from __future__ import annotations

from pathlib import Path

import helm_python as helm
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kubetrain"


def crd_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.yaml"))}


def test_chart_crds_identical_to_top_level_crds() -> None:
    top = crd_files(ROOT / "crds")
    assert top, "crds/ holds no generated CRDs (kubetrain crds --out crds/)"
    chart_dir = CHART / "crds"
    assert chart_dir.is_dir(), "charts/kubetrain/crds/ is missing: copy crds/*.yaml into it"
    assert crd_files(chart_dir) == top


def test_helm_installs_the_job_crds() -> None:
    with helm.Chart.load(CHART) as chart:
        crds = chart.crds
    kinds = set()
    for crd in crds:
        for doc in yaml.safe_load_all(crd["data"]):
            if doc:
                assert doc["kind"] == "CustomResourceDefinition"
                assert doc["spec"]["group"] == "kubetrain.io"
                kinds.add(doc["spec"]["names"]["kind"])
    assert {"TFJob", "PyTorchJob", "MXJob"} <= kinds


def test_chart_crds_are_schema_valid_custom_resource_definitions() -> None:
    for path in sorted((CHART / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                kubernetes_validate.validate(doc, "1.27", strict=True)
                kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
