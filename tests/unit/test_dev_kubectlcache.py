"""`kubetrain dev` removes kubectl's cached discovery of an earlier cluster on its address."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.dev.kubectlcache import discovery_cache_dir, forget_discovery


@pytest.mark.parametrize(
    ("server", "env", "expected"),
    [
        ("https://127.0.0.1:43993", {}, "/home/u/.kube/cache/discovery/127.0.0.1_43993"),
        ("http://localhost:8080", {"KUBECACHEDIR": "/c"}, "/c/discovery/localhost_8080"),
        ("https://[::1]:6443/prefix", {}, "/home/u/.kube/cache/discovery/___1__6443/prefix"),
    ],
)
def test_the_directory_is_the_one_kubectl_computes(server: str, env: dict[str, str], expected: str) -> None:
    assert discovery_cache_dir(server, env, "/home/u") == Path(expected)


def test_only_the_servers_own_discovery_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECACHEDIR", str(tmp_path))
    stale = tmp_path / "discovery" / "127.0.0.1_43993" / "kubeflow.org" / "v1"
    stale.mkdir(parents=True)
    (stale / "serverresources.json").write_text("{}")
    other = tmp_path / "discovery" / "127.0.0.1_43994"
    other.mkdir()
    http = tmp_path / "http"
    http.mkdir()
    forget_discovery("https://127.0.0.1:43993")
    assert not (tmp_path / "discovery" / "127.0.0.1_43993").exists()
    assert other.is_dir() and http.is_dir()  # other servers' discovery and the HTTP cache stay
    forget_discovery("https://127.0.0.1:43993")  # nothing cached: nothing to do
