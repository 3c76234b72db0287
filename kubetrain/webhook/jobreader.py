"""Reading the job a scale-subresource review is about (the review carries only a Scale).

```python
server = WebhookServer(..., job_reader=kube_job_reader(client))
```

One GET per scale write (`kubectl scale`, an HPA changing its desired count): rare enough that a
cache of every job in the webhook would cost more than it saves.
"""

from __future__ import annotations

from typing import Any

from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import JOB_RESOURCES
from kubetrain.webhook.review import AdmissionRequest
from kubetrain.webhook.server import JobReader


def kube_job_reader(client: KubeClient) -> JobReader:
    by_plural = {ref.plural: ref for ref in JOB_RESOURCES.values()}

    async def read(request: AdmissionRequest) -> dict[str, Any] | None:
        resource = request.raw.get("resource")
        plural = resource.get("resource") if isinstance(resource, dict) else None
        ref = by_plural.get(str(plural))
        if ref is None:
            return None
        try:
            return await client.get(ref, request.namespace, request.name)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    return read
