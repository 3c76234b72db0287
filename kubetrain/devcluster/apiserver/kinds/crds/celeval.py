"""Evaluating a CRD version's compiled `x-kubernetes-validations` rules (celrules.py) on an object.

`validate(compiled, obj, old)` follows `Validator.validate` / `validateExpressions` /
`validateMap` / `validateArray` of k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/
validation.go, with ratcheting as `ratchetingOptions.shouldRatchetError`; `object_causes` is where
the registry strategy (pkg/registry/customresource/strategy.go `Validate` / `ValidateUpdate`, and
status_strategy.go) calls it: only when the schema validation found no blocking error
(`hasBlockingErr`). Values reach CEL as `UnstructuredToVal` types them: a `number` field is a
double even when its JSON has no fraction; at the resource root `metadata` holds only `name` and
`generateName` (`model.WithTypeAndObjectMeta`); an `x-kubernetes-list-type: set` or `map` list is
celib/keyedlists.py's value (compared in any order, merged by `+`). Object properties are visited
in sorted order (upstream: Go map order).
"""

from __future__ import annotations

from typing import Any

import celpy.celtypes as ct

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe
from kubetrain.devcluster.apiserver.kinds.crds import celib
from kubetrain.devcluster.apiserver.kinds.crds.celib import keyedlists, optionals
from kubetrain.devcluster.apiserver.kinds.crds.celrules import Compiled, Node, Rule

# `hasBlockingErr`: schema errors after which the CEL rules are not run.
_BLOCKING = {
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
}
NOT_CHECKED = Cause(
    "FieldValueInvalid",
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)
_OMIT = object()  # field.OmitValueType


def object_causes(compiled: Compiled, obj: Any, old: Any, schema_causes: list[Cause]) -> list[Cause]:
    """The CEL causes the registry strategy appends after the schema's `schema_causes`."""
    if compiled.root is None:
        return []
    if any(c.reason in _BLOCKING for c in schema_causes):
        return [NOT_CHECKED]
    return validate(compiled, obj, old)


def validate(compiled: Compiled, obj: Any, old: Any) -> list[Cause]:
    if compiled.root is None:
        return []
    out: list[Cause] = []
    _walk(compiled.root, "", obj, old, old is not None and obj == old, out)
    return out


