"""A TrainJob's part of training progress — pure: what its pods get to report (progressenv.py,
with Trainer 2.3's names). Its stall detection is every job's rule (`stall.check_attempt`, timed
from the attempt's start in the run's record), acted on by the per-group active part
(`groupactive.py`).

Injection: with a status-server URL, every container and init container of every pod a TrainJob
creates (node, launcher, dataset/model initializers) gets Trainer's three env vars and the
projected volume; the CA is in the ConfigMap `<tj>-tls-config` (Trainer's name), created before
the first pod and updated when the CA changes. `kubetrain.io/progress-reporting: disabled` opts
a TrainJob out, as any job.

A TrainJob declares a progress deadline with the annotation
`kubetrain.io/progress-deadline-seconds` (Trainer's schema has no field for it; its shape's run
policy carries it): when a pod of the current attempt is Running and the last report received in
this attempt is older than the deadline, a Warning event `ProgressDeadlineExceeded`, then a
whole-gang restart (JobSet's RestartJobSet) counted against the runtime's
`failurePolicy.maxRestarts` while it leaves room, else Failed. No `Stalled` condition: Trainer's
TrainJobs carry only `Suspended`, `Complete` and `Failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubetrain.operator.draft import Plan
from kubetrain.operator.pods import controlled_by
from kubetrain.operator.progressenv import (
    JobRef,
    ProgressInjection,
    config_map,
    config_map_name,
    enabled,
    inject,
)

Obj = dict[str, Any]


def injection_for(
    trainjob: Mapping[str, Any], injection: ProgressInjection | None
) -> ProgressInjection | None:
    """The injection this TrainJob's pods get (None: none configured, or opted out)."""
    return injection if enabled(JobRef.of(trainjob), injection) else None


def inject_pod(trainjob: Mapping[str, Any], injection: ProgressInjection | None, pod: Obj) -> None:
    """Add the env, token volume and mounts to a new pod of the TrainJob (none when opted out)."""
    ref = JobRef.of(trainjob)
    if injection is not None and enabled(ref, injection):
        inject(ref, injection, pod["spec"])


def ca_children(
    trainjob: Mapping[str, Any],
    injection: ProgressInjection | None,
    observed: Sequence[Mapping[str, Any]],
    plan: Plan,
    own: Callable[[Mapping[str, Any]], Obj],
) -> None:
    """Add the CA ConfigMap's create or update to `plan` (its children go before its pods);
    `own`: the object labelled and owned by the TrainJob."""
    wanted = injection_for(trainjob, injection)
    if wanted is None:
        return
    owned = [cm for cm in observed if controlled_by(cm, trainjob)]
    create, update = ca_config_map(trainjob, wanted, owned)
    if create is not None:
        plan.create_children.append(own(create))
    if update is not None:
        plan.update_children.append(update)


def ca_config_map(
    trainjob: Mapping[str, Any], injection: ProgressInjection, observed: Sequence[Mapping[str, Any]]
) -> tuple[Obj | None, Obj | None]:
    """(to create, to update) of the CA ConfigMap, given the TrainJob's observed ConfigMaps;
    the object to create has no owner or labels yet (the caller adds the TrainJob's)."""
    ref = JobRef.of(trainjob)
    wanted = config_map(ref, injection)
    name = config_map_name(ref)
    current = next((cm for cm in observed if (cm.get("metadata") or {}).get("name") == name), None)
    if current is None:
        return wanted, None
    if current.get("data") != wanted["data"]:
        return None, {**current, "data": wanted["data"]}
    return None, None
