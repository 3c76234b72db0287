"""The one devcluster fixture every tier shares.

- `devcluster`: a started `kubetrain.devcluster.DevCluster` (HTTPS, generated CA, bearer token)
  in a temporary workdir, stopped after the test. A module or directory changes how it is
  started by overriding `devcluster_options` (keyword arguments of `DevCluster`, e.g.
  `{"authorization": "RBAC"}` or `{"watch_window": 100}`).
- `kubeconfig_path`: the kubeconfig the clients below use; devcluster's by default, overridden
  where tests run against another cluster (tests/e2e).
- `api`: a `kubernetes_asyncio.client.ApiClient` configured from `kubeconfig_path`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from kubetrain.devcluster import DevCluster

# Tests run the commands in this process (cli.main): their garbage-collector freeze policy
# (kubetrain.serving.gcfreeze) would freeze the test process's objects, so cycles a test drops
# would outlive it. Off here and in the processes tests start; tests of the policy inject it.
os.environ.setdefault("KUBETRAIN_GC_FREEZE", "off")


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {}


@pytest.fixture
async def devcluster(
    tmp_path_factory: pytest.TempPathFactory, devcluster_options: dict[str, Any]
) -> AsyncIterator[DevCluster]:
    cluster = DevCluster(workdir=str(tmp_path_factory.mktemp("devcluster")), **devcluster_options)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@pytest.fixture
def kubeconfig_path(devcluster: DevCluster) -> str:
    return devcluster.kubeconfig_path


@pytest.fixture
async def api(kubeconfig_path: str) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig_path, client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        yield api_client
