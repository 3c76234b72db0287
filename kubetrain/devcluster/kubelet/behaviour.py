"""What a simulated pod's annotations ask of the kubelet, and what a kubelet does when its
containers exit — pure (see `Behaviour.from_pod`):

- `sim.kubetrain.io/run-seconds`: seconds the containers run before they exit; absent → the
  pod stays Running until a test (or the simulator's `default_run_seconds`) says otherwise.
- `sim.kubetrain.io/exit-code`: exit code of that exit (default 0).
- `sim.kubetrain.io/reason`: termination reason (default `Completed` for 0, `Error` otherwise;
  e.g. `OOMKilled`); `Evicted` makes the exit a kubelet eviction instead.
- `sim.kubetrain.io/restarts-before-exit`: at most this many in-place restarts (restartPolicy
  Always/OnFailure); the exit after that is terminal whatever the restartPolicy. Absent → the
  restartPolicy alone decides, as a kubelet does. Each restart waits out the kubelet's
  crash-loop back-off (`crashloop.py`: at once after the first exit, then 10 s doubling to 300 s,
  the container waiting in `CrashLoopBackOff`).
- `sim.kubetrain.io/start-seconds`: seconds a bound pod stays Pending before it starts (default 0).
- `sim.kubetrain.io/report-progress`: `"true"` makes the running pod's (simulated) training code
  report its progress to the URL in its `KUBEFLOW_TRAINER_SERVER_URL` env with its projected
  token and CA, as the Kubeflow SDK does — rising with the run-seconds, a falling `loss`, an ETA,
  once at start and then every 5 s; only rank 0 (replica/completion index absent or 0) reports
  (`reporter.py`). `"false"` opts a pod out when the simulator reports for every pod
  (`PodSimulator(report_progress=True)`). Off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ANNOTATION_PREFIX = "sim.kubetrain.io/"
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
REASON = ANNOTATION_PREFIX + "reason"
RESTARTS_BEFORE_EXIT = ANNOTATION_PREFIX + "restarts-before-exit"
START_SECONDS = ANNOTATION_PREFIX + "start-seconds"
REPORT_PROGRESS = ANNOTATION_PREFIX + "report-progress"


@dataclass(frozen=True)
class Behaviour:
    run_seconds: float | None = None
    exit_code: int = 0
    reason: str | None = None
    restarts_before_exit: int | None = None
    start_seconds: float = 0.0
    report_progress: bool | None = None  # the report-progress annotation (None: absent)

    @classmethod
    def from_pod(cls, pod: dict[str, Any], default_run_seconds: float | None = None) -> Behaviour:
        """The annotations of `pod`; a malformed value raises ValueError naming the annotation."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        run = _number(annotations, RUN_SECONDS)
        restarts = _number(annotations, RESTARTS_BEFORE_EXIT)
        exit_code = _number(annotations, EXIT_CODE)
        start = _number(annotations, START_SECONDS)
        if exit_code is not None and not (0 <= exit_code <= 255 and exit_code == int(exit_code)):
            raise ValueError(f"annotation {EXIT_CODE}: {exit_code} is not an exit code (0-255)")
        report = annotations.get(REPORT_PROGRESS)
        if report is not None and str(report).strip().lower() not in ("true", "false"):
            raise ValueError(f'annotation {REPORT_PROGRESS}: {report!r} is not "true" or "false"')
        return cls(
            report_progress=None if report is None else str(report).strip().lower() == "true",
            run_seconds=run if run is not None else default_run_seconds,
            exit_code=int(exit_code or 0),
            reason=annotations.get(REASON) or None,
            restarts_before_exit=int(restarts) if restarts is not None else None,
            start_seconds=start or 0.0,
        )


def _number(annotations: dict[str, str], key: str) -> float | None:
    if key not in annotations:
        return None
    try:
        value = float(annotations[key])
    except (TypeError, ValueError):
        raise ValueError(f"annotation {key}: {annotations[key]!r} is not a number") from None
    if value < 0:
        raise ValueError(f"annotation {key}: {annotations[key]!r} must not be negative")
    return value


def exit_outcome(pod: dict[str, Any], exit_code: int, restarts_so_far: int, restart_limit: int | None) -> str:
    """What a kubelet does when the containers exit: "restart" in place (after its back-off:
    `crashloop.py`), or the terminal phase. Under Always a success restarts too."""
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    limit_reached = restart_limit is not None and restarts_so_far >= restart_limit
    restarts = policy == "Always" or (policy == "OnFailure" and exit_code != 0)
    if restarts and not limit_reached:
        return "restart"
    return "Succeeded" if exit_code == 0 else "Failed"
