"""devcluster-only behaviour: fault injection, request accounting, watch window, bookmarks, tokens."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.devcluster import DevCluster

NS = "default"


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


async def raw_watch(api: client.ApiClient, query: dict[str, str]) -> list[dict[str, Any]]:
    v1 = client.CoreV1Api(api)
    resp = await v1.list_namespaced_config_map(NS, watch=True, _preload_content=False, **query)
    events = []
    try:
        while line := await resp.content.readline():
            events.append(json.loads(line))
    finally:
        resp.release()
    return events


async def test_nth_matching_request_fails_with_the_chosen_status(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    rule = devcluster.faults.fail(verb="create", resource="configmaps", nth=2, status=409)
    await v1.create_namespaced_config_map(NS, cm("one"))
    with pytest.raises(ApiException) as failed:
        await v1.create_namespaced_config_map(NS, cm("two"))
    assert failed.value.status == 409
    assert json.loads(failed.value.body)["reason"] == "Conflict"
    await v1.create_namespaced_config_map(NS, cm("three"))  # count=1: only the 2nd failed
    assert rule.fired == 1
    assert devcluster.get_object("configmaps", NS, "two") is None


@pytest.mark.parametrize(
    ("status", "reason"), [(429, "TooManyRequests"), (500, "InternalError"), (504, "Timeout")]
)
async def test_injected_errors_are_kube_status_bodies(
    devcluster: DevCluster, api: Any, status: int, reason: str
) -> None:
    devcluster.faults.fail(verb="get", resource="configmaps", status=status)
    with pytest.raises(ApiException) as failed:
        await client.CoreV1Api(api).read_namespaced_config_map("x", NS)
    body = json.loads(failed.value.body)
    assert (failed.value.status, body["kind"], body["code"], body["reason"]) == (
        status,
        "Status",
        status,
        reason,
    )
    if status == 429:
        assert failed.value.headers["Retry-After"] == "1"


async def test_delay_slows_a_request_without_failing_it(devcluster: DevCluster, api: Any) -> None:
    devcluster.faults.delay(0.3, verb="list", resource="configmaps")
    loop = asyncio.get_running_loop()
    began = loop.time()
    await client.CoreV1Api(api).list_namespaced_config_map(NS)
    assert loop.time() - began >= 0.3


async def test_close_watches_ends_open_streams(devcluster: DevCluster, api: Any) -> None:
    # (not the namespace's kube-root-ca.crt, which a watch without a version would list first)
    task = asyncio.create_task(
        raw_watch(api, {"timeout_seconds": 60, "field_selector": "metadata.name!=kube-root-ca.crt"})
    )
    async with asyncio.timeout(5):
        for _ in range(500):  # the watch opens asynchronously
            if devcluster.faults.close_watches():
                break
            await asyncio.sleep(0.01)
        assert await task == []


async def test_expired_versions_give_410_to_watches_and_continue_tokens(
    devcluster: DevCluster, api: Any
) -> None:
    v1 = client.CoreV1Api(api)
    for i in range(3):
        await v1.create_namespaced_config_map(NS, cm(f"c{i}"))
    page = await v1.list_namespaced_config_map(NS, limit=1)
    rv = page.metadata.resource_version
    await v1.create_namespaced_config_map(NS, cm("later"))
    devcluster.faults.expire_resource_versions()
    events = await raw_watch(api, {"resource_version": rv, "timeout_seconds": 5})
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as gone:
        await v1.list_namespaced_config_map(NS, limit=1, _continue=page.metadata._continue)
    assert gone.value.status == 410
    assert json.loads(gone.value.body)["reason"] == "Expired"


async def test_watch_window_is_configurable(tmp_path: Any) -> None:
    async with DevCluster(tls=False, workdir=str(tmp_path), watch_window=5) as cluster:
        from kubernetes_asyncio import config

        conf = client.Configuration()
        await config.load_kube_config(config_file=cluster.kubeconfig_path, client_configuration=conf)
        async with client.ApiClient(conf) as api:
            v1 = client.CoreV1Api(api)
            first = await v1.create_namespaced_config_map(NS, cm("first"))
            recent = await raw_watch(
                api, {"resource_version": first.metadata.resource_version, "timeout_seconds": 1}
            )
            assert recent == []
            for i in range(6):
                await v1.create_namespaced_config_map(NS, cm(f"more{i}"))
            old = await raw_watch(
                api, {"resource_version": first.metadata.resource_version, "timeout_seconds": 1}
            )
            assert old[0]["type"] == "ERROR" and old[0]["object"]["code"] == 410


async def test_bookmarks_carry_the_current_version(tmp_path: Any) -> None:
    async with DevCluster(workdir=str(tmp_path), bookmark_interval=0.1) as cluster:
        from kubernetes_asyncio import config

        conf = client.Configuration()
        await config.load_kube_config(config_file=cluster.kubeconfig_path, client_configuration=conf)
        async with client.ApiClient(conf) as api:
            made = await client.CoreV1Api(api).create_namespaced_config_map(NS, cm("b"))
            events = await raw_watch(
                api,
                {
                    "resource_version": made.metadata.resource_version,
                    "allow_watch_bookmarks": True,
                    "timeout_seconds": 3,  # bookmarks stop 2 s before the deadline
                },
            )
            assert events and {e["type"] for e in events} == {"BOOKMARK"}
            assert events[-1]["object"]["kind"] == "ConfigMap"
            assert int(events[-1]["object"]["metadata"]["resourceVersion"]) >= int(
                made.metadata.resource_version
            )


async def test_a_watch_gets_a_bookmark_two_seconds_before_its_deadline(api: Any) -> None:
    """As kube-apiserver: bookmarks every minute, and one 2 s before the watch times out, so a
    client resumes from a current resourceVersion even if nothing changed for an hour."""
    made = await client.CoreV1Api(api).create_namespaced_config_map(NS, cm("pre"))
    loop = asyncio.get_running_loop()
    start = loop.time()
    events = await raw_watch(
        api,
        {
            "resource_version": made.metadata.resource_version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": 3,
        },
    )
    assert [e["type"] for e in events] == ["BOOKMARK"]  # one, not one a second
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(made.metadata.resource_version)
    assert loop.time() - start >= 2.5  # the stream ran to its deadline


async def test_send_initial_events_ends_with_an_annotated_bookmark(devcluster: DevCluster, api: Any) -> None:
    await client.CoreV1Api(api).create_namespaced_config_map(NS, cm("init"))
    events = await raw_watch(
        api,
        {
            "send_initial_events": True,
            "resource_version_match": "NotOlderThan",
            "allow_watch_bookmarks": True,
            "timeout_seconds": 1,
            "field_selector": "metadata.name=init",  # not the namespace's kube-root-ca.crt
        },
    )
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "init"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_requests_are_counted_by_verb_resource_and_user_agent(devcluster: DevCluster, api: Any) -> None:
    v1 = client.CoreV1Api(api)
    api.user_agent = "budget-test/1.0"
    devcluster.requests.reset()
    made = await v1.create_namespaced_config_map(NS, cm("acct"))
    await v1.read_namespaced_config_map("acct", NS)
    await v1.read_namespaced_config_map("acct", NS)
    await v1.list_namespaced_config_map(NS)
    made.data = {"a": "b"}
    await v1.replace_namespaced_config_map("acct", NS, made)
    await v1.delete_namespaced_config_map("acct", NS)
    log = devcluster.requests
    assert log.count() == 6
    assert log.count(verb="get", resource="configmaps") == 2
    assert log.count(verb="list") == 1 and log.count(verb="update") == 1 and log.count(verb="delete") == 1
    assert log.count(user_agent="budget-test") == 6
    assert log.count(user_agent="someone-else") == 0
    log.reset()
    assert log.count() == 0


async def test_wrong_token_is_401(devcluster: DevCluster, api: Any) -> None:
    api.configuration.api_key["BearerToken"] = "Bearer wrong"
    with pytest.raises(ApiException) as denied:
        await client.CoreV1Api(api).list_namespaced_config_map(NS)
    assert denied.value.status == 401
