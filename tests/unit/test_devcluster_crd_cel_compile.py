"""devcluster refuses, on CRD create and update, an `x-kubernetes-validations` rule or
messageExpression that does not parse as CEL, at the path and with the value apiextensions-apiserver
reports (validation.go `ValidateCustomResourceDefinitionOpenAPISchema`, compilation.go
`compileRule`); a rule that parses but calls a function devcluster cannot evaluate is accepted."""

from __future__ import annotations

import copy

from crd_builders import causes, crd, update_causes

SPEC = "spec.validation.openAPIV3Schema.properties[spec]"
RULE = f"{SPEC}.x-kubernetes-validations[0]"


def with_rules(*rules: dict[str, object]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {"replicas": {"type": "integer"}, "url": {"type": "string"}},
        "x-kubernetes-validations": list(rules),
    }


def test_a_rule_that_does_not_parse_is_refused_at_its_path_with_the_rule_as_go_prints_it() -> None:
    assert causes(crd(with_rules({"rule": "self.replicas >"}))) == [
        (
            f"{RULE}.rule",
            'Invalid value: {"Rule":"self.replicas \\u003e","Message":"","MessageExpression":"",'
            '"Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: '
            "ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>'\n"
            " | self.replicas >\n"
            " | ...............^",
        )
    ]


def test_each_broken_rule_is_named_by_its_index_and_the_valid_ones_are_not() -> None:
    fields = [
        f
        for f, _ in causes(
            crd(
                with_rules(
                    {"rule": "self.replicas > 0"},
                    {"rule": "self.replicas == )", "reason": "FieldValueForbidden"},
                )
            )
        )
    ]
    assert fields == [f"{SPEC}.x-kubernetes-validations[1].rule"]


def test_a_broken_rule_in_a_nested_property_and_in_list_items_is_found() -> None:
    nested = {
        "type": "object",
        "properties": {
            "ports": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-validations": [{"rule": "'abc"}]},
            }
        },
    }
    [(field, message)] = causes(crd(nested))
    assert field == f"{SPEC}.properties[ports].items.x-kubernetes-validations[0].rule"
    assert "compilation failed: ERROR: <input>:1:1: Syntax error: token recognition error at: " in message


def test_a_message_expression_that_does_not_parse_is_refused_at_its_own_path() -> None:
    rule = {"rule": "self.replicas > 0", "messageExpression": "'too few: ' + ", "reason": "FieldValueInvalid"}
    [(field, message)] = causes(crd(with_rules(rule)))
    assert field == f"{RULE}.messageExpression"
    assert message.startswith(
        'Invalid value: {"Rule":"self.replicas \\u003e 0","Message":"",'
        '"MessageExpression":"\'too few: \' + ","Reason":"FieldValueInvalid","FieldPath":"",'
        '"OptionalOldSelf":null}: messageExpression compilation failed: ERROR: <input>:1:'
    )


def test_a_rule_that_parses_but_calls_a_function_devcluster_does_not_evaluate_is_accepted() -> None:
    """cel-go with the Kubernetes libraries compiles `isURL`; devcluster skips it at evaluation."""
    assert causes(crd(with_rules({"rule": "isURL(self.url)", "messageExpression": "quantity('1')"}))) == []


def test_rules_in_cels_optional_syntax_are_accepted_and_a_broken_one_beside_them_is_not() -> None:
    """kube-apiserver parses `x.?f`, `m[?k]`, `[?e]` and `{?k: v}` (cel.OptionalTypes); devcluster
    accepts them and skips them at evaluation. A `?` inside a string, or a conditional's, is no
    such syntax, so a rule that does not parse for another reason is still refused."""
    optional = [
        {"rule": "self.?url.orValue('') != 'x'"},
        {"rule": "{'a': 1}[?'a'].hasValue()"},
        {"rule": "[?optional.none(), 1].size() == 1"},
        {"rule": "{?'k': optional.of(1)}.size() <= 1"},
    ]
    assert causes(crd(with_rules(*optional))) == []
    broken = [{"rule": "self.url == '.?' &&"}, {"rule": "self.replicas > 0 ? true :"}]
    assert [f for f, _ in causes(crd(with_rules(*optional, *broken)))] == [
        f"{SPEC}.x-kubernetes-validations[4].rule",
        f"{SPEC}.x-kubernetes-validations[5].rule",
    ]


def test_no_cel_error_is_reported_where_the_schema_itself_is_invalid() -> None:
    """Upstream compiles CEL only without schema errors at or below the node, and only over a
    valid structural schema."""
    broken = with_rules({"rule": "self.replicas >", "message": " "})
    assert [f for f, _ in causes(crd(broken))] == [f"{RULE}.message"]
    untyped = with_rules({"rule": "self.replicas >"})
    del untyped["properties"]["url"]["type"]  # type: ignore[index]
    assert all("compilation failed" not in m for _, m in causes(crd(untyped)))


def test_an_update_keeping_a_rule_that_does_not_parse_is_refused_too() -> None:
    """No ratcheting: upstream compiles a stored rule again on update (findPreexistingExpressions
    only picks the library set), so an unchanged rule that does not parse is refused."""
    old = crd(with_rules({"rule": "self.replicas >"}))
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "R", "type": "integer", "jsonPath": ".spec.replicas"}
    ]
    assert [f for f, _ in update_causes(old, new)] == [f"{RULE}.rule"]
    fixed = copy.deepcopy(old)
    fixed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = with_rules(
        {"rule": "self.replicas > 0"}
    )
    assert update_causes(old, fixed) == []
