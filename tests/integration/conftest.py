"""Fixtures for the integration tier, on top of tests/conftest.py (`devcluster`, `api`).

- `kube`: a `kubetrain.kube.client.KubeClient` on the devcluster (no rate limit).
- `env`: one started DevStack (devcluster, CRDs, webhooks, controller, pod simulator) and a
  `Harness` on it, shared by the tests of a module; a module that needs other DevStack options
  overrides `env` with its own `open_stack(...)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster import DevCluster
from kubetrain.kube.client import KubeClient

from .controller_support import Harness, open_stack


@pytest.fixture
async def kube(devcluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack():
        yield pair
