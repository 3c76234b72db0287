"""A TrainJob's restarts as the operator records them, read by the dashboard's informer of the
runtime snapshot ConfigMaps — pure.

The operator keeps a TrainJob's run in its snapshot ConfigMap `<tj>-runtime-snapshot` (labelled
`kubetrain.io/job-kind: TrainJob`, controlled by the TrainJob): `data.state` holds `restarts`
(every whole-gang restart) and, under a `RestartJob` rule, `jobRestarts` (per replicated job,
one count per Job: `{"worker": [0, 2, 0]}`). It outlives the pods (between attempts, once a
finished TrainJob's pods are removed), so the Restarts column reads it where the pods' labels
are gone. The informer keeps of each ConfigMap only its metadata and those counts
(`slim_snapshot`), not the runtime it snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api.labels import LABEL_JOB_KIND
from kubetrain.api.trainer import constants as c
from kubetrain.dashboard.views.podhistory import as_int, owner_uid
from kubetrain.dashboard.views.trainjob import RestartTally
from kubetrain.jobs.trainjob.children import STATE_KEY, job_name, read_state, snapshot_name

Obj = dict[str, Any]
SELECTOR = f"{LABEL_JOB_KIND}={c.TRAINJOB}"  # the TrainJobs' children (the snapshot among them)
RESTART_FIELDS = ("restarts", "jobRestarts")  # what of `data.state` the dashboard keeps


def _state(config_map: Mapping[str, Any]) -> Mapping[str, Any]:
    return read_state(config_map) or {}


def _owner(config_map: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The controlling TrainJob's ownerReference, when the ConfigMap is one's snapshot."""
    meta = config_map.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == c.TRAINJOB:
            return ref if str(meta.get("name") or "") == snapshot_name(str(ref.get("name") or "")) else None
    return None


def slim_snapshot(config_map: Obj) -> Obj:
    """What the dashboard keeps of a ConfigMap (an informer transform): metadata without
    managedFields and annotations, and of a snapshot's `data.state` only its restart counts."""
    meta = config_map.get("metadata") or {}
    config_map["metadata"] = {k: v for k, v in meta.items() if k not in ("managedFields", "annotations")}
    state = _state(config_map) if _owner(config_map) is not None else {}
    kept = {k: state[k] for k in RESTART_FIELDS if k in state}
    config_map["data"] = {STATE_KEY: json.dumps(kept, sort_keys=True)} if kept else {}
    config_map.pop("binaryData", None)
    return config_map


def _count(value: object) -> int:
    n = as_int(value) if not isinstance(value, bool) else None
    return n if n is not None and n > 0 else 0


def recorded(config_map: Mapping[str, Any]) -> tuple[str, RestartTally] | None:
    """(the TrainJob's uid, its restarts as recorded), or None for a ConfigMap that is no
    TrainJob's snapshot. Each Job's count is keyed by its name, `<tj>-<replicated job>-<index>`
    (its pods' `batch.kubernetes.io/job-name`), as `RestartTally` counts them from pods; a count
    that is not a non-negative integer reads as 0."""
    ref = _owner(config_map)
    uid = owner_uid(config_map)
    if ref is None or not uid:
        return None
    state = _state(config_map)
    tally = RestartTally(gang=_count(state.get("restarts")))
    jobs = state.get("jobRestarts")
    for group, counts in jobs.items() if isinstance(jobs, Mapping) else ():
        for index, n in enumerate(counts if isinstance(counts, list) else ()):
            if _count(n):
                tally.jobs[job_name(str(ref.get("name") or ""), str(group), index)] = _count(n)
    return uid, tally
