"""devcluster checks an object's name, generateName, finalizers and immutable metadata with each
kind's rule and kube-apiserver's words (apimachinery api/validation generic.go and
objectmeta.go, core validation's ValidateObjectMeta, RBAC's minimalNameRequirements,
rest.BeforeCreate/BeforeUpdate), so a client sees on devcluster the 422 or 409 it gets from a
real cluster."""

from __future__ import annotations

import random
from typing import Any

from kubetrain.devcluster.apiserver.base.types import ResourceType
from kubetrain.devcluster.apiserver.kinds import meta, namerules, objectmeta
from kubetrain.devcluster.apiserver.kinds.objectmeta import (
    DNS1035_ERROR,
    DNS1123_LABEL_ERROR,
    DNS1123_SUBDOMAIN_ERROR,
)


def _causes(resource: str, **md: Any) -> list[tuple[str, str]]:
    obj = {"metadata": md}
    return [(c.field, c.message) for c in namerules.create_name_causes(resource, obj)]


def test_a_generate_name_is_checked_before_the_generated_name_with_its_dash_masked() -> None:
    assert namerules.mask_trailing_dash("web-") == "wea"
    assert namerules.mask_trailing_dash("a-") == "a"
    assert namerules.mask_trailing_dash("-") == "-"
    assert _causes("pods", generateName="web-", name="web-x7b2q") == []
    assert _causes("configmaps", generateName="Bad_", name="Bad_x7b2q") == [
        ("metadata.generateName", f'Invalid value: "Bad_": {DNS1123_SUBDOMAIN_ERROR}'),
        ("metadata.name", f'Invalid value: "Bad_x7b2q": {DNS1123_SUBDOMAIN_ERROR}'),
    ]
    # the dash is masked only at the end: a prefix of one dash is no subdomain
    assert _causes("secrets", generateName="-", name="-x7b2q")[0] == (
        "metadata.generateName",
        f'Invalid value: "-": {DNS1123_SUBDOMAIN_ERROR}',
    )


def test_each_problem_of_a_name_is_its_own_cause() -> None:
    long_name = "a" * 254
    assert _causes("pods", name=long_name) == [
        ("metadata.name", f'Invalid value: "{long_name}": must be no more than 253 characters')
    ]
    long_bad = "A" * 254
    assert [m for _, m in _causes("nodes", name=long_bad)] == [
        f'Invalid value: "{long_bad}": must be no more than 253 characters',
        f'Invalid value: "{long_bad}": {DNS1123_SUBDOMAIN_ERROR}',
    ]
    assert _causes("pods") == [("metadata.name", "Required value: name or generateName is required")]


def test_services_take_dns_1035_labels_and_namespaces_dns_1123_labels() -> None:
    assert _causes("services", generateName="web-", name="web-x7b2q") == []
    assert _causes("services", generateName="1web-", name="1web-x7b2q") == [
        ("metadata.generateName", f'Invalid value: "1web-": {DNS1035_ERROR}'),
        ("metadata.name", f'Invalid value: "1web-x7b2q": {DNS1035_ERROR}'),
    ]
    assert _causes("namespaces", name="team.a") == [
        ("metadata.name", 'Invalid value: "team.a": must not contain dots')
    ]
    assert _causes("namespaces", name="Team") == [
        ("metadata.name", f'Invalid value: "Team": {DNS1123_LABEL_ERROR}')
    ]
    assert _causes("namespaces", name="x" * 64) == [
        ("metadata.name", f'Invalid value: "{"x" * 64}": must be no more than 63 characters')
    ]
    # a subdomain name is fine for a ConfigMap but not for a Service
    assert _causes("configmaps", name="a.b") == []
    assert _causes("services", name="a.b") == [("metadata.name", f'Invalid value: "a.b": {DNS1035_ERROR}')]


def test_rbac_names_are_path_segments_even_as_a_prefix() -> None:
    for kind in ("roles", "rolebindings", "clusterroles", "clusterrolebindings"):
        assert _causes(kind, name="system:controller:Job_1") == [], kind
    assert _causes("roles", generateName=".", name=".x7b2q") == [
        ("metadata.generateName", "Invalid value: \".\": may not be '.'")
    ]
    assert _causes("clusterroles", name="a/b%c") == [
        ("metadata.name", "Invalid value: \"a/b%c\": may not contain '/'"),
        ("metadata.name", "Invalid value: \"a/b%c\": may not contain '%'"),
    ]


def test_pod_disruption_budgets_get_only_the_generic_path_segment_rule() -> None:
    assert _causes("poddisruptionbudgets", name="Budget_A:1") == []
    assert _causes("poddisruptionbudgets", generateName="..", name="..x7b2q") == []
    assert _causes("poddisruptionbudgets", name="..") == [
        ("metadata.name", "Invalid value: \"..\": may not be '..'")
    ]


