"""Fixtures for the integration tier: a started devcluster and a kubernetes-asyncio client for it.

- `devcluster`: a started `kubetrain.devcluster.DevCluster` (HTTPS, generated CA, bearer token),
  stopped after the test.
- `api`: a `kubernetes_asyncio.client.ApiClient` configured from `devcluster.kubeconfig_path`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client, config

from kubetrain.devcluster import DevCluster


@pytest.fixture
async def devcluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevCluster]:
    cluster = DevCluster(workdir=str(tmp_path_factory.mktemp("devcluster")))
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@pytest.fixture
async def api(devcluster: DevCluster) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=devcluster.kubeconfig_path, client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        yield api_client
