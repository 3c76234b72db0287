"""kube-controller-manager's pod garbage collector (k8s.io/kubernetes pkg/controller/podgc
gc_controller.go `PodGCController`) as an ordinary API client, on an injectable `Clock` (tests
advance a FakeClock). What it deletes is decided in `podgcplan.py`.

`loop` runs a pass at once and then every `GC_CHECK_PERIOD` (20 s) after the last one ended
(`wait.UntilWithContext`). A pass (`gc`) LISTs every pod and Node, GETs each node whose quarantine
is over and that the list lacks (`checkIfNodeExists`: only a 404 counts as deleted; another error
leaves it for a later sighting), then carries out the plan: for a pod to mark Failed it reads the
pod, PUTs `pods/status` with phase Failed (and the orphan's DisruptionTarget condition) at the
resourceVersion read, read again and tried again after a conflict (upstream sends a strategic
merge patch of the status with the pod's uid as precondition); then it DELETEs the pod with
gracePeriodSeconds 0. The status is written only to a pod with the listed uid and the DELETE
carries that uid as precondition, so a pod recreated under the same name meanwhile is left alone
(upstream's DELETE has no precondition). A failed write is logged and waits for the next pass, as
upstream.

`threshold` is `--terminated-pod-gc-threshold` (default 12500; tests set it lower);
`deleted` counts the deletions by reason (upstream's `pod_gc_collector_force_delete_pods_total`);
`passes` counts completed passes (tests wait for the next one).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.controllers import podgcplan
from kubetrain.devcluster.controllers.podgcplan import Deletion, Quarantine
from kubetrain.kube.clock import Clock

log = logging.getLogger(__name__)

STATUS_RETRIES = 5  # re-reads after a conflicting status write


class PodGC:
    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        threshold: int = podgcplan.TERMINATED_POD_GC_THRESHOLD,
    ) -> None:
        self._api = api
        self.clock = clock
        self.threshold = threshold
        self.quarantine = Quarantine()
        self.deleted: Counter[str] = Counter()
        self.passes = 0

    async def loop(self) -> None:
        while True:
            try:
                await self.gc()
            except (TimeoutError, ApiError, OSError) as exc:
                log.debug("pod garbage collection pass failed: %s", exc)
            await self.clock.sleep(podgcplan.GC_CHECK_PERIOD)

    async def gc(self) -> None:
        """One pass over every pod (`PodGCController.gc`)."""
        pods = await self._list("/api/v1/pods")
        nodes = {str(n["metadata"]["name"]): n for n in await self._list("/api/v1/nodes")}
        now = self.clock.monotonic()
        self.quarantine.sight(podgcplan.missing_nodes(pods, nodes), now)
        deleted_nodes = {n for n in self.quarantine.due(now) if n not in nodes and await self._gone(n)}
        for deletion in podgcplan.plan(pods, nodes, deleted_nodes, self.threshold):
            try:
                if await self._mark_failed_and_delete(deletion):
                    self.deleted[deletion.why] += 1
            except (TimeoutError, ApiError, OSError) as exc:
                log.warning("pod %s/%s not garbage collected: %s", deletion.namespace, deletion.name, exc)
        self.passes += 1

    async def _list(self, path: str) -> list[dict[str, Any]]:
        code, body = await self._api().request("GET", path)
        if code != 200:
            raise ApiError(code, body)
        return list(body.get("items") or [])

    async def _gone(self, node: str) -> bool:
        code, body = await self._api().request("GET", f"/api/v1/nodes/{node}")
        if code == 404:
            return True
        if code != 200:
            log.warning("node %s not looked up: %s", node, ApiError(code, body))
        return False

    async def _mark_failed_and_delete(self, deletion: Deletion) -> bool:
        """`markFailedAndDeletePodWithCondition`; False when the pod was gone or replaced."""
        path = f"/api/v1/namespaces/{deletion.namespace}/pods/{deletion.name}"
        log.info("PodGC is force deleting Pod %s/%s (%s)", deletion.namespace, deletion.name, deletion.why)
        if deletion.mark_failed and not await self._mark_failed(path, deletion):
            return False
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": deletion.uid},
        }
        code, body = await self._api().request("DELETE", path, body=options)
        if code in (404, 409):
            return False
        if code not in (200, 202):
            raise ApiError(code, body)
        return True

    async def _mark_failed(self, path: str, deletion: Deletion) -> bool:
        for _ in range(STATUS_RETRIES):
            code, pod = await self._api().request("GET", path)
            if code == 404 or (code == 200 and pod["metadata"].get("uid") != deletion.uid):
                return False
            if code != 200:
                raise ApiError(code, pod)
            status = podgcplan.failed_status(
                pod.get("status"), deletion.condition, self.clock.now(), deletion.generation
            )
            if status is None:
                return True
            pod["status"] = status
            code, body = await self._api().request("PUT", f"{path}/status", body=pod)
            if code == 200:
                return True
            if code == 404:
                return False
            if code != 409:
                raise ApiError(code, body)
        what = f"{deletion.namespace}/{deletion.name}"
        raise ApiError(409, {"message": f"pods/status of {what} kept conflicting"})
