"""The flags of the training-progress endpoint: `--status-server-process` hands the serving
settings to the `kubetrain status-server` child unchanged, and the child refuses to start
without what it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.cli import build_parser, main
from kubetrain.commands._progress import child_argv


def test_the_child_gets_the_parents_serving_settings() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--kubeconfig=/etc/kube/config",
            "--status-server-port=10443",
            "--status-server-interval=2.5",
            "--status-server-process",
            "--api-groups=kubetrain.io,trainer.kubeflow.org",
            "--namespaces=team-a,team-b",
            "--qps=40",
            "--burst=80",
            "--log-level=debug",
        ]
    )
    argv = child_argv(args, Path("/certs"))
    assert argv[1:4] == ["-m", "kubetrain.cli", "status-server"]
    child = build_parser().parse_args(argv[3:])
    assert (child.status_server_port, child.status_server_interval) == (10443, 2.5)
    assert child.status_server_cert_dir == "/certs"
    assert child.api_groups == ["kubetrain.io", "trainer.kubeflow.org"]
    assert child.namespaces == ["team-a", "team-b"]
    assert (child.qps, child.burst, child.kubeconfig) == (40.0, 80, "/etc/kube/config")
    assert (child.metrics_bind_address, child.metrics_port, child.log_level) == ("127.0.0.1", 0, "debug")
    # what pods are told is the parent's business: the child has no such flags
    assert not hasattr(child, "status_server_url") and not hasattr(child, "status_server_process")


def test_all_namespaces_stay_all_namespaces() -> None:
    args = build_parser().parse_args(["controller", "--status-server-port=10443"])
    child = build_parser().parse_args(child_argv(args, Path("/certs"))[3:])
    assert child.namespaces == [] and child.api_groups == ["kubetrain.io"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["status-server", "--status-server-port=10443"], "--status-server-cert-dir"),
        (["status-server", "--status-server-cert-dir=/certs"], "--status-server-port"),
    ],
)
def test_the_command_names_the_missing_flag(
    argv: list[str], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(argv) == 2
    assert named in caplog.text
