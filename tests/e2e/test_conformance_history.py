"""Compaction: what a client may rely on about old resourceVersions and continue tokens.

kube-apiserver compacts etcd every `--etcd-compaction-interval` (default 5 min) to the revision
of one interval earlier (k8s.io/apiserver storage/etcd3/compact.go); what was compacted is 410
Gone (apimachinery errors.NewResourceExpired: reason Expired, code 410) with storage/etcd3/
errors.go's messages, and the watch cache answers an old watch with "too old resource version".

On any cluster a token or resourceVersion from a fresh list is accepted. When a real cluster
compacts is its own business, so only devcluster — whose API server clock is injected here, its
compactor driven by hand — is asked to refuse an expired one (those tests skip on a real cluster).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.devcluster import DevCluster
from kubetrain.kube.clock import FakeClock

from .conformance_support import assert_status, cm, cms

INTERVAL = 300.0
OWN = {"test": "history"}
SELECTOR = "test=history"
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


@pytest.fixture
def wall() -> FakeClock:
    return FakeClock()


@pytest.fixture
def devcluster_options(wall: FakeClock) -> dict[str, Any]:
    return {"watch_window": 1000, "clock": wall.now, "compaction_interval": INTERVAL}


def devcluster_only(conformance_cluster: Any) -> DevCluster:
    if conformance_cluster.devcluster is None:
        pytest.skip("a real cluster compacts on its own timer")
    cluster: DevCluster = conformance_cluster.devcluster
    return cluster


async def compact_past_now(cluster: DevCluster, wall: FakeClock) -> None:
    """Two compaction ticks: the first records the current resourceVersion, the second (one
    interval later) compacts to it, so every older version is gone."""
    for _ in range(2):
        await wall.advance(INTERVAL)
        cluster.compactor.poll()


async def fill(kube: Any, namespace: str, n: int) -> None:
    for i in range(n):
        await kube.ok("POST", cms(namespace), cm(f"h{i}", OWN))


async def test_a_fresh_continue_token_and_resource_version_are_accepted(kube: Any, namespace: str) -> None:
    await fill(kube, namespace, 3)
    query = {"labelSelector": SELECTOR, "limit": "1"}
    first = await kube.ok("GET", cms(namespace), query=query)
    rv = first["metadata"]["resourceVersion"]
    second = await kube.ok("GET", cms(namespace), query={**query, "continue": first["metadata"]["continue"]})
    assert [o["metadata"]["name"] for o in second["items"]] == ["h1"]
    assert second["metadata"]["resourceVersion"] == rv  # the same snapshot
    # NotOlderThan a version just listed: served, at that version or newer.
    newer = await kube.ok(
        "GET",
        cms(namespace),
        query={"labelSelector": SELECTOR, "resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"},
    )
    assert int(newer["metadata"]["resourceVersion"]) >= int(rv)
    assert sorted(o["metadata"]["name"] for o in newer["items"]) == ["h0", "h1", "h2"]


async def test_a_compacted_continue_token_is_410_with_a_token_to_list_on(
    kube: Any, namespace: str, conformance_cluster: Any, wall: FakeClock
) -> None:
    """etcd3/errors.go handleCompactedErrorForPaging: the inconsistent-continue 410 carries, in
    the Status's metadata.continue, a token that lists the rest from the same key at the current
    version (objects changed meanwhile show as they are now)."""
    cluster = devcluster_only(conformance_cluster)
    await fill(kube, namespace, 3)
    query = {"labelSelector": SELECTOR, "limit": "1"}
    first = await kube.ok("GET", cms(namespace), query=query)
    token = first["metadata"]["continue"]
    await kube.ok("POST", cms(namespace), cm("h3", OWN))
    await compact_past_now(cluster, wall)
    expired = await kube.request("GET", cms(namespace), query={**query, "continue": token})
    assert expired.status == 410
    assert_status(expired.body, 410, "Expired")
    assert expired.body["message"] == INCONSISTENT_CONTINUE
    resume = expired.body["metadata"]["continue"]
    assert resume and resume != token
    names: list[str] = []
    versions: set[str] = set()
    while resume:
        page = await kube.ok("GET", cms(namespace), query={**query, "continue": resume})
        names += [o["metadata"]["name"] for o in page["items"]]
        versions.add(page["metadata"]["resourceVersion"])
        resume = page["metadata"].get("continue", "")
    assert names == ["h1", "h2", "h3"]  # after h0, as of now: h3 (created since) included
    assert len(versions) == 1 and int(versions.pop()) > int(first["metadata"]["resourceVersion"])


async def test_a_watch_or_exact_list_from_a_compacted_version_is_410(
    kube: Any, namespace: str, conformance_cluster: Any, wall: FakeClock
) -> None:
    cluster = devcluster_only(conformance_cluster)
    await fill(kube, namespace, 1)
    rv = (await kube.ok("GET", cms(namespace), query={"labelSelector": SELECTOR}))["metadata"][
        "resourceVersion"
    ]
    for name in ("later", "last"):  # compaction to the newest version keeps its event
        await kube.ok("POST", cms(namespace), cm(name, OWN))
    # Not yet compacted: a watch from the listed version replays what came after it.
    events = [
        ev
        async for ev in kube.watch(
            cms(namespace), {"resourceVersion": rv, "timeoutSeconds": "1", "labelSelector": SELECTOR}
        )
    ]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "later"),
        ("ADDED", "last"),
    ]
    await compact_past_now(cluster, wall)
    events = [ev async for ev in kube.watch(cms(namespace), {"resourceVersion": rv, "timeoutSeconds": "5"})]
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert_status(events[0]["object"], 410, "Expired")
    assert events[0]["object"]["message"].startswith(f"too old resource version: {rv} (")
    exact = await kube.request(
        "GET", cms(namespace), query={"resourceVersion": rv, "resourceVersionMatch": "Exact"}
    )
    assert exact.status == 410
    assert_status(exact.body, 410, "Expired")
    assert exact.body["message"] == "The resourceVersion for the provided list is too old."
    # NotOlderThan never looks at history: still served, at the current version.
    served = await kube.ok(
        "GET",
        cms(namespace),
        query={"labelSelector": SELECTOR, "resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"},
    )
    assert sorted(o["metadata"]["name"] for o in served["items"]) == ["h0", "last", "later"]
