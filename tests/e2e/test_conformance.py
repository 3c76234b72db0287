"""API-server semantics the operator relies on, checked through a plain kubernetes-asyncio client.

Runs against devcluster in the normal test run and against $KUBECONFIG's cluster with
`pytest -m e2e` (see conftest.py: fixtures `conformance_cluster`, `kube`, `namespace`).
Everything asserted here holds on a real kube-apiserver; where devcluster disagrees, it is wrong.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from e2e.conformance_support import (
    GROUP,
    Obj,
    assert_status,
    cm,
    cms,
    gadget,
    gadgets,
    install_crd,
    owner_ref,
)

# ---- identity, versions, concurrency -----------------------------------------------------------


async def test_resource_version_increases_with_every_write(kube: Any, namespace: str) -> None:
    a = await kube.ok("POST", cms(namespace), cm("a"))
    b = await kube.ok("POST", cms(namespace), cm("b"))
    a2 = await kube.ok("PUT", f"{cms(namespace)}/a", {**a, "data": {"k": "v"}})
    versions = [int(o["metadata"]["resourceVersion"]) for o in (a, b, a2)]
    assert versions == sorted(versions) and len(set(versions)) == 3
    listed = await kube.ok("GET", cms(namespace))
    assert int(listed["metadata"]["resourceVersion"]) >= versions[-1]


async def test_stale_update_is_409_conflict(kube: Any, namespace: str) -> None:
    first = await kube.ok("POST", cms(namespace), cm("x"))
    await kube.ok("PUT", f"{cms(namespace)}/x", {**first, "data": {"n": "1"}})
    stale = await kube.request("PUT", f"{cms(namespace)}/x", {**first, "data": {"n": "2"}})
    assert stale.status == 409
    assert_status(stale.body, 409, "Conflict")
    assert stale.body["message"] == (
        'Operation cannot be fulfilled on configmaps "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert stale.body["details"] == {"name": "x", "kind": "configmaps"}


async def test_duplicate_create_is_409_already_exists(kube: Any, namespace: str) -> None:
    await kube.ok("POST", cms(namespace), cm("dup"))
    again = await kube.request("POST", cms(namespace), cm("dup"))
    assert again.status == 409
    assert_status(again.body, 409, "AlreadyExists")
    assert again.body["message"] == 'configmaps "dup" already exists'
    assert again.body["details"] == {"name": "dup", "kind": "configmaps"}


async def test_not_found_status_body(kube: Any, namespace: str) -> None:
    missing = await kube.request("GET", f"{cms(namespace)}/nope")
    assert missing.status == 404
    assert_status(missing.body, 404, "NotFound")
    assert missing.body["message"] == 'configmaps "nope" not found'
    assert missing.body["details"] == {"name": "nope", "kind": "configmaps"}


async def test_generate_name_uid_and_creation_timestamp(kube: Any, namespace: str) -> None:
    body = cm("")
    body["metadata"] = {"generateName": "gen-"}
    made = await kube.ok("POST", cms(namespace), body)
    md = made["metadata"]
    assert re.fullmatch(r"gen-[a-z0-9]{5}", md["name"])
    assert md["generateName"] == "gen-"
    assert re.fullmatch(r"[0-9a-f-]{36}", md["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", md["creationTimestamp"])
    assert md["namespace"] == namespace


async def test_generation_bumps_on_spec_change_only(kube: Any, namespace: str) -> None:
    await install_crd(kube)
    g = await kube.ok("POST", gadgets(namespace), gadget("g1"))
    assert g["metadata"]["generation"] == 1
    g["metadata"]["labels"] = {"touched": "yes"}
    g = await kube.ok("PUT", f"{gadgets(namespace)}/g1", g)
    assert g["metadata"]["generation"] == 1
    g["status"] = {"phase": "Running"}
    g = await kube.ok("PUT", f"{gadgets(namespace)}/g1/status", g)
    assert g["metadata"]["generation"] == 1
    g["spec"]["size"] = 2
    g = await kube.ok("PUT", f"{gadgets(namespace)}/g1", g)
    assert g["metadata"]["generation"] == 2


# ---- selectors and lists -----------------------------------------------------------------------


async def test_label_and_field_selectors(kube: Any, namespace: str) -> None:
    await kube.ok("POST", cms(namespace), cm("a", {"app": "x", "tier": "web"}))
    await kube.ok("POST", cms(namespace), cm("b", {"app": "x", "tier": "db"}))
    await kube.ok("POST", cms(namespace), cm("c", {"app": "y"}))

    async def names(**query: str) -> list[str]:
        listed = await kube.ok("GET", cms(namespace), query=query)
        return sorted(o["metadata"]["name"] for o in listed["items"] if o["metadata"]["name"] in "abc")

    assert await names(labelSelector="app=x") == ["a", "b"]
    assert await names(labelSelector="app!=x") == ["c"]
    assert await names(labelSelector="tier in (web,cache)") == ["a"]
    assert await names(labelSelector="tier notin (web)") == ["b", "c"]
    assert await names(labelSelector="tier") == ["a", "b"]
    assert await names(labelSelector="!tier") == ["c"]
    assert await names(labelSelector="app=x,tier=db") == ["b"]
    assert await names(fieldSelector="metadata.name=b") == ["b"]
    assert await names(fieldSelector="metadata.name!=b") == ["a", "c"]
    bad = await kube.request("GET", cms(namespace), query={"fieldSelector": "data.k=v"})
    assert bad.status == 400
    assert_status(bad.body, 400, "BadRequest")


async def test_list_pagination_is_a_consistent_snapshot(kube: Any, namespace: str) -> None:
    for i in range(5):
        await kube.ok("POST", cms(namespace), cm(f"p{i}", {"page": "yes"}))
    query = {"labelSelector": "page=yes", "limit": "2"}
    first = await kube.ok("GET", cms(namespace), query=query)
    assert [o["metadata"]["name"] for o in first["items"]] == ["p0", "p1"]
    token = first["metadata"]["continue"]
    # changes after the first page are not seen by the rest of the list
    await kube.ok("POST", cms(namespace), cm("p2a", {"page": "yes"}))
    await kube.request("DELETE", f"{cms(namespace)}/p3")
    names = [o["metadata"]["name"] for o in first["items"]]
    while token:
        page = await kube.ok("GET", cms(namespace), query={**query, "continue": token})
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue", "")
    assert names == ["p0", "p1", "p2", "p3", "p4"]
    garbage = await kube.request("GET", cms(namespace), query={**query, "continue": "not-a-token"})
    assert garbage.status == 400


# ---- watch -------------------------------------------------------------------------------------


async def test_watch_from_resource_version(kube: Any, namespace: str) -> None:
    # Only this test's objects: a real controller-manager adds kube-root-ca.crt to a new
    # namespace at a time of its own choosing, possibly after `start`.
    own = {"test": "watch-from-version"}
    created = await kube.ok("POST", cms(namespace), cm("w", own))
    start = created["metadata"]["resourceVersion"]
    updated = await kube.ok("PUT", f"{cms(namespace)}/w", {**created, "data": {"a": "b"}})
    await kube.ok("DELETE", f"{cms(namespace)}/w")
    await kube.ok("POST", cms(namespace), cm("w2", own))
    seen: list[tuple[str, str, str]] = []
    query = {"resourceVersion": start, "timeoutSeconds": "5", "labelSelector": "test=watch-from-version"}
    async with asyncio.timeout(20):
        async for ev in kube.watch(cms(namespace), query):
            seen.append(
                (ev["type"], ev["object"]["metadata"]["name"], ev["object"]["metadata"]["resourceVersion"])
            )
            if len(seen) == 3:
                break
    assert [s[:2] for s in seen] == [("MODIFIED", "w"), ("DELETED", "w"), ("ADDED", "w2")]
    assert seen[0][2] == updated["metadata"]["resourceVersion"]
    rvs = [int(s[2]) for s in seen]
    assert rvs == sorted(rvs)


async def test_watch_without_version_starts_with_current_objects_then_streams(
    kube: Any, namespace: str
) -> None:
    await kube.ok("POST", cms(namespace), cm("pre", {"w": "1"}))
    seen: list[tuple[str, str]] = []
    async with asyncio.timeout(20):
        async for ev in kube.watch(cms(namespace), {"labelSelector": "w=1", "timeoutSeconds": "10"}):
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))
            if len(seen) == 1:
                await kube.ok("POST", cms(namespace), cm("post", {"w": "1"}))
                await kube.ok("POST", cms(namespace), cm("other", {"w": "2"}))
                await kube.ok(
                    "PATCH",
                    f"{cms(namespace)}/pre",
                    {"metadata": {"labels": {"w": "2"}}},
                    content_type="application/merge-patch+json",
                )
            if len(seen) == 3:
                break
    # an object that stops matching the selector is seen as DELETED
    assert seen == [("ADDED", "pre"), ("ADDED", "post"), ("DELETED", "pre")]


async def test_watch_times_out_after_timeout_seconds(kube: Any, namespace: str) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    # A selector no object matches: the namespace's kube-root-ca.crt (added by the
    # controller-manager, possibly after the list) must not count as an event of this watch.
    quiet = "test=watch-times-out"
    listed = await kube.ok("GET", cms(namespace), query={"labelSelector": quiet})
    async with asyncio.timeout(30):
        events = [
            ev
            async for ev in kube.watch(
                cms(namespace),
                {
                    "resourceVersion": listed["metadata"]["resourceVersion"],
                    "timeoutSeconds": "1",
                    "allowWatchBookmarks": "true",
                    "labelSelector": quiet,
                },
            )
        ]
    assert all(ev["type"] == "BOOKMARK" for ev in events)
    assert loop.time() - began < 20


async def test_watch_from_a_compacted_version_is_410_gone(kube: Any, namespace: str) -> None:
    # push version 1 out of any history window (devcluster's conformance window is 100 events)
    for i in range(120):
        await kube.ok("POST", cms(namespace), cm(f"fill{i}"))
    async with asyncio.timeout(20):
        events = [
            ev async for ev in kube.watch(cms(namespace), {"resourceVersion": "1", "timeoutSeconds": "5"})
        ]
    assert events and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert_status(status, 410, "Expired")
    assert status["message"].startswith("too old resource version: 1 (")


# ---- subresources, patches ---------------------------------------------------------------------


async def test_status_subresource_separates_spec_and_status(kube: Any, namespace: str) -> None:
    await install_crd(kube)
    body = gadget("s1")
    body["status"] = {"phase": "Ignored"}
    g = await kube.ok("POST", gadgets(namespace), body)
    assert "status" not in g or "phase" not in g["status"]
    g["status"] = {"phase": "Running"}
    g["spec"]["size"] = 9
    after_status = await kube.ok("PUT", f"{gadgets(namespace)}/s1/status", g)
    assert after_status["status"] == {"phase": "Running"}
    assert after_status["spec"]["size"] == 1
    after_status["status"] = {"phase": "Hacked"}
    after_status["spec"]["size"] = 3
    after_main = await kube.ok("PUT", f"{gadgets(namespace)}/s1", after_status)
    assert after_main["status"] == {"phase": "Running"}
    assert after_main["spec"]["size"] == 3
    patched = await kube.ok(
        "PATCH",
        f"{gadgets(namespace)}/s1/status",
        {"status": {"phase": "Done"}},
        content_type="application/merge-patch+json",
    )
    assert patched["status"]["phase"] == "Done"


async def test_merge_patch_and_json_patch(kube: Any, namespace: str) -> None:
    await kube.ok("POST", cms(namespace), cm("m", a="1", b="2"))
    merged = await kube.ok(
        "PATCH",
        f"{cms(namespace)}/m",
        {"data": {"a": None, "c": "3"}},
        content_type="application/merge-patch+json",
    )
    assert merged["data"] == {"b": "2", "c": "3"}
    ops = [
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/metadata/labels", "value": {"l": "v"}},
    ]
    patched = await kube.ok("PATCH", f"{cms(namespace)}/m", ops, content_type="application/json-patch+json")
    assert patched["data"] == {"b": "20", "c": "3"}
    assert patched["metadata"]["labels"] == {"l": "v"}
    failed = await kube.request(
        "PATCH",
        f"{cms(namespace)}/m",
        [{"op": "test", "path": "/data/b", "value": "x"}],
        content_type="application/json-patch+json",
    )
    assert failed.status == 422
    strategic = await kube.request(
        "PATCH",
        f"{gadgets(namespace)}/none",
        {"spec": {}},
        content_type="application/strategic-merge-patch+json",
    )
    assert strategic.status in (404, 415)


async def test_custom_resource_schema_defaults_pruning_and_validation(kube: Any, namespace: str) -> None:
    await install_crd(kube)
    made = await kube.ok("POST", gadgets(namespace), gadget("d1", unknownField="x"))
    assert made["spec"] == {"size": 1, "mode": "slow"}
    bad = await kube.request("POST", gadgets(namespace), gadget("d2", size="big", mode="warp"))
    assert bad.status == 422
    assert_status(bad.body, 422, "Invalid")
    assert bad.body["details"]["name"] == "d2"
    assert bad.body["details"]["kind"] == "Gadget"
    fields = {c["field"] for c in bad.body["details"]["causes"]}
    assert fields == {"spec.size", "spec.mode"}
    assert bad.body["message"].startswith(f'Gadget.{GROUP} "d2" is invalid: ')
    missing = await kube.request("POST", gadgets(namespace), {**gadget("d3"), "spec": {}})
    assert missing.status == 422
    assert [(c["reason"], c["field"]) for c in missing.body["details"]["causes"]] == [
        ("FieldValueRequired", "spec.size")
    ]


async def test_dry_run_does_not_persist(kube: Any, namespace: str) -> None:
    made = await kube.ok("POST", cms(namespace), cm("dry"), query={"dryRun": "All"})
    assert made["metadata"]["name"] == "dry"
    assert (await kube.request("GET", f"{cms(namespace)}/dry")).status == 404


# ---- deletion ----------------------------------------------------------------------------------


async def test_finalizers_hold_deletion_until_removed(kube: Any, namespace: str) -> None:
    body = cm("fin")
    body["metadata"]["finalizers"] = ["kubetrain.io/test"]
    await kube.ok("POST", cms(namespace), body)
    deleted = await kube.ok("DELETE", f"{cms(namespace)}/fin")
    assert deleted["metadata"]["deletionTimestamp"]
    still = await kube.ok("GET", f"{cms(namespace)}/fin")
    assert still["metadata"]["deletionTimestamp"] and still["metadata"]["finalizers"] == ["kubetrain.io/test"]
    await kube.ok(
        "PATCH",
        f"{cms(namespace)}/fin",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    await kube.eventually_gone(f"{cms(namespace)}/fin", within=10)


def owned(name: str, owner: Obj, block: bool = False) -> Obj:
    body = cm(name)
    body["metadata"]["ownerReferences"] = [owner_ref(owner, block=block)]
    return body


async def test_background_deletion_collects_dependents(kube: Any, namespace: str) -> None:
    owner = await kube.ok("POST", cms(namespace), cm("owner"))
    await kube.ok("POST", cms(namespace), owned("child", owner))
    await kube.ok("DELETE", f"{cms(namespace)}/owner", {"propagationPolicy": "Background"})
    assert (await kube.request("GET", f"{cms(namespace)}/owner")).status == 404
    await kube.eventually_gone(f"{cms(namespace)}/child")


async def test_foreground_deletion_waits_for_blocking_dependents(kube: Any, namespace: str) -> None:
    owner = await kube.ok("POST", cms(namespace), cm("fowner"))
    await kube.ok("POST", cms(namespace), owned("fchild", owner, block=True))
    deleting = await kube.ok("DELETE", f"{cms(namespace)}/fowner", {"propagationPolicy": "Foreground"})
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    assert deleting["metadata"]["deletionTimestamp"]
    await kube.eventually_gone(f"{cms(namespace)}/fchild")
    await kube.eventually_gone(f"{cms(namespace)}/fowner")


async def test_orphan_deletion_keeps_dependents(kube: Any, namespace: str) -> None:
    owner = await kube.ok("POST", cms(namespace), cm("oowner"))
    await kube.ok("POST", cms(namespace), owned("ochild", owner))
    await kube.ok("DELETE", f"{cms(namespace)}/oowner", {"propagationPolicy": "Orphan"})
    await kube.eventually_gone(f"{cms(namespace)}/oowner")
    child = await kube.ok("GET", f"{cms(namespace)}/ochild")
    assert not child["metadata"].get("ownerReferences")


async def test_namespace_deletion_removes_its_objects(kube: Any) -> None:
    ns = f"conformance-gone-{id(kube) % 100000}"
    await kube.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    await kube.ok("POST", cms(ns), cm("inside"))
    deleting = await kube.ok("DELETE", f"/api/v1/namespaces/{ns}")
    assert deleting["status"]["phase"] == "Terminating"
    refused = await kube.request("POST", cms(ns), cm("late"))
    assert refused.status in (403, 404)
    await kube.eventually_gone(f"/api/v1/namespaces/{ns}", within=120)
    assert (await kube.request("GET", f"{cms(ns)}/inside")).status == 404


# ---- kinds -------------------------------------------------------------------------------------


async def test_pod_defaults_and_immediate_delete_without_node(kube: Any, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pd"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "nodeName": ""},
    }
    del pod["spec"]["nodeName"]
    pod["spec"]["schedulerName"] = "kubetrain-no-such-scheduler"  # stays unscheduled on real clusters
    made = await kube.ok("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    spec = made["spec"]
    assert made["status"]["phase"] == "Pending"
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["containers"][0]["terminationMessagePolicy"] == "File"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    invalid = await kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods",
        {**pod, "metadata": {"name": "bad"}, "spec": {"containers": []}},
    )
    assert invalid.status == 422
    assert "spec.containers" in {c["field"] for c in invalid.body["details"]["causes"]}
    await kube.ok("DELETE", f"/api/v1/namespaces/{namespace}/pods/pd")
    await kube.eventually_gone(f"/api/v1/namespaces/{namespace}/pods/pd", within=10)


async def test_pod_hostname_and_subdomain_must_be_dns_labels(kube: Any, namespace: str) -> None:
    """core validation ValidatePodSpec: a set `spec.hostname` / `spec.subdomain` is validated by
    ValidateDNS1123Label, one Invalid cause per message of apimachinery IsDNS1123Label (a pod of
    an operator whose names grow past 63 characters is refused here, whatever the pod's name)."""
    spec = {
        "containers": [{"name": "c", "image": "busybox:1.36"}],
        "schedulerName": "kubetrain-no-such-scheduler",
    }
    path = f"/api/v1/namespaces/{namespace}/pods"
    long_host = "h" * 64
    refused = await kube.request(
        "POST",
        path,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hn"},
            "spec": {**spec, "hostname": long_host},
        },
    )
    assert_status(refused.body, 422, "Invalid")
    assert [(c["reason"], c["field"], c["message"]) for c in refused.body["details"]["causes"]] == [
        (
            "FieldValueInvalid",
            "spec.hostname",
            f'Invalid value: "{long_host}": must be no more than 63 characters',
        )
    ]
    dotted = await kube.request(
        "POST",
        path,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sd"}, "spec": {**spec, "subdomain": "a.b"}},
    )
    assert_status(dotted.body, 422, "Invalid")
    assert [(c["field"], c["message"]) for c in dotted.body["details"]["causes"]] == [
        ("spec.subdomain", 'Invalid value: "a.b": must not contain dots')
    ]
    made = await kube.ok(
        "POST",
        path,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "ok"},
            "spec": {**spec, "hostname": "h" * 63, "subdomain": "workers"},
        },
    )
    assert (made["spec"]["hostname"], made["spec"]["subdomain"]) == ("h" * 63, "workers")


