"""devcluster refuses CustomResourceDefinitions kube-apiserver refuses, naming the field and the
rule with apiextensions-apiserver's own words (validation.go): names, group, scope, versions,
subresources, printer columns, conversion, and the update rules (immutable fields, stored
versions). Schema rules: test_devcluster_crd_schema.py."""

from __future__ import annotations

import copy

from crd_builders import causes, crd, two_versions, update_causes

from kubetrain.devcluster.apiserver.kinds import namerules
from kubetrain.devcluster.apiserver.kinds.fielderrors import DNS1035_ERROR, DNS1123_SUBDOMAIN_ERROR

VERSIONS = "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: "


def test_a_valid_crd_is_accepted() -> None:
    assert causes(crd()) == []


def test_names_follow_the_dns_1035_rules() -> None:
    bad = crd()
    bad["spec"]["names"].update(
        plural="Widgets", kind="Wid_get", shortNames=["ok", "no_pe"], categories=["all", "Bad"]
    )
    bad["metadata"]["name"] = "Widgets.example.com"
    assert causes(bad) == [
        ("spec.names.plural", f'Invalid value: "Widgets": {DNS1035_ERROR}'),
        ("spec.names.singular", f'Invalid value: "wid_get": {DNS1035_ERROR}'),
        (
            "spec.names.kind",
            f'Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035_ERROR}',
        ),
        (
            "spec.names.listKind",
            f'Invalid value: "Wid_getList": may have mixed case, but should otherwise match: {DNS1035_ERROR}',
        ),
        ("spec.names.shortNames[1]", f'Invalid value: "no_pe": {DNS1035_ERROR}'),
        ("spec.names.categories[1]", f'Invalid value: "Bad": {DNS1035_ERROR}'),
    ]


