"""Every cron example under examples/crons/ is valid, and schedules what its comment says."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from kubetrain.cron.decide import decide
from kubetrain.cron.shape import read_cron, validate_cron

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "crons").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_cron_example_is_valid(path: Path) -> None:
    obj = yaml.safe_load(path.read_text())
    obj["metadata"]["namespace"] = "default"
    assert validate_cron(obj) == []


def test_nightly_example_runs_at_two_in_berlin() -> None:
    obj = yaml.safe_load((ROOT / "examples" / "crons" / "nightly-pytorch.yaml").read_text())
    obj["metadata"].update(namespace="default", uid="u", creationTimestamp="2024-06-30T12:00:00Z")
    plan = decide(read_cron(obj), [], datetime(2024, 7, 1, 0, 30, tzinfo=UTC))  # 02:30 CEST
    assert plan.scheduled_time == datetime(2024, 7, 1, 0, 0, tzinfo=UTC)
    assert plan.create is not None and plan.create["metadata"]["labels"]["team"] == "vision"


def test_examples_exist() -> None:
    assert {p.name for p in EXAMPLES} >= {"nightly-pytorch.yaml", "kubedl-cron-tfjob.yaml"}


def test_kubetrain_validate_checks_crons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kubetrain.cli import main

    assert main(["validate", *map(str, EXAMPLES)]) == 0
    bad = yaml.safe_load((ROOT / "examples" / "crons" / "nightly-pytorch.yaml").read_text())
    bad["spec"]["schedule"] = "0 25 * * *"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    capsys.readouterr()
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr()
    assert 'spec.schedule: Invalid: "0 25 * * *": hour field: 25 is above the maximum 23' in out.out + out.err


def test_kubetrain_dev_applies_crons_and_serves_kubedls_group() -> None:
    import argparse

    from kubetrain.commands._devmanifests import job_ref
    from kubetrain.commands.dev import served_groups

    nightly = yaml.safe_load((ROOT / "examples" / "crons" / "nightly-pytorch.yaml").read_text())
    kubedl = yaml.safe_load((ROOT / "examples" / "crons" / "kubedl-cron-tfjob.yaml").read_text())
    assert (job_ref(nightly).plural, job_ref(nightly).group) == ("trainingcrons", "kubetrain.io")
    assert (job_ref(kubedl).plural, job_ref(kubedl).group) == ("crons", "apps.kubedl.io")
    args = argparse.Namespace(api_groups=None)
    assert served_groups(args, [nightly]) == ("kubetrain.io",)
    assert served_groups(args, [kubedl]) == ("kubetrain.io", "apps.kubedl.io")


def test_kubetrain_render_shows_the_job_a_cron_creates_next(capsys: pytest.CaptureFixture[str]) -> None:
    from kubetrain.cli import main

    assert main(["render", str(ROOT / "examples" / "crons" / "nightly-pytorch.yaml")]) == 0
    out = capsys.readouterr()
    docs = list(yaml.safe_load_all(out.out))
    job = docs[0]
    assert job["kind"] == "PyTorchJob" and job["metadata"]["name"].startswith("nightly-mnist-")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "TrainingCron"
    stamp = job["metadata"]["annotations"]["kubetrain.io/cron-scheduled-timestamp"]
    assert "T02:00:00+0" in stamp  # 02:00 on Berlin's wall clock
    assert [d["kind"] for d in docs[1:]] == ["Service", "Pod", "Pod", "Pod"]
    assert f"the job it creates next, at {stamp}" in out.err
