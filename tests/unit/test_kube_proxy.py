"""KubeClient looks up the proxy from the environment once, honouring NO_PROXY."""

from __future__ import annotations

import pytest

from kubetrain.kube.transport import environment_proxy


@pytest.fixture(autouse=True)
def _clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_no_proxy_configured_means_direct() -> None:
    assert environment_proxy("https://10.0.0.1:6443") is None


def test_https_proxy_is_used_for_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert environment_proxy("https://api.example:6443") == "http://proxy.example:3128"


def test_no_proxy_bypasses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "api.example,.svc")
    assert environment_proxy("https://api.example:6443") is None
    assert environment_proxy("https://kubernetes.default.svc:443") is None