async def test_events_by_involved_object_field_selector(kube: Any, namespace: str) -> None:
    target = await kube.ok("POST", cms(namespace), cm("ev-target"))
    for name, obj_name in (("e1", "ev-target"), ("e2", "someone-else")):
        await kube.ok(
            "POST",
            f"/api/v1/namespaces/{namespace}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {
                    "kind": "ConfigMap",
                    "namespace": namespace,
                    "name": obj_name,
                    "uid": target["metadata"]["uid"] if obj_name == "ev-target" else "",
                },
                "reason": "Tested",
                "message": "hello",
                "type": "Normal",
                "source": {"component": "conformance"},
            },
        )
    selector = (
        f"involvedObject.name=ev-target,involvedObject.namespace={namespace},involvedObject.kind=ConfigMap"
    )
    listed = await kube.ok("GET", f"/api/v1/namespaces/{namespace}/events", query={"fieldSelector": selector})
    assert [e["metadata"]["name"] for e in listed["items"]] == ["e1"]


async def test_cluster_scoped_and_namespaced_paths(kube: Any, namespace: str) -> None:
    namespaces = await kube.ok("GET", "/api/v1/namespaces")
    assert namespace in {n["metadata"]["name"] for n in namespaces["items"]}
    assert (await kube.request("GET", f"/api/v1/namespaces/{namespace}/namespaces")).status == 404
    await kube.ok("POST", cms(namespace), cm("scoped"))
    everywhere = await kube.ok(
        "GET", "/api/v1/configmaps", query={"fieldSelector": f"metadata.namespace={namespace}"}
    )
    assert "scoped" in {o["metadata"]["name"] for o in everywhere["items"]}
    resources = await kube.ok("GET", "/api/v1")
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["pods"]["namespaced"] is True and by_name["namespaces"]["namespaced"] is False
    assert "pods/status" in by_name


@pytest.mark.parametrize("path", ["/version", "/api", "/apis"])
async def test_discovery_documents(kube: Any, path: str) -> None:
    doc = await kube.ok("GET", path)
    if path == "/version":
        assert doc["major"] == "1" and doc["gitVersion"].startswith("v1.")
    elif path == "/api":
        assert doc["kind"] == "APIVersions" and "v1" in doc["versions"]
    else:
        assert doc["kind"] == "APIGroupList"
        assert "coordination.k8s.io" in {g["name"] for g in doc["groups"]}
