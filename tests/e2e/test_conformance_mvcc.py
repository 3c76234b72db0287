"""Reads at an older resourceVersion: what a client paging through a list, or asking for an Exact
version, may rely on while writes happen.

etcd is an MVCC store: kube-apiserver serves a list with `resourceVersionMatch=Exact`, and every
page after the first of a paginated list, at a revision that has not been compacted (k8s.io/
apiserver storage/etcd3/store.go GetList reads `WithRev`), so a continue token stays good until
compaction however many other lists and writes happen meanwhile. Compaction and devcluster's own
history bound are tested in test_conformance_history.py and below (devcluster only).
"""

from __future__ import annotations

from typing import Any

import pytest

from .conformance_support import assert_status, cm, cms

WINDOW = 20
OWN = {"test": "mvcc"}
SELECTOR = "test=mvcc"
LIST_EXPIRED = "The resourceVersion for the provided list is too old."


@pytest.fixture
def devcluster_options() -> dict[str, Any]:
    return {"watch_window": WINDOW}


def names_and_data(page: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    return [(o["metadata"]["name"], o.get("data", {})) for o in page["items"]]


async def test_an_exact_list_at_an_old_version_sees_the_state_then(kube: Any, namespace: str) -> None:
    await kube.ok("POST", cms(namespace), cm("a", OWN, v="1"))
    await kube.ok("POST", cms(namespace), cm("b", OWN, v="1"))
    then = (await kube.ok("GET", cms(namespace), query={"labelSelector": SELECTOR}))["metadata"][
        "resourceVersion"
    ]
    a = await kube.ok("GET", f"{cms(namespace)}/a")
    await kube.ok("PUT", f"{cms(namespace)}/a", {**a, "data": {"v": "2"}})
    await kube.ok("DELETE", f"{cms(namespace)}/b")
    await kube.ok("POST", cms(namespace), cm("c", OWN, v="1"))
    query = {"labelSelector": SELECTOR, "resourceVersion": then, "resourceVersionMatch": "Exact"}
    exact = await kube.ok("GET", cms(namespace), query=query)
    assert exact["metadata"]["resourceVersion"] == then
    assert names_and_data(exact) == [("a", {"v": "1"}), ("b", {"v": "1"})]
    # Paged, every page is at that version too.
    first = await kube.ok("GET", cms(namespace), query={**query, "limit": "1"})
    assert names_and_data(first) == [("a", {"v": "1"})]
    rest = await kube.ok(
        "GET", cms(namespace), query={**query, "limit": "1", "continue": first["metadata"]["continue"]}
    )
    assert names_and_data(rest) == [("b", {"v": "1"})]
    assert first["metadata"]["resourceVersion"] == rest["metadata"]["resourceVersion"] == then
    assert not rest["metadata"].get("continue")
    # A limited list at a resourceVersion with no resourceVersionMatch is Exact as well (the
    # "legacy exact match" of storage/cacher/delegator ShouldDelegateList).
    legacy = await kube.ok(
        "GET", cms(namespace), query={"labelSelector": SELECTOR, "resourceVersion": then, "limit": "5"}
    )
    assert legacy["metadata"]["resourceVersion"] == then
    assert names_and_data(legacy) == [("a", {"v": "1"}), ("b", {"v": "1"})]
    # The current state is what a plain list returns.
    now = await kube.ok("GET", cms(namespace), query={"labelSelector": SELECTOR})
    assert names_and_data(now) == [("a", {"v": "2"}), ("c", {"v": "1"})]


async def test_a_continue_token_outlives_other_paginated_lists_and_later_writes(
    kube: Any, namespace: str
) -> None:
    for name in ("h0", "h1", "h2"):
        await kube.ok("POST", cms(namespace), cm(name, OWN, v="1"))
    query = {"labelSelector": SELECTOR, "limit": "1"}
    first = await kube.ok("GET", cms(namespace), query=query)
    token, then = first["metadata"]["continue"], first["metadata"]["resourceVersion"]
    for _ in range(70):  # more paginated lists than devcluster once kept snapshots of
        other = await kube.ok("GET", cms(namespace), query=query)
        assert other["metadata"].get("continue")
    h1 = await kube.ok("GET", f"{cms(namespace)}/h1")
    await kube.ok("PUT", f"{cms(namespace)}/h1", {**h1, "data": {"v": "2"}})
    await kube.ok("DELETE", f"{cms(namespace)}/h2")
    await kube.ok("POST", cms(namespace), cm("h3", OWN, v="1"))
    seen = names_and_data(first)
    while token:
        page = await kube.ok("GET", cms(namespace), query={**query, "continue": token})
        assert page["metadata"]["resourceVersion"] == then
        seen += names_and_data(page)
        token = page["metadata"].get("continue", "")
    assert seen == [("h0", {"v": "1"}), ("h1", {"v": "1"}), ("h2", {"v": "1"})]


async def test_versions_past_devclusters_history_bound_are_410_not_a_wrong_state(
    kube: Any, namespace: str, conformance_cluster: Any
) -> None:
    """devcluster keeps at most `watch_window` events; a version whose later events it dropped
    cannot be rebuilt, so it is answered as compacted (etcd's ErrCompacted for a revision whose
    history is gone), with etcd3/errors.go's messages. A real cluster holds more history."""
    if conformance_cluster.devcluster is None:
        pytest.skip("a real cluster's history bound is etcd's compaction")
    await kube.ok("POST", cms(namespace), cm("x", OWN, v="0"))
    query = {"labelSelector": SELECTOR, "limit": "1"}
    await kube.ok("POST", cms(namespace), cm("y", OWN))
    first = await kube.ok("GET", cms(namespace), query=query)
    then = first["metadata"]["resourceVersion"]
    for i in range(1, WINDOW + 2):  # the events after `then` no longer all fit
        x = await kube.ok("GET", f"{cms(namespace)}/x")
        await kube.ok("PUT", f"{cms(namespace)}/x", {**x, "data": {"v": str(i)}})
    exact = await kube.request(
        "GET",
        cms(namespace),
        query={"labelSelector": SELECTOR, "resourceVersion": then, "resourceVersionMatch": "Exact"},
    )
    assert exact.status == 410
    assert_status(exact.body, 410, "Expired")
    assert exact.body["message"] == LIST_EXPIRED
    # The first page's result is still kept, so its token is still served, at its version.
    kept = await kube.ok("GET", cms(namespace), query={**query, "continue": first["metadata"]["continue"]})
    assert names_and_data(kept) == [("y", {})] and kept["metadata"]["resourceVersion"] == then
    # Once 64 later paginated lists have pushed it out, the token is the inconsistent-continue 410.
    for _ in range(70):
        await kube.ok("GET", cms(namespace), query=query)
    expired = await kube.request(
        "GET", cms(namespace), query={**query, "continue": first["metadata"]["continue"]}
    )
    assert expired.status == 410 and expired.body["metadata"]["continue"]
    assert expired.body["message"].startswith("The provided continue parameter is too old")
    resumed = await kube.ok(
        "GET", cms(namespace), query={**query, "continue": expired.body["metadata"]["continue"]}
    )
    assert names_and_data(resumed) == [("y", {})]
    assert int(resumed["metadata"]["resourceVersion"]) > int(then)
