"""`kubetrain dev`: what it applies and how it reports progress."""

from __future__ import annotations

import argparse
import copy
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kubetrain import cli
from kubetrain.commands._devmanifests import DevError, apply_manifest, load_jobs, unserved_group
from kubetrain.commands._devprogress import FollowPrinter, failed_exits, pods_not_starting, progress_bar
from kubetrain.commands.dev import describe_progress
from kubetrain.dev.stack import DevStack


def args(**kw: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"file": None, "example": "pytorch-ddp", **kw})


def pod(rtype: str, phase: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"kubetrain.io/replica-type": rtype}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_every_document_of_a_manifest_is_applied_in_order() -> None:
    jobs = load_jobs(args(example="invalid/mxnet-bad-mode"))
    assert [j["kind"] for j in jobs] == ["MXJob", "TFJob"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no manifest in it"),
        ("- a\n- b\n", "document 1 is a list, not a manifest"),
        ("kind: [", "not valid YAML"),
    ],
)
def test_bad_manifests_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(DevError, match=message):
        load_jobs(args(file=str(path)))


def test_unknown_example_lists_the_valid_ones() -> None:
    with pytest.raises(DevError, match=r"no such example \(valid: .*pytorch-ddp"):
        load_jobs(args(example="nope"))


def test_progress_ignores_pods_being_deleted() -> None:
    job = {"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}
    pods = [pod("master", "Succeeded"), pod("worker", "Failed", deleting=True)]
    assert describe_progress(job, pods) == "Succeeded  master: 1 succeeded"


async def test_malformed_metadata_is_refused_without_a_call() -> None:
    out = io.StringIO()
    job = {"apiVersion": "kubetrain.io/v1", "kind": "TFJob", "metadata": "train"}
    assert await apply_manifest(cast(DevStack, None), job, out) is None
    assert out.getvalue() == "TFJob: metadata must be a mapping (name, namespace, …)\n"


def test_the_progress_bar_shows_percent_eta_and_the_latest_metrics() -> None:
    job = {
        "status": {
            "trainerStatus": {
                "progressPercentage": 25,
                "estimatedRemainingSeconds": 3725,
                "metrics": [{"name": f"m{i}", "value": str(i)} for i in range(6)],
            }
        }
    }
    bar = progress_bar(job)
    assert bar.startswith("progress [######..................]  25%  ETA 1:02:05  m0 0 · m1 1")
    assert bar.endswith("m3 3 · +2 more")
    assert progress_bar({"status": {}}) == ""  # nothing reported: no bar
    metrics_only = progress_bar(
        {"status": {"trainerStatus": {"metrics": [{"name": "loss", "value": "0.5"}]}}}
    )
    assert metrics_only == "progress  loss 0.5"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_progress_bar_replaces_the_previous_one_in_place() -> None:
    for out, in_place in ((_Terminal(), True), (io.StringIO(), False)):
        printer = FollowPrinter(out)
        printer.line("[   0.1s] Running")
        printer.bar("progress 41%")
        printer.bar("progress 83%")  # right after a bar: replaces it on a terminal
        printer.line("[  12.1s] Succeeded")
        printer.bar("progress 100%")  # after a state line: a line of its own everywhere
        lines = out.getvalue().splitlines()
        up = FollowPrinter.REPLACE_LAST_LINE
        assert lines[2] == (f"{up}           progress 83%" if in_place else "           progress 83%")
        assert lines[4] == "           progress 100%" and up not in "".join(lines[:2] + lines[3:])


def test_every_non_zero_exit_a_pod_shows_is_named_once_per_run() -> None:
    restarted = {
        "metadata": {"namespace": "ml", "name": "job-master-0", "uid": "u1"},
        "status": {
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 1,
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                    "state": {"running": {}},
                },
                {"name": "sidecar", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
            ]
        },
    }
    failed = {
        "metadata": {"namespace": "ml", "name": "job-worker-0", "uid": "u2"},
        "status": {
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 1,
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                    "state": {"terminated": {"exitCode": 3}},
                }
            ]
        },
    }
    assert failed_exits([restarted, failed]) == {
        ("u1", "pytorch", 0): "pod ml/job-master-0: container pytorch exited 137 (OOMKilled)",
        ("u2", "pytorch", 0): "pod ml/job-worker-0: container pytorch exited 137 (OOMKilled)",
        ("u2", "pytorch", 1): "pod ml/job-worker-0: container pytorch exited 3",
    }
    assert failed_exits([pod("master", "Running")]) == {}  # no container statuses yet


