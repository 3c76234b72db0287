"""managedFields decisions (kinds/fieldpaths.py, typedvalue.py, managedfields.py,
request/apply.py): the FieldsV1 encoding, which fields a write takes, apply's merge, pruning and
conflicts — checked against what kube-apiserver 1.36 records for the same writes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.devcluster.apiserver.base.errors import ApiError
from kubetrain.devcluster.apiserver.kinds import builtinschema, fieldpaths, managedfields
from kubetrain.devcluster.apiserver.kinds.fieldpaths import f, key
from kubetrain.devcluster.apiserver.kinds.managedfields import APPLY, UPDATE, Entry, key_for
from kubetrain.devcluster.apiserver.kinds.smdschema import DEDUCED, resolve
from kubetrain.devcluster.apiserver.kinds.typedvalue import added_fields_v1, compare, to_field_set
from kubetrain.devcluster.apiserver.request import apply as applying

POD = resolve(builtinschema._definitions()["io.k8s.api.core.v1.Pod"])
CM = resolve(builtinschema._definitions()["io.k8s.api.core.v1.ConfigMap"])
DEPLOY = resolve(builtinschema._definitions()["io.k8s.api.apps.v1.Deployment"])
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def pod(image: str = "busybox", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": image, "ports": [{"containerPort": 80, "protocol": "TCP"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [container], **spec},
    }


def test_fields_v1_encoding_round_trips_with_dot_for_members_that_have_children() -> None:
    fields_v1 = {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}},
    }
    fields = fieldpaths.decode(fields_v1)
    assert (f("metadata"), f("labels")) in fields
    assert (f("spec"), f("containers"), key({"name": "c"})) in fields
    assert fieldpaths.encode(fields) == fields_v1
    assert fieldpaths.text((f("spec"), f("containers"), key({"name": "c"}), f("image"))) == (
        '.spec.containers[name="c"].image'
    )
    with pytest.raises(fieldpaths.FieldsError):
        fieldpaths.decode({"x:spec": {}})


def test_field_set_of_a_pod_uses_the_openapi_list_map_keys() -> None:
    fields = fieldpaths.encode(to_field_set(pod(), POD))
    port = 'k:{"containerPort":80,"protocol":"TCP"}'
    assert fields["f:spec"] == {
        "f:containers": {
            'k:{"name":"c"}': {
                ".": {},
                "f:image": {},
                "f:name": {},
                "f:ports": {port: {".": {}, "f:containerPort": {}, "f:protocol": {}}},
            }
        }
    }
    # a port without protocol is keyed by the OpenAPI default, as upstream keys it
    bare = pod()
    del bare["spec"]["containers"][0]["ports"][0]["protocol"]
    assert (
        port
        in fieldpaths.encode(to_field_set(bare, POD))["f:spec"]["f:containers"]['k:{"name":"c"}']["f:ports"]
    )


def test_untyped_objects_own_every_map_key_and_lists_whole() -> None:
    fields = to_field_set({"spec": {"a": {"b": 1}, "l": [1, 2]}}, DEDUCED)
    assert fields == {(f("spec"),), (f("spec"), f("a")), (f("spec"), f("a"), f("b")), (f("spec"), f("l"))}


def _update(managed: managedfields.Managed, old: Any, new: Any, who: str, now: str) -> managedfields.Managed:
    return managedfields.record_update(managed, old, new, POD, key_for(who, UPDATE, "v1"), "v1", now)


def test_an_update_takes_the_fields_it_changes_and_removed_fields_leave_every_manager() -> None:
    created = _update({}, {}, pod(), "creator", T0)
    entries = managedfields.encode(created)
    assert [(e["manager"], e["operation"], e["time"]) for e in entries] == [("creator", "Update", T0)]
    assert "f:metadata" not in entries[0]["fieldsV1"]  # name is never owned (stripMetaManager)

    changed = pod(image="busybox:2", nodeSelector={"disk": "ssd"})
    after = _update(created, pod(), changed, "kubectl-edit", T1)
    edit = after[key_for("kubectl-edit", UPDATE, "v1")]
    image = (f("spec"), f("containers"), key({"name": "c"}), f("image"))
    assert image in edit.fields and (f("spec"), f("nodeSelector")) in edit.fields
    assert image not in after[key_for("creator", UPDATE, "v1")].fields

    # removing the only field kubectl-edit still owns... drops its entry
    without = copy.deepcopy(changed)
    without["spec"]["containers"][0]["image"] = "busybox"
    del without["spec"]["nodeSelector"]
    final = _update(after, changed, without, "creator", T2)
    assert key_for("kubectl-edit", UPDATE, "v1") not in final
    # a write that changes nothing leaves the entries, times included
    assert _update(final, without, copy.deepcopy(without), "other", T2) == final


def test_update_managers_past_ten_merge_into_ancient_changes() -> None:
    managed = {
        key_for(f"m{i:02}", UPDATE, "v1"): Entry("v1", {(f("data"), f(f"k{i}"))}, f"2026-01-01T00:00:{i:02}Z")
        for i in range(12)
    }
    capped = managedfields.cap_updates(managed)
    assert len(capped) == 10
    bucket = capped[key_for("ancient-changes", UPDATE, "v1")]
    assert bucket.fields == {(f("data"), f("k0")), (f("data"), f("k1")), (f("data"), f("k2"))}
    assert key_for("m03", UPDATE, "v1") in capped


def test_manager_from_the_user_agent_prefix() -> None:
    assert managedfields.manager_name("", "kubectl/v1.36.0 (linux/amd64) kubernetes/abc") == "kubectl"
    assert managedfields.manager_name("mine", "kubectl/v1.36.0") == "mine"
    assert managedfields.manager_name("", "a\x00b/1") == "ab"


def test_sent_managed_fields_replace_clear_or_are_ignored() -> None:
    stored = managedfields.encode(_update({}, {}, pod(), "creator", T0))
    assert managedfields.from_request([], stored, "") == {}
    assert managedfields.from_request([{}], stored, "") == {}
    assert managedfields.from_request(
        [{"manager": "x", "operation": "Bogus"}], stored, ""
    ) == managedfields.decode(stored)
    other = [
        {"manager": "x", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}
    ]
    assert list(managedfields.from_request(other, stored, "")) == [key_for("x", UPDATE, "v1")]
    assert managedfields.from_request(other, stored, "status") == managedfields.decode(stored)


def cm(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}


def _apply(live: Any, config: Any, managed: managedfields.Managed, who: str, force: bool = False) -> Any:
    return applying.apply(live, config, CM, managed, key_for(who, APPLY, "v1"), "v1", force=force, now=T1)


def test_apply_conflicts_with_another_managers_value_until_forced() -> None:
    live = cm(replicas="1")
    managed = managedfields.record_update({}, {}, live, CM, key_for("kubectl-edit", UPDATE, "v1"), "v1", T0)
    with pytest.raises(ApiError) as err:
        _apply(live, cm(replicas="3"), managed, "kubectl")
    assert err.value.code == 409
    assert (
        err.value.message
        == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.replicas'
    )
    assert err.value.details == {
        "causes": [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "kubectl-edit" using v1',
                "field": ".data.replicas",
            }
        ]
    }
    # the same value is shared ownership, not a conflict
    merged, shared = _apply(live, cm(replicas="1"), managed, "kubectl")
    assert merged == live and len(shared) == 2
    merged, forced = _apply(live, cm(replicas="3"), managed, "kubectl", force=True)
    assert merged["data"] == {"replicas": "3"}
    replicas = (f("data"), f("replicas"))
    assert replicas in forced[key_for("kubectl", APPLY, "")].fields
    assert replicas not in forced[key_for("kubectl-edit", UPDATE, "v1")].fields  # it keeps `.data` itself


def test_apply_removes_what_the_manager_stops_applying_unless_another_owns_it() -> None:
    merged, managed = _apply({}, cm(a="1", b="2"), {}, "kubectl")
    managed = managedfields.record_update(
        managed,
        merged,
        {**merged, "data": {"a": "1", "b": "2", "c": "3"}},
        CM,
        key_for("edit", UPDATE, "v1"),
        "v1",
        T1,
    )
    live = {**merged, "data": {"a": "1", "b": "2", "c": "3"}}
    after, _ = _apply(live, cm(a="1"), managed, "kubectl")
    assert after["data"] == {"a": "1", "c": "3"}  # b went, c is edit's


def test_apply_keeps_the_live_order_of_associative_lists() -> None:
    live = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
        }
    }
    config = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]}}
        }
    }
    merged, _ = applying.apply(
        live, config, DEPLOY, {}, key_for("m", APPLY, "apps/v1"), "apps/v1", force=False, now=T0
    )
    names = [(c["name"], c["image"]) for c in merged["spec"]["template"]["spec"]["containers"]]
    assert names == [("a", "x"), ("b", "z"), ("c", "w")]


def test_apply_options_need_a_field_manager_and_force_only_with_apply() -> None:
    with pytest.raises(ApiError) as err:
        applying.check_options("", None, is_apply=True)
    assert err.value.code == 422
    assert (
        err.value.message
        == 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    with pytest.raises(ApiError) as err:
        applying.check_options("", True, is_apply=False)
    assert "force: Forbidden: may not be specified for non-apply patch" in err.value.message


def test_editing_encoded_fields_equals_re_encoding_the_edited_set() -> None:
    base = to_field_set(pod(), POD) | {(f("metadata"), f("labels"), f("a"))}
    raw = fieldpaths.encode(base)
    container = (f("spec"), f("containers"), key({"name": "c"}))
    cases = [
        ({(f("metadata"), f("labels"), f("b")), (f("metadata"), f("labels"))}, set()),
        ({(*container, f("image"), f("x"))}, {(*container, f("name"))}),  # a leaf gains children
        (set(), {container, (f("metadata"), f("labels"), f("a"))}),  # emptied nodes go
        ({(f("apiVersion"),)}, {(f("nothing"), f("here"))}),
    ]
    for add, remove in cases:
        assert fieldpaths.edit(raw, add, remove) == fieldpaths.encode((base - remove) | add)
        assert list(fieldpaths.edit(raw, add, remove)) == list(fieldpaths.encode((base - remove) | add))
    assert fieldpaths.encode(base) == raw  # the input is not changed


def test_a_create_takes_what_the_general_comparison_adds() -> None:
    obj = pod(nodeSelector={}, tolerations=[{"key": "a"}, {"key": "a"}])
    obj["metadata"]["labels"] = {"app": "x"}
    added, modified, removed = compare({}, obj, POD)
    assert not modified and not removed
    assert fieldpaths.encode(added) == added_fields_v1(obj, POD)
    fast = managedfields.record_update({}, {}, obj, POD, key_for("m", UPDATE, "v1"), "v1", T0)
    entry = fast[key_for("m", UPDATE, "v1")]
    assert entry.fields == added - managedfields.STRIPPED


def test_sent_times_are_read_as_metav1_time_writes_them() -> None:
    entry = {
        "manager": "x",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    }
    sent = [{**entry, "fieldsV1": {}, "time": "2026-01-01T01:00:00+01:00"}]
    assert managedfields.encode(managedfields.decode(sent))[0]["time"] == "2026-01-01T00:00:00Z"


def test_a_create_takes_neither_the_zero_objects_maps_nor_status() -> None:
    """A Deployment's create starts from its Go zero value (spec, spec.template and its
    metadata and spec exist), so kube-apiserver records `f:spec` without `.`; a ConfigMap has no
    spec; status is reset by the strategy and owned by nobody."""
    from kubetrain.devcluster.apiserver.kinds import smdschema

    class Kind:
        custom = False
        kind = "Deployment"
        group = "apps"
        storage_version = "v1"

    zero = smdschema.zero_object(Kind())  # type: ignore[arg-type]
    assert zero == {"metadata": {}, "spec": {"template": {"metadata": {}, "spec": {}}}, "status": {}}
    deploy = {
        "metadata": {"name": "d", "labels": {"app": "x"}},
        "spec": {
            "replicas": 2,
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"hostname": "h"}},
        },
        "status": {"replicas": 0},
    }
    me = key_for("m", UPDATE, "apps/v1")
    fast = managedfields.record_update(
        {}, zero, deploy, DEPLOY, me, "apps/v1", T0, ignored={(f("status"),)}, zero=smdschema.map_paths(zero)
    )
    slow = managedfields.record_update({}, zero, deploy, DEPLOY, me, "apps/v1", T0, ignored={(f("status"),)})
    assert managedfields.encode(fast) == managedfields.encode(slow)
    assert managedfields.encode(fast)[0]["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:hostname": {}}},
        },
    }
