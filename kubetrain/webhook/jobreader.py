"""Reading the job a scale-subresource review is about (the review carries only a Scale).

```python
server = WebhookServer(..., job_reader=kube_job_reader(client))
```

One GET per scale write (`kubectl scale`, an HPA changing its desired count): rare enough that a
cache of every job in the webhook would cost more than it saves.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.groups import JOB_GROUPS
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import job_resources_in
from kubetrain.webhook.reads import JobReader
from kubetrain.webhook.review import AdmissionRequest


def kube_job_reader(client: KubeClient) -> JobReader:
    # Every group the webhook may be asked about (kubetrain.io, kubeflow.org): the review names it.
    by_resource = {(ref.group, ref.plural): ref for ref in job_resources_in(JOB_GROUPS).values()}

    async def read(request: AdmissionRequest) -> dict[str, Any] | None:
        resource = request.raw.get("resource")
        if not isinstance(resource, dict):
            return None
        ref = by_resource.get((str(resource.get("group")), str(resource.get("resource"))))
        if ref is None:
            return None
        try:
            return await client.get(ref, request.namespace, request.name)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    return read
