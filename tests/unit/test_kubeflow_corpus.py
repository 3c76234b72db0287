"""Kubeflow's own example manifests, apiVersion changed only: `kubetrain validate` and
`kubetrain render` accept every one a Kubeflow v1.9 cluster accepts, and refuse the others
naming the field."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from jobs import rendered

sys.path.insert(0, str(Path(__file__).parent))

from kubeflow_corpus import CORPUS, REJECTED, accepted_files, corpus_files, jobs_of

from kubetrain.cli import main
from kubetrain.commands.render import with_generated_name
from kubetrain.commands.validate import Document, check_document
from kubetrain.frameworks.registry import FRAMEWORKS


def test_corpus_is_complete() -> None:
    files = corpus_files()
    assert len(files) >= 30
    assert set(REJECTED) <= set(files)
    assert {f.split("/")[0] for f in files} == {
        "training-operator",
        "tf-operator",
        "pytorch-operator",
        "mxnet-operator",
        "website",
    }
    for f in files:
        assert all(j["apiVersion"] == "kubetrain.io/v1" for j in jobs_of(f)), f


@pytest.mark.parametrize("relpath", accepted_files())
def test_accepted_example_validates_and_renders(relpath: str) -> None:
    jobs = jobs_of(relpath)
    assert jobs
    for job in jobs:
        report = io.StringIO()
        valid, _ = check_document(Document(relpath, job), report)
        assert valid, report.getvalue()
        pods = rendered(with_generated_name(job, relpath))
        wanted = sum(
            (r.get("replicas", 1) if r.get("replicas") is not None else 1)
            for field in (f.replica_field for f in FRAMEWORKS.values())
            for r in (job["spec"].get(field) or {}).values()
        )
        assert len(pods) == wanted


@pytest.mark.parametrize("relpath", sorted(REJECTED))
def test_old_layout_example_is_refused_naming_the_field(
    relpath: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(CORPUS / relpath)]) == 1
    out = capsys.readouterr()
    for field in REJECTED[relpath]:
        assert f"{field}: Invalid: unknown field" in out.out + out.err
    assert main(["render", str(CORPUS / relpath)]) == 1
    assert capsys.readouterr().out == ""
