"""devcluster publishes the API server's CA as ConfigMap kube-root-ca.crt in every namespace, as
kube-controller-manager's root-ca-cert-publisher does: created with the namespace, re-created
when deleted, its data and description put back when edited, none in a terminating namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.client import RawApi

DESCRIPTION = "kubernetes.io/description"


@pytest.fixture
async def raw(devcluster: DevCluster) -> AsyncIterator[RawApi]:
    api = await RawApi.from_kubeconfig(devcluster.kubeconfig_path, "root-ca-test")
    yield api
    await api.close()


def ca_file(devcluster: DevCluster) -> str:
    return Path(devcluster.ca_path).read_text()  # what clients verify the API server with


def root_ca(devcluster: DevCluster, namespace: str) -> dict[str, object] | None:
    return devcluster.get_object("configmaps", namespace, "kube-root-ca.crt")


async def test_every_namespace_gets_the_api_servers_ca(devcluster: DevCluster, raw: RawApi) -> None:
    await devcluster.settle()
    ca = devcluster.ca_pem
    assert ca == ca_file(devcluster) and "BEGIN CERTIFICATE" in ca
    for namespace in ("default", "kube-system"):  # there before the CA was known
        cm = root_ca(devcluster, namespace)
        assert cm is not None and cm["data"] == {"ca.crt": ca}
    await raw.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "team-a"}})
    await devcluster.settle()
    _, cm = await raw.request("GET", "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt")
    assert cm["data"] == {"ca.crt": ca}
    assert "kube-apiserver" in cm["metadata"]["annotations"][DESCRIPTION]


async def test_a_deleted_or_edited_root_ca_comes_back(devcluster: DevCluster, raw: RawApi) -> None:
    await raw.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "team-b"}})
    await devcluster.settle()
    path = "/api/v1/namespaces/team-b/configmaps/kube-root-ca.crt"
    _, first = await raw.request("GET", path)
    await raw.request("DELETE", path)
    await devcluster.settle()
    _, again = await raw.request("GET", path)
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert again["data"] == first["data"]
    edited = {**again, "data": {"ca.crt": "mine"}, "metadata": {**again["metadata"], "annotations": {}}}
    assert (await raw.request("PUT", path, body=edited))[0] == 200
    await devcluster.settle()
    _, restored = await raw.request("GET", path)
    assert restored["data"] == first["data"]
    assert restored["metadata"]["annotations"][DESCRIPTION] == first["metadata"]["annotations"][DESCRIPTION]


async def test_a_terminating_namespace_gets_none_and_goes_away(devcluster: DevCluster, raw: RawApi) -> None:
    await raw.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "team-c"}})
    await devcluster.settle()
    assert root_ca(devcluster, "team-c") is not None
    await raw.request("DELETE", "/api/v1/namespaces/team-c")
    await devcluster.settle()
    assert root_ca(devcluster, "team-c") is None
    assert (await raw.request("GET", "/api/v1/namespaces/team-c"))[0] == 404


async def test_a_cluster_without_tls_has_no_ca_to_publish(tmp_path: Path) -> None:
    async with DevCluster(workdir=str(tmp_path), tls=False) as cluster:
        await cluster.settle()
        assert root_ca(cluster, "default") is None
