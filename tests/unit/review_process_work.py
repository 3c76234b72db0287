"""Work functions for review-process tests: importable by name in a spawned worker."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kubetrain.webhook.decider import Decider
from kubetrain.webhook.processes import Answer, answer_in_worker

GATE_LIMIT = 30.0  # a worker the test forgot to release still ends


def gated(gate: str, pids: str, body: bytes, webhook: str, decider: Decider) -> Answer:
    """Record this process's pid, then decide only once the file `gate` exists (a decision that
    takes as long as the test wants, without the test sleeping)."""
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + GATE_LIMIT
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return answer_in_worker(body, webhook, decider)
