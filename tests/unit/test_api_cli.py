"""`kubetrain validate` and `kubetrain crds` as a user runs them."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
import yaml

from kubetrain.cli import main
from kubetrain.frameworks.registry import FRAMEWORKS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))


def test_every_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(EXAMPLES) >= 6
    assert main(["validate", *EXAMPLES]) == 0
    out = capsys.readouterr().out
    assert out.count(": valid") == len(EXAMPLES)


def test_broken_manifests_exit_1_with_field_paths(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "examples" / "invalid" / "pytorch-two-masters.yaml")
    assert main(["validate", path]) == 1
    out = capsys.readouterr().out
    prefix = f"{path}#1 (PyTorchJob/broken-ddp): "
    assert f"{prefix}spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in out
    assert f"{prefix}spec.runPolicy.backoffLimit: Invalid:" in out
    assert f"{prefix}spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].imagee: Invalid:" in out
    assert "resources.limits[cpu]: Invalid" in out


def test_each_document_is_reported_separately(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = (ROOT / "examples" / "mxnet-local.yaml").read_text()
    bad = (ROOT / "examples" / "invalid" / "mxnet-bad-mode.yaml").read_text()
    f = tmp_path / "multi.yaml"
    f.write_text(good + "\n---\n" + bad + "\n---\n")
    assert main(["validate", str(f)]) == 1
    out = capsys.readouterr().out
    assert f"{f}#1 (MXJob/mxnet-mnist-local): valid" in out
    assert f"{f}#2 (MXJob/a-very-long" in out and "metadata.name: Invalid" in out
    assert f"{f}#3 (TFJob/not-migrated): apiVersion: NotSupported" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: [1, 2\n", "not valid YAML: line"),
        ("- 1\n- 2\n", "is a list, not a Kubernetes object"),
        ("just a string\n", "not a Kubernetes object"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
            'kind: NotSupported: "Pod" is not supported: must be one of "TFJob"',
        ),
        ("apiVersion: kubetrain.io/v2\nkind: TFJob\n", "apiVersion: NotSupported"),
        # what the API server's ObjectMeta decoding refuses, for every kind (MPIJob's own checks
        # read the annotations: they once raised on a list)
        (
            "apiVersion: kubetrain.io/v1\nkind: MPIJob\nmetadata: {name: x, annotations: [a]}\n",
            "metadata.annotations: Invalid: must be a map of string to string, got list",
        ),
        (
            "apiVersion: kubetrain.io/v1\nkind: TFJob\nmetadata: {name: x, labels: {gpus: 8}}\n",
            "metadata.labels.gpus: Invalid: must be a string, got integer (quote it in YAML)",
        ),
        (
            "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: [x]\n",
            "metadata: Invalid: must be a mapping, got list",
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(content)
    assert main(["validate", str(f)]) == 1
    captured = capsys.readouterr()
    assert message in captured.out
    assert "Traceback" not in captured.out + captured.err


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml"), str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "nope.yaml: cannot read: no such file" in out
    assert f"{tmp_path}: cannot read: is a directory" in out


@pytest.mark.parametrize("content", ["", "---\n# nothing but a comment\n---\n"])
def test_a_file_with_no_document_fails_as_kubectl_apply_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text(content)
    assert main(["validate", str(ROOT / "examples" / "mxnet-local.yaml"), str(empty)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"{empty}: no documents"


def test_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00garbage")
    assert main(["validate", str(f)]) == 1
    assert "cannot read: not UTF-8 text" in capsys.readouterr().out


def test_stdin_and_show_defaults(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO((ROOT / "examples" / "mxnet-local.yaml").read_text()))
    assert main(["validate", "--show-defaults", "-"]) == 0
    captured = capsys.readouterr()
    assert "<stdin>#1 (MXJob/mxnet-mnist-local): valid" in captured.err
    (obj,) = list(yaml.safe_load_all(captured.out))
    assert obj["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "suspend": False}
    container = obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert {"name": "mxjob-port", "containerPort": 9091} in container["ports"]


def test_warnings_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "examples" / "pytorch-ddp.yaml").read_text().replace("name: pytorch\n", "name: trainer\n")
    f = tmp_path / "w.yaml"
    f.write_text(text)
    assert main(["validate", str(f)]) == 0
    assert (
        'warning: spec.pytorchReplicaSpecs[Master].template.spec.containers: no container is named "pytorch"'
        in capsys.readouterr().out
    )


def test_crds_prints_a_multi_document_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    # One CRD per registered kind, in registry order, then TrainingPolicy and TrainingCron.
    assert [d["metadata"]["name"] for d in docs] == [
        *(f"{framework.plural}.kubetrain.io" for framework in FRAMEWORKS.values()),
        "trainingpolicies.kubetrain.io",
        "trainingcrons.kubetrain.io",
    ]
    assert docs[0]["metadata"]["name"] == "tfjobs.kubetrain.io"


def test_crds_of_kubedl_apps_group_is_the_cron(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--group", "apps.kubedl.io"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["name"] for d in docs] == ["crons.apps.kubedl.io"]
    assert docs[0]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubetrain"


def test_crds_out_then_check_and_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crds"
    assert main(["crds", "--out", str(out)]) == 0
    assert main(["crds", "--check", str(out)]) == 0
    assert main(["crds", "--check", str(ROOT / "crds")]) == 0
    capsys.readouterr()
    (out / "kubetrain.io_tfjobs.yaml").write_text("# edited\n")
    (out / "kubetrain.io_mxjobs.yaml").unlink()
    assert main(["crds", "--check", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"differs from the models: {out / 'kubetrain.io_tfjobs.yaml'}" in err
    assert f"missing: {out / 'kubetrain.io_mxjobs.yaml'}" in err
    assert "kubetrain crds --out" in err


def test_crds_check_of_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--check", str(tmp_path / "absent")]) == 1
    assert "is not a directory" in capsys.readouterr().err
    shutil.rmtree(tmp_path, ignore_errors=True)
