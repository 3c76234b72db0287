"""The status endpoint's own view of jobs and pods, for a process without a controller
(`kubetrain status-server`, the child of `--status-server-process`): informers on the served
job resources and on the jobs' pods (labelled `kubetrain.io/job-name`, slimmed as the
controller's), so a report costs no API request. Until every informer has synced, reports are
checked by GETs (`ApiLookup`).

```python
watch = ProgressWatch(client, routes, namespaces=None)
watch.start()                 # background list + watch
server = ProgressServer(client, routes, watch.lookup, tls, ...)
...
await watch.stop()
```

Memory: one slimmed copy of every job pod (metadata and status), as the controller holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.kube.cache import Cache, slim_pod
from kubetrain.kube.client import KubeClient
from kubetrain.kube.informer import Informer
from kubetrain.kube.resources import PODS
from kubetrain.progress.lookup import ApiLookup, CacheLookup, Lookup, Routes


class ProgressWatch:
    def __init__(
        self, client: KubeClient, routes: Routes, *, namespaces: Sequence[str] | None = None
    ) -> None:
        self.cache = Cache()
        self.api = ApiLookup(client)
        self.informers = [Informer(client, ref, cache=self.cache, namespaces=namespaces) for ref in routes]
        self.informers.append(
            Informer(
                client,
                PODS,
                cache=self.cache,
                namespaces=namespaces,
                label_selector=LABEL_JOB_NAME,
                transform=slim_pod,
            )
        )

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)

    def lookup(self) -> Lookup:
        return CacheLookup(self.cache) if self.synced else self.api

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    async def stop(self) -> None:
        for informer in self.informers:
            await informer.stop()
