"""Client-side apply's `kubectl.kubernetes.io/last-applied-configuration` under server-side apply
by the `kubectl` field manager (pure), as k8s.io/apimachinery's managedfields/internal
`lastAppliedManager` and `lastAppliedUpdater` handle it.

```python
allowed = allowed_conflicts(live, "v1", t)   # FieldSet a kubectl apply may take over, or None
merged = synced(merged, config)              # the annotation kept in step with the configuration
```

- `allowed_conflicts` (`lastAppliedManager`): when an apply by `kubectl` conflicts, the fields of
  the live object's annotation whose value the live object still has may be taken over: the
  apply goes on as if forced when every conflict is one of them, and fails with the others
  otherwise. An annotation that is empty, no JSON object, without a `kind`, or of another
  apiVersion than the request's allows nothing.
- `synced` (`lastAppliedUpdater`): after an apply by `kubectl`, an object that carries the
  annotation gets the applied configuration in it (without the annotation itself), as Go's
  `json.Encoder` writes it (keys sorted, `<>&` escaped, a trailing newline); when that makes the
  annotations larger than 256 KiB (`ValidateAnnotationsSize`), the annotation is dropped.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api.labels import annotations_of
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_json
from kubetrain.devcluster.apiserver.kinds.fieldpaths import FieldSet
from kubetrain.devcluster.apiserver.kinds.objectmeta import TOTAL_ANNOTATION_SIZE_LIMIT, annotations_size
from kubetrain.devcluster.apiserver.kinds.smdschema import Type
from kubetrain.devcluster.apiserver.kinds.typedvalue import compare, to_field_set

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
UPGRADING_MANAGER = "kubectl"


def allowed_conflicts(live: Mapping[str, Any], api_version: str, t: Type) -> FieldSet | None:
    """`allowedConflictsFromLastApplied`: the annotation's fields the live object has unchanged."""
    text = annotations_of(live).get(LAST_APPLIED)
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or not last.get("kind") or last.get("apiVersion") != api_version:
        return None
    added, modified, removed = compare(last, live, t)
    return to_field_set(last, t) - modified - added - removed


def synced(merged: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """`lastAppliedUpdater.Apply` after a successful apply by `kubectl`."""
    if not annotations_of(merged).get(LAST_APPLIED):
        return merged
    value = copy.deepcopy(config)
    md = value.get("metadata")
    if isinstance(md, dict) and isinstance(md.get("annotations"), dict):
        md["annotations"].pop(LAST_APPLIED, None)
    out = dict(merged)
    out["metadata"] = dict(out["metadata"])
    annotations = {**annotations_of(merged), LAST_APPLIED: go_json(value) + "\n"}
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT:
        del annotations[LAST_APPLIED]
    if annotations:
        out["metadata"]["annotations"] = annotations
    else:
        out["metadata"].pop("annotations", None)
    return out
