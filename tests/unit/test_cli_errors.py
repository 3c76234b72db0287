"""Every `kubetrain` error is one line naming what to fix and a non-zero exit, never a traceback:
the kubeconfig (missing, a directory, not YAML, not a mapping, no current-context), bad flags and
flag values, an unknown command, an unexpected failure."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from kubetrain import cli
from kubetrain.commands import crds
from kubetrain.kube.errors import KubeconfigError
from kubetrain.kube.kubeconfig import load_kubeconfig
from kubetrain.kube.transport import Configuration

UNREACHABLE = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
"""


def test_controller_with_a_missing_kubeconfig_prints_one_line_and_exits_1() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetrain.cli",
            "controller",
            "--kubeconfig",
            "/nonexistent",
            "--metrics-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    problems = [line for line in done.stderr.splitlines() if " INFO " not in line]
    assert len(problems) == 1, done.stderr
    assert "cannot start the controller: kubeconfig /nonexistent: no such file" in problems[0]
    assert "--kubeconfig" in problems[0].split("no such file", 1)[1]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "is a directory, not a kubeconfig file"),
        ("clusters: [1\n", "not valid YAML: line 2, column 1: expected ',' or ']'"),
        ("just text\n", "not a kubeconfig (a YAML mapping with clusters, contexts and users)"),
        ("apiVersion: v1\nkind: Config\nclusters: []\n", "sets no current-context"),
        (
            UNREACHABLE.replace("contexts: [{name: c,", "contexts: [{name: other,") + "current-context: c\n",
            "Expected object with name c in",
        ),
        ("current-context: c\nclusters: oops\n", "not a usable kubeconfig"),
    ],
)
async def test_a_kubeconfig_that_cannot_be_used_is_one_line_naming_the_file(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "kubeconfig"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    with pytest.raises(KubeconfigError) as err:
        await load_kubeconfig(str(path), None, Configuration())
    message = str(err.value)
    assert message.startswith(f"kubeconfig {path}: ")
    assert problem in message
    assert "\n" not in message


async def test_an_unknown_context_names_it(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(UNREACHABLE + "current-context: c\n")
    with pytest.raises(KubeconfigError) as err:
        await load_kubeconfig(str(path), "nope", Configuration())
    assert str(err.value).startswith(f"kubeconfig {path}: not a usable kubeconfig: ")
    assert "Expected object with name nope in" in str(err.value)


@pytest.mark.parametrize("command", ["controller", "webhook", "run"])
def test_the_services_report_a_bad_kubeconfig_in_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, command: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("just text\n")
    extra = (
        ["--training-policies", "--webhook-port", "0", "--cert-dir", str(tmp_path)]
        if command == "webhook"
        else []
    )
    with caplog.at_level(logging.INFO):
        code = cli.main([command, "--kubeconfig", str(path), "--metrics-port", "0", *extra])
    assert code == 1
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1
    line = errors[0].getMessage()
    assert f"kubeconfig {path}: not a kubeconfig" in line and "--kubeconfig" in line
    assert errors[0].exc_info is None


def test_a_kubeconfig_without_a_current_context_says_only_how_to_set_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(UNREACHABLE)  # contexts, but no current-context
    with caplog.at_level(logging.INFO):
        assert cli.main(["controller", "--kubeconfig", str(path), "--metrics-port", "0"]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [
        f"cannot start the controller: kubeconfig {path}: sets no current-context "
        "(set one with `kubectl config use-context NAME`)"
    ]


def test_a_bad_flag_value_is_one_line_with_where_the_help_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["controller", "--qps", "fast"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "kubetrain controller: error: argument --qps: invalid float value: 'fast' "
        "(see `kubetrain controller --help`)\n"
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["nosuch"], "argument COMMAND: invalid choice: 'nosuch'"),
        (["controller", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["controller", "--workers", "0"], 'argument --workers: "0" must be at least 1'),
    ],
)
def test_every_parse_error_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and said in lines[0] and "--help" in lines[0]


@pytest.mark.parametrize("command", ["dev", "validate", "render"])
def test_an_unknown_flag_of_a_command_points_at_that_commands_help(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = [command, "--no-such-flag"] + (["job.yaml"] if command in ("validate", "render") else [])
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"kubetrain {command}: error: unrecognized arguments: --no-such-flag "
        f"(see `kubetrain {command} --help`)\n"
    )


def test_an_unexpected_failure_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(crds, "run", broken)  # add_parser binds `run` when the parser is built
    assert cli.main(["crds"]) == 1
    assert capsys.readouterr().err == "kubetrain crds: error: the disk is on fire\n"
