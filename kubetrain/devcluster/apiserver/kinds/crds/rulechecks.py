"""The `x-kubernetes-validations` entries of a CRD's schema, checked when the CRD is written.

Ports of k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go:
`rule_causes`, the static checks of each entry (rule present, message without line breaks,
reason supported, fieldPath non-empty); `compile_causes`, the compile errors devcluster can judge
(a rule or messageExpression that does not parse, `celrules.syntax_error`). schema.py calls both
for every schema node; evaluating the rules is celrules.py's and celeval.py's.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds.crds import celrules

Schema = dict[str, Any]
_RULE_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


def rule_causes(s: Schema, path: str) -> list[Cause]:
    """The static checks of `x-kubernetes-validations` entries."""
    out: list[Cause] = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        at = f"{path}.x-kubernetes-validations[{i}]"
        raw_rule, message = rule.get("rule") or "", rule.get("message") or ""
        trimmed_rule, trimmed_msg = raw_rule.strip(), message.strip()
        if not trimmed_rule:
            out.append(fe.required(f"{at}.rule", "rule is not specified"))
        elif message and not trimmed_msg:
            out.append(fe.invalid(f"{at}.message", message, "must be non-empty if specified"))
        elif _has_newlines(trimmed_msg):
            out.append(fe.invalid(f"{at}.message", message, "must not contain line breaks"))
        elif _has_newlines(trimmed_rule) and not trimmed_msg:
            out.append(fe.required(f"{at}.message", "message must be specified if rule contains line breaks"))
        expression = rule.get("messageExpression") or ""
        if expression and not expression.strip():
            out.append(
                fe.required(f"{at}.messageExpression", "messageExpression must be non-empty if specified")
            )
        reason = rule.get("reason")
        if reason is not None and reason not in _RULE_REASONS:
            out.append(fe.not_supported(f"{at}.reason", reason, _RULE_REASONS))
        field_path = rule.get("fieldPath") or ""
        if field_path and not field_path.strip():
            out.append(fe.invalid(f"{at}.fieldPath", field_path, "must be non-empty if specified"))
        if _has_newlines(field_path):
            out.append(fe.invalid(f"{at}.fieldPath", field_path, "must not contain line breaks"))
    return out


def _rule_value(rule: Schema) -> fe.Go:
    """An `apiextensions.ValidationRule` as `field.Error` prints it: Go's json.Marshal of the
    internal struct (no json tags, so Go field names; `<`, `>`, `&` escaped as Go escapes them)."""
    value = {
        "Rule": rule.get("rule") or "",
        "Message": rule.get("message") or "",
        "MessageExpression": rule.get("messageExpression") or "",
        "Reason": rule.get("reason"),
        "FieldPath": rule.get("fieldPath") or "",
        "OptionalOldSelf": rule.get("optionalOldSelf"),
    }
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return fe.Go(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def compile_causes(s: Schema, path: str) -> list[Cause]:
    """The CEL compile errors of `cel.Compile` (pkg/apiserver/schema/cel/compilation.go
    `compileRule`) that devcluster can judge: a rule, or else its messageExpression, that does
    not parse (see `celrules.syntax_error`). Upstream checks the messageExpression only once the
    rule compiled; a rule that parses is taken as compiling. There is no update leniency: upstream
    compiles an unchanged stored rule again (only choosing the library set by whether it is
    stored), so a rule that does not parse is refused on update too."""
    out: list[Cause] = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        at = f"{path}.x-kubernetes-validations[{i}]"
        if not str(rule.get("rule") or "").strip():
            continue
        if (issue := celrules.syntax_error(str(rule["rule"]))) is not None:
            out.append(fe.invalid(f"{at}.rule", _rule_value(rule), f"compilation failed: {issue}"))
        elif (
            rule.get("messageExpression")
            and (issue := celrules.syntax_error(str(rule["messageExpression"]))) is not None
        ):
            out.append(
                fe.invalid(
                    f"{at}.messageExpression",
                    _rule_value(rule),
                    f"messageExpression compilation failed: {issue}",
                )
            )
    return out
