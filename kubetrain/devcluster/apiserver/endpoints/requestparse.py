"""What a REST request asks for, read from its path, method, query and body as kube-apiserver
reads them — decisions only; the handlers (handlers.py) do the I/O.

```python
t = target(["namespaces", "ns", "pods", "p"], "", "v1", registry, query, user)  # raises 404/400
verb(request.method, t, query)        # get | list | watch | create | update | patch | delete | ...
list_query(query); delete_options(query, body); decode_body(raw, content_type)
warning_header(["w"])                 # {"Warning": '299 - "w"'} or None
```
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from multidict import MultiMapping

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_json
from kubetrain.devcluster.apiserver.kinds.resources import Registry
from kubetrain.devcluster.apiserver.verbs.core import Target
from kubetrain.devcluster.apiserver.verbs.reads import ListQuery

Query = MultiMapping[str]  # a request's query parameters (aiohttp's request.query)


def not_found() -> errors.ApiError:
    return errors.ApiError(404, "NotFound", "the server could not find the requested resource")


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def target(
    rest: list[str],
    group: str,
    version: str,
    registry: Registry,
    query: Query,
    user: dict[str, Any],
    user_agent: str = "",
) -> Target:
    """The resource, namespace, name and subresource `rest` (the path after the group version)
    names, with the dryRun, fieldValidation, fieldManager and force parameters checked."""
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise not_found()
    rt = registry.lookup(group, version, rest[0])
    if rt is None:
        raise not_found()
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in rt.subresources:
        raise not_found()
    if namespace and not rt.namespaced:
        raise not_found()
    if rt.namespaced and name and not namespace:
        raise not_found()
    dry = query.getall("dryRun", [])
    if any(d != "All" for d in dry):
        raise errors.bad_request(f'Invalid dry run value: {go_json(dry)}: supported values: "All"')
    validation = query.get("fieldValidation", "Warn")
    if validation not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(f"fieldValidation parameter unsupported: {validation}")
    force = query.get("force")
    return Target(
        rt,
        version,
        namespace,
        name,
        sub,
        dry_run=bool(dry),
        user=user,
        field_validation=validation,
        field_manager=query.get("fieldManager", ""),
        user_agent=user_agent,
        force=None if force is None else truthy(force),
    )


def verb(method: str, t: Target, query: Query) -> str:
    if method == "GET":
        if t.name:
            return "get"
        return "watch" if truthy(query.get("watch")) else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if t.name else "deletecollection"
    raise errors.method_not_allowed(method)


def decode_body(raw: bytes, content_type: str) -> Any:
    """A request body: JSON, or YAML when the Content-Type says so; None when empty.

    A YAML body (JSON text sent as YAML too) comes back with every mapping's keys sorted: the
    YAML serializer converts it to JSON first (apimachinery runtime/serializer/json
    `Serializer.Decode`, sigs.k8s.io/yaml `YAMLToJSON`, whose `json.Marshal` of a map sorts the
    keys), so the strict decoder meets, and reports, the unknown fields in that order."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        if "yaml" not in content_type:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {raw[:80]!r}") from None
        import yaml

        from kubetrain.api.manifests import load

        try:
            value = load(raw)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from None
    return _sorted_keys(value) if "yaml" in content_type else value


def _sorted_keys(value: Any) -> Any:
    """`value` with the keys of every mapping in it sorted (code point order is UTF-8 byte
    order, Go's string order)."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def list_query(q: Query) -> ListQuery:
    try:
        limit = int(q.get("limit", "0") or 0)
    except ValueError:
        raise errors.bad_request(f"invalid limit: {q.get('limit')}") from None
    return ListQuery(
        q.get("labelSelector", ""),
        q.get("fieldSelector", ""),
        limit,
        q.get("continue", ""),
        q.get("resourceVersion", ""),
        q.get("resourceVersionMatch", ""),
    )


def delete_options(q: Query, body: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if "gracePeriodSeconds" in q:
        options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
    if "propagationPolicy" in q:
        options["propagationPolicy"] = q["propagationPolicy"]
    if "orphanDependents" in q:
        options["orphanDependents"] = truthy(q["orphanDependents"])
    return options


def warning(text: str) -> str:
    return '299 - "' + text.replace('"', '\\"') + '"'


def warning_header(warnings: Sequence[str]) -> dict[str, str] | None:
    return {"Warning": ", ".join(warning(w) for w in warnings)} if warnings else None