def to_cel(value: Any, node_type: str = "") -> Any:
    """A JSON value as CEL sees it (`UnstructuredToVal`, dynamic below the typed node)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        return ct.DoubleType(value) if node_type == "number" else ct.IntType(value)
    if isinstance(value, float):
        return (
            ct.IntType(int(value)) if node_type == "integer" and value.is_integer() else ct.DoubleType(value)
        )
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, list):
        return ct.ListType([to_cel(v) for v in value])
    if isinstance(value, dict):
        return ct.MapType({ct.StringType(k): to_cel(v) for k, v in value.items()})
    return value


def _typed(node: Node | None, value: Any) -> Any:
    """`to_cel` guided by the schema nodes that carry rules (numbers inside them stay JSON-typed)."""
    if node is None:
        return to_cel(value)
    if isinstance(value, dict) and (node.properties or node.additional):
        return ct.MapType(
            {ct.StringType(k): _typed(node.properties.get(k, node.additional), v) for k, v in value.items()}
        )
    if isinstance(value, list) and node.list_type:
        return keyedlists.of(node.list_type, [_typed(node.items, v) for v in value], node.map_keys or ())
    if isinstance(value, list) and node.items is not None:
        return ct.ListType([_typed(node.items, v) for v in value])
    return to_cel(value, node.type)


def _root_view(value: Any) -> Any:
    if not isinstance(value, dict) or not isinstance(value.get("metadata"), dict):
        return value
    md = {k: v for k, v in value["metadata"].items() if k in ("name", "generateName")}
    return {**value, "metadata": md}


def _walk(node: Node, path: str, value: Any, old: Any, ratchet: bool, out: list[Cause]) -> None:
    if value is None:
        return
    _expressions(node, path, value, old, ratchet, out)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) and node.correlatable else {}
        for key in sorted(value):
            sub = node.properties.get(key)
            child = f"{path}.{key}" if path else key
            if sub is None and node.additional is not None:
                sub, child = node.additional, f"{path}[{key}]"
            if sub is None:
                continue
            old_v = old_map.get(key)
            if node.root and key in ("apiVersion", "kind"):
                nested = False  # ratchetingOptions.key: never ratcheted
            else:
                nested = value[key] == old_v if key in old_map else ratchet
            _walk(sub, child, value[key], old_v, nested, out)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            old_item = _correlated_item(node, item, old)
            nested = item == old_item if old_item is not None else ratchet
            _walk(node.items, f"{path}[{i}]", item, old_item, nested, out)


def _correlated_item(node: Node, item: Any, old: Any) -> Any:
    """`makeMapList(...).Get`: the old item with the same list-map keys (other lists: none)."""
    if not node.map_keys or not isinstance(old, list) or not isinstance(item, dict):
        return None
    key = [item.get(k) for k in node.map_keys]
    return next((o for o in old if isinstance(o, dict) and [o.get(k) for k in node.map_keys] == key), None)


def _expressions(node: Node, path: str, value: Any, old: Any, ratchet: bool, out: list[Cause]) -> None:
    if not node.rules:
        return
    view = _root_view(value) if node.root else value
    # The registry validates from a nil *field.Path (`celValidator.Validate(ctx, nil, ...)`), so
    # a cause at the root has the field `<nil>` (Path.String of nil); a fieldPath below it does not.
    where = path or "<nil>"
    self_val = _typed(node, view)
    old_val = None if old is None else _typed(node, _root_view(old) if node.root else old)
    for rule in node.rules:
        if rule.uses_old_self and old is None and not rule.optional_old_self:
            continue  # transition rules run only where an old value exists
        activation: dict[str, Any] = {**celib.NAMESPACES, "self": self_val}
        if rule.optional_old_self:  # `validationActivationWithOldSelf`'s optional activation
            activation["oldSelf"] = optionals.NONE if old_val is None else optionals.of(old_val)
        elif old_val is not None:
            activation["oldSelf"] = old_val
        try:
            result = rule.program.evaluate(activation)
        except Exception as err:  # celpy raises CELEvalError, and Python errors from within
            result = err
        if isinstance(result, Exception):
            out.append(fe.invalid(where, node.type, _eval_detail(result, rule)))
            continue
        if result is True or (isinstance(result, ct.BoolType) and bool(result)):
            continue
        if ratchet and not rule.uses_old_self:
            continue
        at = ".".join(p for p in (path, rule.field_path) if p) if rule.field_path else where
        detail = _message(rule, activation) or _default_message(rule)
        shown = _OMIT if node.type in ("object", "array") else value
        out.append(_cause(at, shown, detail, rule.reason))


def _eval_detail(err: Exception, rule: Rule) -> str:
    """The detail of a rule that failed to evaluate, worded as `validateExpressions` words it."""
    args = getattr(err, "args", ())
    text = str(args[0]) if args else str(err)
    if text.startswith(("no such overload", "found no matching overload")):
        return (  # cel-go's text of the error is "no such overload"
            "'no such overload': call arguments did not match a supported operator, function or macro "
            f"signature for rule: {_rule_text(rule)}"
        )
    return f"{text} evaluating rule: {_rule_text(rule)}"


def _message(rule: Rule, activation: dict[str, Any]) -> str:
    """`evalMessageExpression`: its string when non-empty and one line, else "" (the fallback)."""
    if rule.message_program is None:
        return ""
    try:
        result = rule.message_program.evaluate(activation)
    except Exception:  # evaluation failed: the message falls back (upstream logs it)
        return ""
    if not isinstance(result, str) or isinstance(result, Exception):
        return ""
    text = str(result).strip()
    return text if text and "\n" not in text and len(text) <= 5 * 1024 else ""


def _rule_text(rule: Rule) -> str:
    """`ruleErrorString`."""
    return rule.message.strip() or rule.source.strip()


def _default_message(rule: Rule) -> str:
    """`ruleMessageOrDefault`."""
    return rule.message.strip() if rule.message else f"failed rule: {rule.source.strip()}"


def _cause(path: str, value: Any, detail: str, reason: str) -> Cause:
    """`fieldErrorForReason`."""
    if reason == "FieldValueForbidden":
        return fe.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return fe.required(path, detail)
    if reason == "FieldValueDuplicate":
        if value is _OMIT:
            return Cause("FieldValueDuplicate", "Duplicate value", path)
        return fe.duplicate(path, value)
    if value is _OMIT:
        return Cause("FieldValueInvalid", f"Invalid value: {detail}", path)
    return fe.invalid(path, value, detail)
