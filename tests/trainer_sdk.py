"""Kubeflow Trainer's SDK for the tests of every tier: its `TrainerClient` on a cluster, and
reporting progress as a training pod does. Import with `from trainer_sdk import trainer_client,
report_progress` (tests/ is on pytest's `pythonpath`); a module using it skips when the SDK (a dev
dependency) is not installed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest


async def report_progress(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], **kwargs: Any) -> bool:
    """`update_trainjob_status(**kwargs)` with the pod's progress env `env` set; whether it
    reported. The SDK throttles (one report per 5 s) and caches the token (300 s) per process:
    both are reset first, so every call reports with the token `env` points at."""
    from kubeflow.trainer.backends.kubernetes import utils

    monkeypatch.setattr(utils, "_last_update_time", 0.0)
    monkeypatch.setattr(utils, "_cached_token", None)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return bool(await asyncio.to_thread(utils.update_trainjob_status, **kwargs))


async def trainer_client(kubeconfig: str, namespace: str) -> Any:
    """The SDK's `TrainerClient` for `namespace` of the cluster `kubeconfig` points at (made in a
    worker thread: the SDK is synchronous and reads the cluster)."""
    from kubeflow.common.types import KubernetesBackendConfig
    from kubeflow.trainer import TrainerClient

    config = KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig)
    return await asyncio.to_thread(TrainerClient, config)
