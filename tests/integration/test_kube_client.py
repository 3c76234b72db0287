"""KubeClient against devcluster over real HTTP(S): CRUD as dicts, errors, pagination, watch,
status subresource, discovery, rate limiting, 429 retries, user agent and request metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest
from pods import pod_manifest

from kubetrain.kube.client import ApiError, GoneError, KubeClient
from kubetrain.kube.resources import LEASES, PODS, ResourceRef
from kubetrain.kube.transport import USER_AGENT
from kubetrain.serving.metrics import REGISTRY

CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
NS = "default"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": data,
    }


def pod(name: str) -> dict[str, Any]:
    return pod_manifest(name, namespace=NS, labels={"app": "t"})


async def test_crud_round_trip_as_plain_dicts(kube: KubeClient) -> None:
    created = await kube.create(CONFIGMAPS, configmap("cm", a="1"))
    assert type(created) is dict
    assert created["data"] == {"a": "1"}
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]

    got = await kube.get(CONFIGMAPS, NS, "cm")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]

    got["data"]["b"] = "2"
    replaced = await kube.replace(CONFIGMAPS, got)
    assert replaced["data"] == {"a": "1", "b": "2"}

    merged = await kube.patch(CONFIGMAPS, NS, "cm", {"data": {"a": None, "c": "3"}})
    assert merged["data"] == {"b": "2", "c": "3"}
    patched = await kube.patch(
        CONFIGMAPS, NS, "cm", [{"op": "replace", "path": "/data/b", "value": "20"}], patch_type="json"
    )
    assert patched["data"] == {"b": "20", "c": "3"}

    page = await kube.list(CONFIGMAPS, NS)  # the namespace's kube-root-ca.crt, and ours
    assert [i["metadata"]["name"] for i in page["items"]] == ["cm", "kube-root-ca.crt"]

    await kube.delete(CONFIGMAPS, NS, "cm")
    with pytest.raises(ApiError) as err:
        await kube.get(CONFIGMAPS, NS, "cm")
    assert err.value.is_not_found and err.value.status == 404
    assert err.value.reason == "NotFound"
    assert '"cm" not found' in err.value.message


async def test_generate_name_and_namespace_from_metadata(kube: KubeClient) -> None:
    obj = configmap("")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "gen-"
    created = await kube.create(CONFIGMAPS, obj)
    assert created["metadata"]["name"].startswith("gen-")
    assert created["metadata"]["namespace"] == NS


async def test_stale_write_is_a_conflict_and_duplicate_create_already_exists(kube: KubeClient) -> None:
    first = await kube.create(CONFIGMAPS, configmap("c1", v="1"))
    await kube.patch(CONFIGMAPS, NS, "c1", {"data": {"v": "2"}})
    first["data"]["v"] = "stale"
    with pytest.raises(ApiError) as err:
        await kube.replace(CONFIGMAPS, first)  # carries the old resourceVersion
    assert err.value.status == 409 and err.value.is_conflict and not err.value.is_already_exists

    with pytest.raises(ApiError) as dup:
        await kube.create(CONFIGMAPS, configmap("c1"))
    assert dup.value.is_already_exists and not dup.value.is_conflict


async def test_delete_preconditions_and_options(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("d1"))
    with pytest.raises(ApiError) as err:
        await kube.delete(CONFIGMAPS, NS, "d1", preconditions={"uid": "not-the-uid"})
    assert err.value.is_conflict
    await kube.delete(CONFIGMAPS, NS, "d1", propagation_policy="Background", grace_period_seconds=0)
    with pytest.raises(ApiError) as gone:
        await kube.get(CONFIGMAPS, NS, "d1")
    assert gone.value.is_not_found


async def test_status_subresource_writes_only_status(kube: KubeClient) -> None:
    created = await kube.create(PODS, pod("p-status"))
    created["status"] = {"phase": "Running"}
    created["metadata"]["labels"]["ignored"] = "yes"
    updated = await kube.replace_status(PODS, created)
    assert updated["status"]["phase"] == "Running"
    assert "ignored" not in updated["metadata"]["labels"]
    patched = await kube.patch_status(PODS, NS, "p-status", {"status": {"phase": "Succeeded"}})
    assert patched["status"]["phase"] == "Succeeded"


async def test_list_pagination_and_list_all(kube: KubeClient, devcluster: Any) -> None:
    for i in range(25):
        await kube.create(CONFIGMAPS, configmap(f"page-{i:02d}"))
    first = await kube.list(CONFIGMAPS, NS, limit=10)
    assert len(first["items"]) == 10
    token = first["metadata"]["continue"]
    assert token
    second = await kube.list(CONFIGMAPS, NS, limit=10, continue_=token)
    assert {i["metadata"]["name"] for i in first["items"]}.isdisjoint(
        i["metadata"]["name"] for i in second["items"]
    )

    devcluster.requests.reset()
    items, rv = await kube.list_all(CONFIGMAPS, NS, page_size=10)
    # (devcluster, like a real cluster, also has the namespace's kube-root-ca.crt)
    own = sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("page-"))
    assert own == [f"page-{i:02d}" for i in range(25)]
    assert rv
    assert devcluster.requests.count(verb="list", resource="configmaps") == 3

    selected = await kube.list(CONFIGMAPS, NS, field_selector="metadata.name=page-07")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["page-07"]


async def test_watch_streams_events_from_a_resource_version(kube: KubeClient) -> None:
    _, rv = await kube.list_all(CONFIGMAPS, NS)
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async with contextlib.aclosing(kube.watch(CONFIGMAPS, NS, resource_version=rv)) as events:
            async for event_type, obj in events:
                if event_type == "BOOKMARK":
                    continue
                seen.append((event_type, obj["metadata"]["name"]))
                if event_type == "DELETED":
                    return

    task = asyncio.ensure_future(consume())
    await kube.create(CONFIGMAPS, configmap("w1"))
    await kube.patch(CONFIGMAPS, NS, "w1", {"data": {"x": "y"}})
    await kube.delete(CONFIGMAPS, NS, "w1")
    await asyncio.wait_for(task, 10)
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def test_watch_from_an_expired_resource_version_raises_gone(kube: KubeClient, devcluster: Any) -> None:
    await kube.create(CONFIGMAPS, configmap("old"))
    _, rv = await kube.list_all(CONFIGMAPS, NS)
    await kube.create(CONFIGMAPS, configmap("newer"))
    devcluster.faults.expire_resource_versions()
    with pytest.raises(GoneError) as err:
        async with contextlib.aclosing(kube.watch(CONFIGMAPS, NS, resource_version=rv)) as events:
            async for _ in events:
                pass
    assert err.value.is_gone and err.value.status == 410


async def test_discovery_tells_installed_apis_apart(kube: KubeClient) -> None:
    assert await kube.has_api(LEASES.group, LEASES.version, "leases")
    assert await kube.has_api("", "v1", "pods")
    assert not await kube.has_api("scheduling.volcano.sh", "v1beta1", "podgroups")
    assert not await kube.has_api("coordination.k8s.io", "v1", "nonexistent")


async def test_user_agent_and_request_metric(kube: KubeClient, devcluster: Any) -> None:
    def count(code: str) -> float:
        return REGISTRY.get_sample_value("kubetrain_api_requests_total", {"verb": "get", "code": code}) or 0.0

    ok, missing = count("200"), count("404")
    await kube.create(CONFIGMAPS, configmap("ua"))
    await kube.get(CONFIGMAPS, NS, "ua")
    with pytest.raises(ApiError):
        await kube.get(CONFIGMAPS, NS, "nope")
    assert count("200") == ok + 1
    assert count("404") == missing + 1
    assert devcluster.requests.count(verb="get", resource="configmaps", user_agent=USER_AGENT) == 2


async def test_429_is_retried_transparently(kube: KubeClient, devcluster: Any) -> None:
    devcluster.faults.fail(verb="create", resource="configmaps", status=429, count=2)
    created = await kube.create(CONFIGMAPS, configmap("throttled"))
    assert created["metadata"]["name"] == "throttled"
    assert devcluster.requests.count(verb="create", resource="configmaps") == 3


async def test_server_errors_surface_as_retryable_api_errors(kube: KubeClient, devcluster: Any) -> None:
    devcluster.faults.fail(verb="get", resource="configmaps", status=500)
    with pytest.raises(ApiError) as err:
        await kube.get(CONFIGMAPS, NS, "anything")
    assert err.value.status == 500 and err.value.is_retryable


async def test_rate_limit_bounds_throughput_without_serialising(devcluster: Any) -> None:
    # Every create takes 0.2 s on the server: 40 of them one after the other would take 8 s.
    devcluster.faults.delay(0.2, verb="create", resource="configmaps", count=40)
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=50, burst=100) as kube:
        start = time.monotonic()
        await asyncio.gather(*(kube.create(CONFIGMAPS, configmap(f"par-{i}")) for i in range(40)))
        assert time.monotonic() - start < 3.0

    # Beyond the burst, requests are spaced at qps: 30 requests with burst 10 at 50 qps >= 0.4 s.
    async with await KubeClient.connect(devcluster.kubeconfig_path, qps=50, burst=10) as kube:
        start = time.monotonic()
        await asyncio.gather(*(kube.get(CONFIGMAPS, NS, f"par-{i}") for i in range(30)))
        assert time.monotonic() - start >= 0.38


async def test_create_only_creates_without_decoding_and_raises_like_create(kube: KubeClient) -> None:
    assert await kube.create_only(CONFIGMAPS, configmap("quiet", a="1")) is None
    assert (await kube.get(CONFIGMAPS, NS, "quiet"))["data"] == {"a": "1"}
    with pytest.raises(ApiError) as dup:
        await kube.create_only(CONFIGMAPS, configmap("quiet"))
    assert dup.value.is_already_exists and dup.value.reason == "AlreadyExists"
    assert '"quiet" already exists' in dup.value.message
    with pytest.raises(ValueError, match="needs a namespace"):
        await kube.create_only(CONFIGMAPS, {"metadata": {"name": "nowhere"}})


async def test_watch_reads_events_however_the_stream_is_chunked(kube: KubeClient) -> None:
    """Many events arrive in one chunk (a burst of creates), a large one across several: each
    event is delivered once, whole and in order."""
    _, rv = await kube.list_all(CONFIGMAPS, NS)
    names = [f"burst-{i:03d}" for i in range(60)] + ["big"]
    seen: list[str] = []

    async def consume() -> None:
        async with contextlib.aclosing(kube.watch(CONFIGMAPS, NS, resource_version=rv)) as events:
            async for event_type, obj in events:
                if event_type == "ADDED":
                    seen.append(obj["metadata"]["name"])
                    if obj["metadata"]["name"] == "big":
                        assert obj["data"]["blob"] == "x" * 300_000
                        return

    task = asyncio.ensure_future(consume())
    await asyncio.gather(*(kube.create(CONFIGMAPS, configmap(n)) for n in names[:-1]))
    await kube.create(CONFIGMAPS, configmap("big", blob="x" * 300_000))
    await asyncio.wait_for(task, 20)
    assert sorted(seen[:-1]) == sorted(names[:-1]) and seen[-1] == "big" and len(seen) == len(names)
