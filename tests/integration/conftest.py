"""Fixtures for the integration tier, on top of tests/conftest.py (`devcluster`, `api`).

- `kube`: a `kubetrain.kube.client.KubeClient` on the devcluster (no rate limit).
- `raw`: the raw API client the simulated kubelet and gang scheduler use, on the devcluster.
- `clock`: a `FakeClock` for a pod simulator the test drives; `wall`: one for devcluster itself
  (a module passes it in `devcluster_options`).
- `env`: one started DevStack (devcluster, CRDs, webhooks, controller, pod simulator) and a
  `Harness` on it, shared by the tests of a module; a module that needs other DevStack options
  names them in a module-level `STACK_OPTIONS` dict (e.g. `{"api_groups": TRAINER_API_GROUPS}`),
  or overrides `env` with its own `open_stack(...)` when it needs more (a clock, node labels).
- `clocked_env`: the same with the pod simulator (and its node controllers) on a FakeClock,
  yielded third (`node_controllers_support.clocked_stack`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from kubetrain.dev.stack import DevStack
from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.client import RawApi
from kubetrain.kube.client import KubeClient
from kubetrain.kube.clock import FakeClock

from .controller_support import Harness, open_stack
from .node_controllers_support import clocked_stack


@pytest.fixture
async def kube(devcluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=0) as client:
        yield client


@pytest.fixture
async def raw(devcluster: DevCluster) -> AsyncIterator[RawApi]:
    api = await RawApi.from_kubeconfig(devcluster.kubeconfig_path, "integration-test")
    yield api
    await api.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def wall() -> FakeClock:
    """devcluster's own clock, for a module whose `devcluster_options` passes `{"clock": wall.now}`:
    creation and transition times, token and Event expiry."""
    return FakeClock()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(request: pytest.FixtureRequest) -> AsyncIterator[tuple[DevStack, Harness]]:
    async for pair in open_stack(**getattr(request.module, "STACK_OPTIONS", {})):
        yield pair


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clocked_env() -> AsyncIterator[tuple[DevStack, Harness, FakeClock]]:
    async for started in clocked_stack():
        yield started
