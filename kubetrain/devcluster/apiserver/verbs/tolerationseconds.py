"""kube-apiserver's DefaultTolerationSeconds admission plugin (plugin/pkg/admission/
defaulttolerationseconds admission.go `Plugin.Admit`), mutating, on pod create and update (not
on subresources), after Priority and before the webhooks as the default plugin order runs them.

A pod gets `{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,
tolerationSeconds: 300}` unless one of its tolerations already covers that taint's NoExecute
effect — its key is that taint's or empty, and its effect NoExecute or empty (whatever its
operator, value or tolerationSeconds: the plugin looks at nothing else) — and the same for
`node.kubernetes.io/unreachable`. So a pod is evicted five minutes after its node stops
reporting (the taint-eviction controller, controllers/taintevict.py), unless it says otherwise.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.request.target import Target

NOT_READY_TAINT = "node.kubernetes.io/not-ready"  # core/v1 TaintNodeNotReady
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"  # core/v1 TaintNodeUnreachable
DEFAULT_TOLERATION_SECONDS = 300  # --default-not-ready-toleration-seconds / -unreachable-


def covers(toleration: Any, taint_key: str) -> bool:
    """`Admit`'s test: the toleration's key is `taint_key` or empty, its effect NoExecute or empty."""
    if not isinstance(toleration, dict):
        return False
    key, effect = toleration.get("key") or "", toleration.get("effect") or ""
    return key in ("", taint_key) and effect in ("", "NoExecute")


def default_toleration(taint_key: str) -> Obj:
    return {
        "key": taint_key,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
    }


def admit_pod(t: Target, pod: Obj) -> None:
    """Append the default not-ready and unreachable tolerations the pod lacks."""
    if t.rt.key != "pods" or t.subresource:
        return
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return  # not a list: validation names the field
    added = [
        default_toleration(key)
        for key in (NOT_READY_TAINT, UNREACHABLE_TAINT)
        if not any(covers(toleration, key) for toleration in tolerations)
    ]
    if added:
        spec["tolerations"] = tolerations + added
