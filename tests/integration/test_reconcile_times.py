"""What a reconcile's duration is made of (kubetrain.operator.reconciletimes), on the running
controller: every reconcile observes its rate-limiter wait, API wait and own time with its kind,
in kubetrain_reconcile_duration_seconds' buckets, and the three add up to that histogram."""

from __future__ import annotations

import pytest

from kubetrain.serving.metrics import REGISTRY

from .controller_support import is_true, job_manifest, running_stack

PARTS = (
    "kubetrain_reconcile_rate_limiter_wait_seconds",
    "kubetrain_reconcile_api_wait_seconds",
    "kubetrain_reconcile_own_duration_seconds",
)
TOTAL = "kubetrain_reconcile_duration_seconds"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def snapshot(kind: str) -> dict[str, float]:
    out = {}
    for name in (TOTAL, *PARTS):
        out[f"{name}_count"] = sample(f"{name}_count", kind=kind)
        out[f"{name}_sum"] = sample(f"{name}_sum", kind=kind)
    return out


async def test_reconcile_parts_are_observed_and_add_up_to_the_reconcile() -> None:
    # A slow limiter (20/s, no burst): the job's writes (Service, pods, status) wait for tokens.
    async with running_stack(qps=20, burst=1) as (_, h):
        before = snapshot("PyTorchJob")
        ns = await h.namespace("parts")
        await h.create_job(job_manifest("PyTorchJob", "p", {"Master": 1, "Worker": 2}), ns)
        await h.wait_pods(ns, "p", 3)
        await h.wait_job("PyTorchJob", ns, "p", lambda j: is_true(j, "Running"), "Running")
        after = snapshot("PyTorchJob")
    delta = {k: after[k] - before[k] for k in after}
    reconciles = delta[f"{TOTAL}_count"]
    assert reconciles >= 1
    for name in PARTS:  # every reconcile observes every part, 0 included
        assert delta[f"{name}_count"] == reconciles
    parts = sum(delta[f"{name}_sum"] for name in PARTS)
    assert parts == pytest.approx(delta[f"{TOTAL}_sum"], rel=1e-6, abs=1e-9)
    assert delta["kubetrain_reconcile_rate_limiter_wait_seconds_sum"] > 0  # writes waited for tokens
    assert delta["kubetrain_reconcile_api_wait_seconds_sum"] > 0  # and were answered
    # The reconcile histogram's buckets, so the parts read against the same boundaries.
    for name in PARTS:
        assert REGISTRY.get_sample_value(f"{name}_bucket", {"kind": "PyTorchJob", "le": "0.02"}) is not None
