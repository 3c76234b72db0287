"""devcluster's metadata validation speaks apimachinery's words (util/validation IsQualifiedName,
IsValidLabelValue; api/validation ValidateOwnerReferences): kubectl users and the conformance
tests see the same causes as from kube-apiserver."""

from __future__ import annotations

from kubetrain.devcluster.apiserver.kinds import objectmeta

NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def test_qualified_names() -> None:
    for good in ("a", "A_b.c-1", "kubetrain.io/job-name", "x" * 63, "example.com/" + "y" * 63):
        assert objectmeta.qualified_name_problems(good) == [], good
    assert objectmeta.qualified_name_problems("bad key") == ["name part " + NAME_RULE]
    assert objectmeta.qualified_name_problems("") == ["name part must be non-empty", "name part " + NAME_RULE]
    assert objectmeta.qualified_name_problems("x" * 64) == ["name part must be no more than 63 characters"]
    assert objectmeta.qualified_name_problems("/x") == ["prefix part must be non-empty"]
    assert objectmeta.qualified_name_problems("Example.com/x")[0].startswith(
        "prefix part a lowercase RFC 1123 subdomain must consist of"
    )
    assert objectmeta.qualified_name_problems("a/b/c")[0].startswith("a qualified name " + NAME_RULE)
    assert objectmeta.qualified_name_problems("name\n") == ["name part " + NAME_RULE]


def test_label_values() -> None:
    assert objectmeta.label_value_problems("") == []
    assert objectmeta.label_value_problems("v" * 63) == []
    assert objectmeta.label_value_problems("v" * 64) == ["must be no more than 63 characters"]
    (problem,) = objectmeta.label_value_problems("has space")
    assert problem.startswith("a valid label must be an empty string or consist of alphanumeric characters")
    assert problem.endswith("regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def test_metadata_causes_name_the_field_and_value() -> None:
    causes = objectmeta.metadata_causes({"labels": {"k": "v" * 64}, "annotations": {"no space": "x"}})
    assert [(c.reason, c.field) for c in causes] == [
        ("FieldValueInvalid", "metadata.labels"),
        ("FieldValueInvalid", "metadata.annotations"),
    ]
    assert causes[0].message == f'Invalid value: "{"v" * 64}": must be no more than 63 characters'
    assert objectmeta.metadata_causes({"annotations": {"Upper.Case/Key": "ok"}}) == []
    big = objectmeta.metadata_causes({"annotations": {"a": "x" * (256 * 1024)}})
    assert [(c.reason, c.field) for c in big] == [("FieldValueTooLong", "metadata.annotations")]


def test_owner_references() -> None:
    def ref(name: str, controller: bool) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": name,
            "uid": f"uid-{name}",
            "controller": controller,
        }

    assert objectmeta.owner_reference_causes({"ownerReferences": [ref("a", True), ref("b", False)]}) == []
    (two,) = objectmeta.owner_reference_causes({"ownerReferences": [ref("a", True), ref("b", True)]})
    assert two.field == "metadata.ownerReferences"
    assert two.message.endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and ConfigMap/b"
    )
    empty = objectmeta.owner_reference_causes(
        {"ownerReferences": [{"apiVersion": "apps/", "controller": False}]}
    )
    assert [c.field for c in empty] == [
        "metadata.ownerReferences.apiVersion",
        "metadata.ownerReferences.kind",
        "metadata.ownerReferences.name",
        "metadata.ownerReferences.uid",
    ]
    (event,) = objectmeta.owner_reference_causes({"ownerReferences": [{**ref("e", False), "kind": "Event"}]})
    assert event.message.endswith("/v1, Kind=Event is disallowed from being an owner")
