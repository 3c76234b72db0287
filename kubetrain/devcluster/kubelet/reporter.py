"""Simulated training code that reports its progress, as a real training script does with the
Kubeflow SDK's `update_trainjob_status` (or examples/progress_report.py).

A simulated pod runs no code, so the kubelet acts as the pod's rank-0 process: it reads the
pod's own `KUBEFLOW_TRAINER_SERVER_URL`, `KUBEFLOW_TRAINER_SERVER_TOKEN` and
`KUBEFLOW_TRAINER_SERVER_CA_CERT` from the first container's env, reads the token and the CA
from the files the kubelet projected there (the pod-bound token the TokenRequest API issued for
the URL's audience), and POSTs the SDK's wire format over HTTPS, verifying the server with that
CA — the real path, end to end:

    {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 9,
                       "metrics": [{"name": "loss", "value": "0.7712"}, ...],
                       "lastUpdatedTime": "2026-11-25T21:00:00+00:00"}}

Progress rises linearly with the seconds the containers have run out of their
`sim.kubetrain.io/run-seconds` (or the kubelet's default); `loss` decreases with it; without a
known run time only the metrics are sent. One report when the containers start and then one per
interval (the SDK's throttle, 5 s; the simulator's `report_interval` changes it for tests).

Who reports (`wants_report`): a pod annotated `sim.kubetrain.io/report-progress: "true"`, or any
pod when the simulator runs with `report_progress=True` (then `"false"` opts a pod out) — and
only rank 0: a pod whose replica index (`kubetrain.io/replica-index`, Kubeflow's and KubeDL's
labels, or a Job's completion index / JobSet's job index) and literal `RANK` / `PET_NODE_RANK`
env are absent or 0, like a training script that reports from one process per job. (A kind
without a global rank in the env, e.g. a TFJob's chief and worker 0, reports from index 0 of
every annotated replica type: annotate one type's template.) A pod without the URL in its env reports nothing.

A refused report (401/403/404/409/413/422) or an unreachable server is logged at debug and the
next one is tried at the next interval, as the SDK's caller would go on training.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp

from kubetrain.devcluster.kubelet.behaviour import REPORT_PROGRESS

log = logging.getLogger(__name__)

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
SDK_INTERVAL_SECONDS = 5.0  # the Kubeflow SDK sends at most one report per 5 s per process

# Labels and annotations that number a pod within its job: any non-zero one means "not rank 0".
INDEX_KEYS = (
    "kubetrain.io/replica-index",
    "training.kubeflow.org/replica-index",
    "replica-index",  # KubeDL
    "batch.kubernetes.io/job-completion-index",
    "jobset.sigs.k8s.io/job-index",
)

# Env a framework gives each process (PyTorch's RANK, torchrun's PET_NODE_RANK): non-zero → not rank 0.
RANK_ENV = ("RANK", "PET_NODE_RANK")

INITIAL_LOSS = 2.3  # ~ln(10): a 10-class classifier at chance
FINAL_LOSS = 0.05


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str
    ca_pem: str


def wants_report(pod: dict[str, Any], by_default: bool) -> bool:
    """Whether this pod's (simulated) training code reports its progress."""
    meta = pod.get("metadata") or {}
    flag = str((meta.get("annotations") or {}).get(REPORT_PROGRESS, "")).strip().lower()
    if flag not in ("true", "") or (flag == "" and not by_default):
        return False
    for source in (meta.get("labels") or {}, meta.get("annotations") or {}):
        for key in INDEX_KEYS:
            if key in source and str(source[key]) != "0":
                return False
    env = container_env(pod)
    if any(env.get(name, "0") != "0" for name in RANK_ENV):
        return False
    return bool(env.get(ENV_URL))


def container_env(pod: dict[str, Any]) -> dict[str, str]:
    """The literal env of the pod's first container (what the training process sees)."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    env = containers[0].get("env") or []
    return {str(e.get("name")): str(e["value"]) for e in env if isinstance(e, dict) and "value" in e}


def endpoint(pod: dict[str, Any], files: dict[str, str]) -> Endpoint | None:
    """URL, token and CA as the process reads them: the env names the files (None: any missing)."""
    env = container_env(pod)
    url, token_path, ca_path = env.get(ENV_URL), env.get(ENV_TOKEN), env.get(ENV_CA_CERT)
    if not url or not token_path or token_path not in files:
        return None
    return Endpoint(url, files[token_path].strip(), files.get(ca_path or "", ""))


def loss_at(fraction: float) -> float:
    """A plausible training loss: exponential decay from INITIAL_LOSS towards FINAL_LOSS."""
    return FINAL_LOSS + (INITIAL_LOSS - FINAL_LOSS) * math.exp(-4.0 * min(max(fraction, 0.0), 1.0))


def report_body(elapsed: float, run_seconds: float | None, now: datetime) -> dict[str, Any]:
    """The SDK's request body after `elapsed` seconds of a run planned to last `run_seconds`."""
    status: dict[str, Any] = {}
    if run_seconds is not None and run_seconds > 0:
        fraction = min(max(elapsed / run_seconds, 0.0), 1.0)
        status["progressPercentage"] = int(100 * fraction)
        status["estimatedRemainingSeconds"] = max(0, math.ceil(run_seconds - elapsed))
    else:
        fraction = 1.0 - math.exp(-max(elapsed, 0.0) / 600.0)  # no end known: loss still falls
    status["metrics"] = [
        {"name": "loss", "value": f"{loss_at(fraction):.4f}"},
        {"name": "step", "value": str(int(max(elapsed, 0.0) * 10))},
    ]
    status["lastUpdatedTime"] = now.isoformat()
    return {"trainerStatus": status}


class Reporter:
    """The HTTPS client of the reporting pods (one connection pool for the simulator)."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    def _context(self, ca_pem: str) -> ssl.SSLContext:
        ctx = self._contexts.get(ca_pem)
        if ctx is None:
            ctx = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
            self._contexts = {ca_pem: ctx}  # the CA rarely changes: keep only the latest
        return ctx

    async def post(self, target: Endpoint, body: dict[str, Any]) -> int:
        """POST the report; the HTTP status (0 when the server could not be reached)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"Authorization": f"Bearer {target.token}", "Content-Type": "application/json"}
        try:
            async with self._session.post(
                target.url, data=json.dumps(body), headers=headers, ssl=self._context(target.ca_pem)
            ) as resp:
                await resp.read()
                return resp.status
        except (aiohttp.ClientError, TimeoutError, OSError, ssl.SSLError) as exc:
            log.debug("progress report to %s failed: %s", target.url, exc)
            return 0

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