@pytest.mark.parametrize(
    ("api_version", "served", "refusal"),
    [
        ("kubetrain.io/v1", ("kubetrain.io",), ""),
        ("kubeflow.org/v1", ("kubetrain.io", "kubeflow.org"), ""),
        (
            "kubeflow.org/v1",
            ("kubetrain.io",),
            "kubeflow.org is not served: add it with `--api-groups kubetrain.io,kubeflow.org` "
            "(the chart's apiGroups)",
        ),
        (
            "training.kubedl.io/v1alpha1",
            ("kubetrain.io", "trainer.kubeflow.org"),
            "training.kubedl.io is not served: add it with "
            "`--api-groups kubetrain.io,trainer.kubeflow.org,training.kubedl.io` (the chart's apiGroups)",
        ),
    ],
)
def test_a_job_of_a_group_not_served_names_the_flag_that_serves_it(
    api_version: str, served: tuple[str, ...], refusal: str
) -> None:
    assert unserved_group({"apiVersion": api_version, "kind": "TFJob"}, served) == refusal


async def test_a_job_of_a_group_not_served_is_refused_before_any_call() -> None:
    out = io.StringIO()
    stack = cast(DevStack, SimpleNamespace(options=SimpleNamespace(api_groups=("kubetrain.io",))))
    job = {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "metadata": {"name": "mnist"}}
    assert await apply_manifest(stack, job, out) is None
    assert out.getvalue() == (
        "TFJob default/mnist refused: training.kubedl.io is not served: add it with "
        "`--api-groups kubetrain.io,training.kubedl.io` (the chart's apiGroups)\n"
    )


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["--example", "nope"], 2, '--example "nope": no such example (valid: '),  # a bad flag value
        (["-f", "{missing}"], 1, "{missing}: cannot read: no such file"),  # as validate and render
        (["-f", "{dir}"], 1, "{dir}: cannot read: is a directory"),
        (["-f", "{binary}"], 1, "{binary}: cannot read: not UTF-8 text"),
    ],
)
def test_dev_input_errors_are_one_line_with_validates_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, said: str
) -> None:
    binary = tmp_path / "job.bin"
    binary.write_bytes(b"\xff\xfe\x00kind")
    names = {"missing": str(tmp_path / "nope.yaml"), "dir": str(tmp_path), "binary": str(binary)}
    assert cli.main(["dev", *(a.format(**names) for a in argv)]) == code
    err = capsys.readouterr().err
    assert err.startswith("kubetrain dev: " + said.format(**names)) and len(err.splitlines()) == 1


def test_why_pods_do_not_start_is_the_conditions_message() -> None:
    message = (
        "PyTorchJob big: 1 container(s) of its pods cannot start: big-master-0/pytorch ImagePullBackOff."
    )
    waiting = {
        "status": {
            "conditions": [
                {"type": "Created", "status": "True"},
                {
                    "type": "PodsNotStarting",
                    "status": "True",
                    "reason": "PodsNotStarting",
                    "message": message,
                },
            ]
        }
    }
    assert pods_not_starting(waiting) == message
    started = copy.deepcopy(waiting)
    started["status"]["conditions"][1]["status"] = "False"
    assert pods_not_starting(started) == "" and pods_not_starting({}) == ""
