"""The Kubernetes CEL libraries kube-apiserver's CRD validation environment declares (k8s.io/
apiserver pkg/cel/environment/base.go), as functions for celpy: lists (plus cel-go's string
`indexOf` / `lastIndexOf`), regex, URLs and quantities. `FUNCTIONS` maps each function name to
its implementation; a member call `x.f(y)` reaches it as `f(x, y)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.kinds.crds.celib import lists, quantity, regex, urls

FUNCTIONS: dict[str, Callable[..., Any]] = {
    **lists.FUNCTIONS,
    **regex.FUNCTIONS,
    **urls.FUNCTIONS,
    **quantity.FUNCTIONS,
}