def test_kind_and_list_kind_may_not_be_the_same_and_plural_is_required() -> None:
    bad = crd()
    bad["spec"]["names"] = {"plural": "", "kind": "Widget", "listKind": "Widget"}
    bad["metadata"]["name"] = ".example.com"
    assert causes(bad) == [
        ("spec.names.plural", "Required value"),
        ("spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the same'),
    ]


def test_the_name_must_be_plural_dot_group() -> None:
    """The CRD's name function (namerules.py), checked with the other kinds' name rules."""
    bad = crd()
    bad["metadata"]["name"] = "gadgets.example.com"
    found = namerules.create_name_causes("customresourcedefinitions", bad)
    assert [(c.field, c.message) for c in found] == [
        ("metadata.name", 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group')
    ]
    assert causes(bad) == []  # the spec itself is fine


def test_group_must_be_a_dns_subdomain_with_a_dot() -> None:
    assert causes(crd(group="example")) == [
        ("spec.group", 'Invalid value: "example": should be a domain with at least one dot')
    ]
    assert causes(crd(group="Example.com")) == [
        ("spec.group", f'Invalid value: "Example.com": {DNS1123_SUBDOMAIN_ERROR}')
    ]


def test_scope_is_required_in_v1_and_must_be_cluster_or_namespaced() -> None:
    missing = crd()
    del missing["spec"]["scope"]
    assert causes(missing) == [("spec.scope", "Required value")]
    wrong = crd()
    wrong["spec"]["scope"] = "Global"
    assert causes(wrong) == [
        ("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')
    ]


def test_exactly_one_storage_version_and_unique_names() -> None:
    twice = two_versions(crd())
    twice["spec"]["versions"][1]["storage"] = True
    assert causes(twice) == [
        ("spec.versions", VERSIONS + "must have exactly one version marked as storage version"),
        ("status.storedVersions", 'Invalid value: ["v1"]: must have the storage version v2'),
    ]
    none = crd(storage=False)
    assert causes(none) == [
        ("spec.versions", VERSIONS + "must have exactly one version marked as storage version"),
        ("status.storedVersions", "Invalid value: []string(nil): must have at least one stored version"),
    ]
    same = two_versions(crd())
    same["spec"]["versions"][1]["name"] = "v1"
    assert causes(same) == [("spec.versions", VERSIONS + "must contain unique version names")]


def test_version_names_are_dns_1035_labels_and_the_first_is_also_spec_version() -> None:
    bad = crd()
    bad["spec"]["versions"][0]["name"] = "1beta"
    assert causes(bad) == [
        ("spec.versions[0].name", f'Invalid value: "1beta": {DNS1035_ERROR}'),
        ("spec.version", f'Invalid value: "1beta": {DNS1035_ERROR}'),
    ]


def test_every_version_needs_a_schema() -> None:
    bad = two_versions(crd())
    del bad["spec"]["versions"][1]["schema"]
    assert causes(bad) == [("spec.versions[1].schema.openAPIV3Schema", "Required value")]


def test_deprecation_warning_only_for_deprecated_versions() -> None:
    assert causes(crd(deprecationWarning="old")) == [
        (
            "spec.versions[0].deprecationWarning",
            'Invalid value: "old": can only be set for deprecated versions',
        )
    ]
    assert causes(crd(deprecated=True, deprecationWarning="old")) == []


def test_scale_subresource_paths() -> None:
    scale = {
        "specReplicasPath": "spec.replicas",
        "statusReplicasPath": ".spec.ready",
        "labelSelectorPath": ".x.y",
    }
    assert causes(crd(subresources={"status": {}, "scale": scale})) == [
        (
            "spec.subresources.scale.specReplicasPath",
            'Invalid value: "spec.replicas": must be a simple json path starting with .',
        ),
        (
            "spec.subresources.scale.statusReplicasPath",
            'Invalid value: ".spec.ready": should be a json path under .status',
        ),
        (
            "spec.subresources.scale.labelSelectorPath",
            'Invalid value: ".x.y": should be a json path under either .spec or .status',
        ),
    ]
    assert causes(crd(subresources={"scale": {"statusReplicasPath": ".status.n"}})) == [
        ("spec.subresources.scale.specReplicasPath", "Required value")
    ]


def test_per_version_subresources_are_reported_per_version() -> None:
    bad = two_versions(crd())
    bad["spec"]["versions"][1]["subresources"] = {
        "scale": {"specReplicasPath": ".spec.n", "statusReplicasPath": ".n"}
    }
    assert causes(bad) == [
        (
            "spec.versions[1].subresources.scale.statusReplicasPath",
            'Invalid value: ".n": should be a json path under .status',
        )
    ]


def test_printer_columns() -> None:
    columns = [
        {"name": "Age", "type": "time", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "N", "type": "integer", "format": "int8", "jsonPath": "spec.n"},
        {"type": "string"},
    ]
    assert causes(crd(additionalPrinterColumns=columns)) == [
        (
            "spec.additionalPrinterColumns[0].type",
            'Invalid value: "time": must be one of boolean,date,integer,number,string',
        ),
        (
            "spec.additionalPrinterColumns[1].format",
            'Invalid value: "int8": must be one of byte,date,date-time,double,float,int32,int64,password',
        ),
        (
            "spec.additionalPrinterColumns[1].JSONPath",
            'Invalid value: "spec.n": must be a simple json path starting with .',
        ),
        ("spec.additionalPrinterColumns[2].name", "Required value"),
        ("spec.additionalPrinterColumns[2].JSONPath", "Required value"),
    ]


def test_webhook_conversion_needs_its_client_config_and_review_versions() -> None:
    bad = crd()
    bad["spec"]["conversion"] = {"strategy": "Webhook"}
    assert causes(bad) == [
        ("spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook"),
        ("spec.conversion.conversionReviewVersions", "Required value"),
    ]
    url = crd()
    url["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": "http://convert.example.com/c?x=1"},
            "conversionReviewVersions": ["v2"],
        },
    }
    assert causes(url) == [
        (
            "spec.conversion.webhookClientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "spec.conversion.webhookClientConfig.url",
            'Invalid value: "x=1": query parameters are not permitted in the URL',
        ),
        (
            "spec.conversion.conversionReviewVersions",
            'Invalid value: ["v2"]: must include at least one of v1, v1beta1',
        ),
    ]


def test_webhook_service_fields() -> None:
    bad = crd()
    service = {"name": "", "namespace": "ns", "port": 0, "path": "/a//B"}
    bad["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"clientConfig": {"service": service}, "conversionReviewVersions": ["v1"]},
    }
    path = "spec.conversion.webhookClientConfig.service"
    assert causes(bad) == [
        (f"{path}.name", "Required value: service name is required"),
        (f"{path}.port", "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"),
        (f"{path}.path", 'Invalid value: "/a//B": segment[1] may not be empty'),
        (f"{path}.path", f'Invalid value: "/a//B": segment[2]: {DNS1123_SUBDOMAIN_ERROR}'),
    ]


def test_strategy_none_forbids_webhook_settings() -> None:
    bad = crd()
    bad["spec"]["conversion"] = {
        "strategy": "None",
        "webhook": {"clientConfig": {"url": "https://c.example.com"}, "conversionReviewVersions": ["v1"]},
    }
    assert causes(bad) == [
        (
            "spec.conversion.webhookClientConfig",
            "Forbidden: should not be set when strategy is not set to Webhook",
        ),
        (
            "spec.conversion.conversionReviewVersions",
            "Forbidden: should not be set when strategy is not set to Webhook",
        ),
    ]


def test_preserve_unknown_fields_cannot_be_set_true() -> None:
    bad = crd()
    bad["spec"]["preserveUnknownFields"] = True
    assert causes(bad) == [
        (
            "spec.preserveUnknownFields",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
            "spec.versions[*].schema instead",
        )
    ]


def test_protected_groups_need_the_api_approval_annotation() -> None:
    bad = crd(group="widgets.k8s.io")
    assert causes(bad) == [
        (
            "metadata.annotations[api-approved.kubernetes.io]",
            'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
            "see https://github.com/kubernetes/enhancements/pull/1111",
        )
    ]
    bad["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    assert causes(bad) == []


def test_group_names_and_scope_are_immutable_on_update() -> None:
    old = crd()
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["kind"] = "Gadget"
    assert update_causes(old, new) == [
        ("spec.scope", 'Invalid value: "Cluster": field is immutable'),
        ("spec.names.kind", 'Invalid value: "Gadget": field is immutable'),
    ]


def test_a_stored_version_may_not_leave_spec_versions() -> None:
    old = two_versions(crd())
    moved = copy.deepcopy(old)
    moved["spec"]["versions"][0]["storage"] = False
    moved["spec"]["versions"][1]["storage"] = True
    assert update_causes(old, moved) == []  # storedVersions is now [v1, v2]
    dropped = copy.deepcopy(moved)
    del dropped["spec"]["versions"][0]
    stored = update_causes(old, dropped)
    assert stored == [
        (
            "status.storedVersions[0]",
            'Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must '
            "remain in spec.versions until a storage migration ensures no data remains persisted in v1 and "
            "removes v1 from status.storedVersions",
        )
    ]
