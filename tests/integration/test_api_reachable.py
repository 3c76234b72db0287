"""A starting controller or webhook waits a bounded time for the API server, then exits with one
line: unreachable (after `within` seconds), or credentials refused (401, at once)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from serving import free_port

from kubetrain import cli
from kubetrain.devcluster import DevCluster
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock
from kubetrain.kube.errors import ApiUnreachable
from kubetrain.kube.transport import ApiClient, Configuration


def closed_port() -> int:
    return free_port()  # nothing listens on it


async def test_a_running_api_server_is_reachable(kube: KubeClient) -> None:
    await kube.wait_reachable(within=5)


async def test_refused_credentials_fail_at_once(devcluster: DevCluster, tmp_path: Path) -> None:
    path = devcluster.write_token_kubeconfig(str(tmp_path / "kc"), "not-a-token")
    async with await KubeClient.connect(path) as client:
        with pytest.raises(ApiUnreachable) as err:
            await client.wait_reachable(within=30)
    assert "401 Unauthorized" in str(err.value) and "check the kubeconfig's user" in str(err.value)


async def test_an_unreachable_api_server_is_retried_then_reported(caplog: pytest.LogCaptureFixture) -> None:
    configuration = Configuration()
    configuration.host = f"https://127.0.0.1:{closed_port()}"
    clock = FakeClock()
    client = KubeClient(ApiClient(configuration=configuration), clock=clock, owns_api_client=True)
    try:
        waiting = asyncio.create_task(client.wait_reachable(within=30, retry=1))
        attempts = 0
        while not waiting.done():
            await asyncio.sleep(0.01)  # the refused connection is real I/O
            if clock.sleepers:
                attempts += 1
                await clock.advance(1)
        with pytest.raises(ApiUnreachable) as err:
            await waiting
    finally:
        await client.close()
    assert attempts == 30  # once a second for 30 s
    message = str(err.value)
    assert message.startswith(f"cannot reach the API server {configuration.host} within 30 s (")
    assert message.endswith("check the server address in the kubeconfig and that the cluster is up")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "does not answer yet" in warnings[0].getMessage()


def test_the_controller_exits_with_one_line_when_the_api_server_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    async def unreachable(self: KubeClient, within: float = 30.0, retry: float = 1.0) -> None:
        raise ApiUnreachable(f"cannot reach the API server {self.host} within 30 s (refused)")

    monkeypatch.setattr(KubeClient, "wait_reachable", unreachable)
    path = tmp_path / "kc"
    path.write_text(
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\ncurrent-context: c\n"
    )
    assert cli.main(["controller", "--kubeconfig", str(path), "--metrics-port", "0"]) == 1
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in errors] == [
        "cannot start the controller: cannot reach the API server https://127.0.0.1:1 within 30 s (refused)"
    ]
