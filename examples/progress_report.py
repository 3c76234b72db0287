"""Report training progress to kubetrain (or Kubeflow Trainer) with the Python standard library.

The same request as the Kubeflow SDK's `update_trainjob_status`, for images without the SDK.
Copy this file next to your training script and call `report(...)` from the training loop:

    from progress_report import report
    for step in range(steps):
        ...
        report(percent=100 * step // steps, eta_seconds=remaining, metrics={"loss": loss})

It reads what kubetrain puts into every pod of a job — KUBEFLOW_TRAINER_SERVER_URL,
KUBEFLOW_TRAINER_SERVER_CA_CERT, KUBEFLOW_TRAINER_SERVER_TOKEN — and never raises: outside such
a pod, or when the server cannot be reached, it returns False and training goes on. Like the SDK
it sends at most one report per 5 seconds per process (later calls inside the window return
False at once), so calling it every step is fine.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

MIN_INTERVAL_SECONDS = 5.0
MAX_METRICS = 256

_lock = threading.Lock()
_last_sent = float("-inf")


def report(
    percent: int | None = None,
    eta_seconds: int | None = None,
    metrics: dict[str, float | int | str] | None = None,
    *,
    timeout: float = 5.0,
) -> bool:
    """Send one progress report; True when the server accepted it (HTTP 200)."""
    global _last_sent
    url = os.environ.get("KUBEFLOW_TRAINER_SERVER_URL")
    token_path = os.environ.get("KUBEFLOW_TRAINER_SERVER_TOKEN")
    ca_path = os.environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT")
    if not url or not token_path:
        return False
    with _lock:
        if time.monotonic() - _last_sent < MIN_INTERVAL_SECONDS:
            return False
    status: dict[str, object] = {"lastUpdatedTime": datetime.now(timezone.utc).isoformat()}  # noqa: UP017 (Python < 3.11 images)
    if percent is not None:
        status["progressPercentage"] = max(0, min(100, int(percent)))
    if eta_seconds is not None:
        status["estimatedRemainingSeconds"] = max(0, int(eta_seconds))
    if metrics:
        items = list(metrics.items())[:MAX_METRICS]
        status["metrics"] = [{"name": str(k), "value": str(v)} for k, v in items]
    try:
        with open(token_path) as f:  # re-read every time: the kubelet rotates the token
            token = f.read().strip()
        context = ssl.create_default_context(cafile=ca_path if ca_path and os.path.exists(ca_path) else None)
        request = urllib.request.Request(
            url,
            data=json.dumps({"trainerStatus": status}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            ok = response.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return False
    if ok:
        with _lock:
            _last_sent = time.monotonic()
    return ok


if __name__ == "__main__":  # a quick check from inside a pod: python progress_report.py 42
    import sys

    print(report(percent=int(sys.argv[1]) if len(sys.argv) > 1 else None))
