"""Writes the node lifecycle controller's taints (`nodelifecycle.reconciled_taints`) to a Node
its owner's watch shows changed: a PUT of the Node with the resourceVersion seen, as upstream's
`PatchNodeTaints` sends it; a conflict is left to the newer version's own watch event."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers import nodelifecycle
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)


class NodeTaints:
    def __init__(self, api: Callable[[], RawApi], clock: Clock) -> None:
        self._api = api
        self.clock = clock

    async def observe(self, kind: str, node: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            return
        taints = nodelifecycle.reconciled_taints(node, self.clock.now())
        if taints is None:
            return
        updated = copy.deepcopy(dict(node))
        updated.setdefault("spec", {})["taints"] = taints
        name = str((node.get("metadata") or {}).get("name") or "")
        code, body = await self._api().request("PUT", f"/api/v1/nodes/{name}", body=updated)
        if code not in (200, 404, 409):
            log.warning("node %s: taints not written: %s", name, ApiError(code, body))