def test_custom_resources_and_crds() -> None:
    assert _causes("gadgets", generateName="g-", name="g-x7b2q") == []
    assert _causes("gadgets", name="G") == [
        ("metadata.name", f'Invalid value: "G": {DNS1123_SUBDOMAIN_ERROR}')
    ]
    crd = {
        "metadata": {"generateName": "gadgets.", "name": "gadgets.x7b2q"},
        "spec": {"group": "example.com", "names": {"plural": "gadgets"}},
    }
    plural = 'must be spec.names.plural+"."+spec.group'
    assert [(c.field, c.message) for c in namerules.create_name_causes("customresourcedefinitions", crd)] == [
        ("metadata.generateName", f'Invalid value: "gadgets.": {DNS1123_SUBDOMAIN_ERROR}'),
        ("metadata.generateName", f'Invalid value: "gadgets.": {plural}'),
        ("metadata.name", f'Invalid value: "gadgets.x7b2q": {plural}'),
    ]
    crd["metadata"] = {"name": "gadgets.example.com"}
    assert namerules.create_name_causes("customresourcedefinitions", crd) == []


def test_events_names_are_left_to_the_event_rules() -> None:
    assert _causes("events", name="Pod_A:1") == []


def test_generated_names_append_five_of_apimachinery_alphabet_to_at_most_58_characters() -> None:
    rng = random.Random(7)
    short = meta.generate_name("job-", rng)
    assert short.startswith("job-") and len(short) == 9
    assert set(short[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    long_prefix = "p" * 70
    made = meta.generate_name(long_prefix, rng)
    assert made[:58] == "p" * 58 and len(made) == 63
    assert set(made[58:]) <= set("bcdfghjklmnpqrstvwxz2456789")


QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def test_finalizers_are_qualified_names_and_not_both_orphan_and_foreground() -> None:
    ok = {"finalizers": ["kubetrain.io/cleanup", "kubernetes", "orphan"]}
    assert objectmeta.metadata_causes(ok, standard_finalizers=True) == []
    bad = objectmeta.finalizer_causes({"finalizers": ["has space", "orphan", "foregroundDeletion"]})
    assert [(c.field, c.message) for c in bad] == [
        ("metadata.finalizers", f'Invalid value: "has space": {QUALIFIED}'),
        (
            "metadata.finalizers",
            'Invalid value: ["has space","orphan","foregroundDeletion"]: '
            "finalizer orphan and foregroundDeletion cannot be both set",
        ),
    ]


def test_core_kinds_refuse_an_unqualified_finalizer_custom_resources_warn() -> None:
    md = {"finalizers": ["kubetrain.io/x", "cleanup"]}
    (cause,) = objectmeta.metadata_causes(md, standard_finalizers=True)
    assert (cause.field, cause.message) == (
        "metadata.finalizers[1]",
        'Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
    )
    assert objectmeta.metadata_causes(md) == []
    assert namerules.core_object_meta("configmaps", custom=False)
    assert namerules.core_object_meta("roles", custom=False)
    for kind in ("leases", "poddisruptionbudgets", "customresourcedefinitions", "events"):
        assert not namerules.core_object_meta(kind, custom=False), kind
    assert not namerules.core_object_meta("pods", custom=True)
    assert objectmeta.finalizer_warnings(md) == [
        'metadata.finalizers[1]: "cleanup": prefer a domain-qualified finalizer name to avoid '
        "accidental conflicts with other finalizer writers"
    ]
    # only the finalizers this write adds are warned about
    assert objectmeta.finalizer_warnings(md, {"finalizers": ["cleanup"]}) == []


def _stored(**md: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z", **md}}


def test_an_update_keeps_what_it_leaves_out_and_may_not_change_uid_or_grace_period() -> None:
    old = _stored(deletionGracePeriodSeconds=30)
    same = {"metadata": {"name": "x", "creationTimestamp": "2000-01-01T00:00:00Z"}}
    meta.carry_over(same, old)
    assert same["metadata"]["uid"] == "u-1" and same["metadata"]["deletionGracePeriodSeconds"] == 30
    assert same["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"  # silently restored
    assert meta.immutable_causes(same, old) == []

    other = {"metadata": {"name": "x", "uid": "u-2", "deletionGracePeriodSeconds": 5}}
    meta.carry_over(other, old)
    assert [(c.field, c.message) for c in meta.immutable_causes(other, old)] == [
        ("metadata.uid", 'Invalid value: "u-2": field is immutable'),
        ("metadata.deletionGracePeriodSeconds", "Invalid value: 5: field is immutable"),
    ]


def test_a_put_naming_another_uid_fails_its_storage_precondition() -> None:
    cms = ResourceType("", ["v1"], "configmaps", "ConfigMap", True)
    err = meta.uid_precondition_failed(cms, "team-a", "cfg", "u-2", "u-1")
    assert err.code == 409
    assert err.message == (
        'Operation cannot be fulfilled on configmaps "cfg": StorageError: invalid object, Code: 4, '
        "Key: /registry/configmaps/team-a/cfg, ResourceVersion: 0, AdditionalErrorMsg: "
        "Precondition failed: UID in precondition: u-2, UID in object meta: u-1"
    )
    svc = ResourceType("", ["v1"], "services", "Service", True)
    node = ResourceType("", ["v1"], "nodes", "Node", False)
    gadgets = ResourceType("example.com", ["v1"], "gadgets", "Gadget", True, custom=True)
    assert meta.etcd_key(svc, "ns", "web") == "/registry/services/specs/ns/web"
    assert meta.etcd_key(node, "", "n1") == "/registry/minions/n1"
    assert meta.etcd_key(gadgets, "ns", "g") == "/registry/example.com/gadgets/ns/g"
