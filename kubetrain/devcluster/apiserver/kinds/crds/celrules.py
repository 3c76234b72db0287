"""`x-kubernetes-validations` (CEL) rules of a CRD's structural schema, compiled and evaluated.

A port of k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go with the CEL
evaluator of the `cel-python` package (`celpy`):

- `compile_schema(schema)` (`NewValidator`): every schema node's rules compiled once, for one CRD
  version; nodes without rules below them are left out. A rule `celpy` cannot parse, or that calls
  a function or macro outside the supported set (`SUPPORTED`), is skipped and named in
  `Compiled.skipped` rather than refusing the CRD or its objects.
- `validate(compiled, obj, old)` (`Validator.Validate`): rules run on every non-null value the
  schema node describes, `self` bound to it and, on update, `oldSelf` to the correlated old value
  (map properties by name, `x-kubernetes-list-type: map` items by their keys). A transition rule
  (naming `oldSelf`) runs only where an old value exists. A failed rule's cause is
  `fieldErrorForReason` over the node's path (plus the rule's `fieldPath`), the value (omitted for
  objects and arrays) and the detail: the
  `messageExpression` result when it evaluates to a non-empty one-line string, else `message`,
  else `failed rule: <rule>`. A rule that fails to evaluate gives `<error> evaluating rule: <rule>`.
- Ratcheting (`CRDValidationRatcheting`, on by default): on update, a non-transition rule's failure
  at a value equal to its correlated old value (or, where the value does not correlate, at the
  nearest correlated ancestor equal to its old value) is not an error.

The Kubernetes CEL libraries evaluated are celib/'s: lists, regex, URLs, quantities, IPs, CIDRs,
semver, named formats, and CEL optionals (so `optionalOldSelf`: such a rule also runs where there
is no old value, `oldSelf` then `optional.none()`, else `optional.of(old)`). Not covered: cost
estimation and runtime cost budgets; `format.named`, `format.datetime` and cel-go's other strings
functions (`charAt`, `replace`, `substring`, `format`, ...), sets and two-variable
comprehensions; rules using the optional syntax `x.?f` (accepted at CRD write, skipped);
rules under `allOf`/`anyOf`/`oneOf`/`not`; typed `format`s (date-time as timestamp, duration);
the error text of a runtime error is celpy's, not cel-go's (e.g. `no such key`).
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import celpy
import celpy.celtypes as ct
import lark
from celpy.celparser import CELParseError

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds.crds import celib
from kubetrain.devcluster.apiserver.kinds.crds.celib import keyedlists

log = logging.getLogger(__name__)

_MACROS = {"all", "exists", "exists_one", "map", "filter", "has"}


def _lower_ascii(s: ct.StringType) -> ct.StringType:
    return ct.StringType("".join(c.lower() if c.isascii() else c for c in s))


def _upper_ascii(s: ct.StringType) -> ct.StringType:
    return ct.StringType("".join(c.upper() if c.isascii() else c for c in s))


def _trim(s: ct.StringType) -> ct.StringType:
    return ct.StringType(s.strip())


def _join(items: ct.ListType, sep: ct.StringType | None = None) -> ct.StringType:
    return ct.StringType(("" if sep is None else str(sep)).join(str(i) for i in items))


def _split(s: ct.StringType, sep: ct.StringType) -> ct.ListType:
    return ct.ListType([ct.StringType(p) for p in str(s).split(str(sep))])


# The cel-go strings extensions and the Kubernetes libraries (celib/) devcluster adds to celpy's
# standard functions.
_EXTENSIONS: dict[str, Callable[..., Any]] = {
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "trim": _trim,
    "join": _join,
    "split": _split,
    **celib.FUNCTIONS,
    "k8s.lists.min": celib.FUNCTIONS["min"],
    # the operators on set and map lists (celib/keyedlists.py); other values keep celpy's
    "_==_": keyedlists.eq,
    "_!=_": keyedlists.ne,
    "_+_": keyedlists.add,
}
SUPPORTED = frozenset(celpy.evaluation.base_functions) | _MACROS | frozenset(_EXTENSIONS)
_LIMIT = sys.getrecursionlimit()
_ENV = celpy.Environment()  # which raises the process's recursion limit to 2500:
sys.setrecursionlimit(_LIMIT)  # other code relies on the limit it had (a rule too deep fails alone)


@dataclass
class Rule:
    source: str
    program: Any
    uses_old_self: bool
    message: str
    message_program: Any
    reason: str
    field_path: str
    optional_old_self: bool = False  # oldSelf an optional, and the rule run without an old value


@dataclass
class Node:
    """`Validator`: a schema node's compiled rules and those of its children."""

    type: str
    rules: list[Rule] = field(default_factory=list)
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    items: Node | None = None
    map_keys: list[str] | None = None  # an x-kubernetes-list-type: map list's keys
    list_type: str = ""  # x-kubernetes-list-type: "set" and "map" lists compare in any order
    correlatable: bool = True  # MapIsCorrelatable(x-kubernetes-map-type)
    root: bool = False


@dataclass
class Compiled:
    root: Node | None
    skipped: list[str]


def _functions(tree: lark.Tree[Any]) -> set[str]:
    names: set[str] = set()
    for sub in tree.iter_subtrees():
        if sub.data == "member_dot_arg" and len(sub.children) > 1:
            names.add(str(sub.children[1]))  # receiver.name(args)
        elif sub.data in ("ident_arg", "dot_ident_arg") and sub.children:
            names.add(str(sub.children[0]))  # name(args)
    return names


def _idents(tree: lark.Tree[Any]) -> set[str]:
    return {str(t) for t in tree.scan_values(lambda v: isinstance(v, lark.Token) and v.type == "IDENT")}


def _program(source: str) -> tuple[Any, set[str]]:
    """The celpy program of an expression and the identifiers it names; ValueError if unsupported."""
    try:
        ast = _ENV.compile(source)
    except CELParseError as err:
        raise ValueError(f"does not parse: {str(err).splitlines()[0]}") from None
    unsupported = sorted(_functions(ast) - SUPPORTED)
    if unsupported:
        raise ValueError(f"calls unsupported function(s) {', '.join(unsupported)}")
    _rename_min(ast)
    return _ENV.program(ast, functions=_EXTENSIONS), _idents(ast)


_LIST_MIN = "k8s.lists.min"  # not an identifier CEL can spell, so no rule can call it directly


def _rename_min(tree: lark.Tree[Any]) -> None:
    """celpy evaluates `x.min()` as its own macro (Python's `min`); the Kubernetes lists
    library's `min` is called instead under another name."""
    for sub in tree.iter_subtrees():
        if sub.data == "member_dot_arg" and len(sub.children) > 1 and str(sub.children[1]) == "min":
            token = sub.children[1]
            if isinstance(token, lark.Token):
                sub.children[1] = token.update(value=_LIST_MIN)


def syntax_error(source: str) -> str | None:
    """cel-go's `issues.String()` for an expression that does not parse, None if it parses.

    The form of cel-go's `Errors.ToDisplayString` (`ERROR: <input>:line:column: Syntax error: ...`,
    then the source line and a caret under the column); the detail, and where the parser stops,
    are celpy's (lark's) rather than ANTLR's, so the words after `Syntax error:` and the column
    may differ from kube-apiserver's. Only parsing is judged: a rule that parses but names an
    unknown function or does not type-check is not an error here.
    """
    try:
        _ENV.compile(source)
    except CELParseError as err:
        if uses_optional_syntax(source):
            return None  # kube-apiserver parses it (cel.OptionalTypes); celpy cannot: skipped, never refused
        cause = err.__context__
        line, column = err.line or 1, err.column or 1
        lines = source.splitlines() or [""]
        if isinstance(cause, lark.exceptions.UnexpectedToken) and cause.token.type == "$END":
            detail = "mismatched input '<EOF>'"
            line, column = len(lines), len(lines[-1]) + 1  # cel-go places EOF after the last character
        elif isinstance(cause, lark.exceptions.UnexpectedToken):
            detail = f"mismatched input '{cause.token}'"
        elif isinstance(cause, lark.exceptions.UnexpectedCharacters):
            detail = f"token recognition error at: '{cause.char}'"
        else:
            detail = str(err).splitlines()[0] if str(err) else "invalid expression"
        text = lines[min(line, len(lines)) - 1]
        return f"ERROR: <input>:{line}:{column}: Syntax error: {detail}\n | {text}\n | {'.' * (column - 1)}^"
    return None


_STRING_LITERALS = re.compile(
    r'[rR]?(?:"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')'
)
_OPTIONAL_SYNTAX = re.compile(r"[.\[{,]\s*\?")


def uses_optional_syntax(source: str) -> bool:
    """Whether an expression uses CEL's optional syntax (`x.?f`, `m[?k]`, `[?e]`, `{?k: v}`),
    which kube-apiserver's CEL environment enables (cel-go parser `EnableOptionalSyntax`, through
    `cel.OptionalTypes()` in k8s.io/apiserver pkg/cel/environment/base.go) and celpy's grammar
    lacks. A `?` right after `.`, `[`, `{` or `,` outside string literals can only be that syntax:
    a conditional's `?` follows its condition."""
    return bool(_OPTIONAL_SYNTAX.search(_STRING_LITERALS.sub('""', source)))


def _field_path(path: str) -> str:
    """The rule's `fieldPath` as a path under the node (`.a['b.c']` → `a.b.c`, as `ValidFieldPath`)."""
    return re.sub(r"\['((?:[^'\\]|\\.)*)'\]", lambda m: "." + m.group(1).replace("\\'", "'"), path).lstrip(
        "."
    )


def compile_schema(schema: Obj | None, skipped: list[str] | None = None) -> Compiled:
    """`NewValidator(schema, isResourceRoot=true)`: the rules of every node, compiled once."""
    skipped = [] if skipped is None else skipped
    root = _compile(schema, "", skipped) if isinstance(schema, dict) else None
    if root is not None and not _has_rules(root):
        root = None  # nothing to evaluate (number nodes alone are kept only for typing)
    if root is not None:
        root.root = True
    return Compiled(root, skipped)


def _has_rules(node: Node | None) -> bool:
    if node is None:
        return False
    children = [*node.properties.values(), node.additional, node.items]
    return bool(node.rules) or any(_has_rules(c) for c in children)


def _compile(s: Obj, at: str, skipped: list[str]) -> Node | None:
    node = Node(type=str(s.get("type") or ""))
    for raw in s.get("x-kubernetes-validations") or []:
        if not isinstance(raw, dict) or not str(raw.get("rule") or "").strip():
            continue
        source = str(raw["rule"])
        try:
            program, idents = _program(source)
            message_program = None
            if raw.get("messageExpression"):
                message_program, _ = _program(str(raw["messageExpression"]))
        except ValueError as err:
            skipped.append(f"{at or '<root>'}: {source.strip()!r} {err}")
            continue
        node.rules.append(
            Rule(
                source=source,
                program=program,
                uses_old_self="oldSelf" in idents,
                message=str(raw.get("message") or ""),
                message_program=message_program,
                reason=str(raw.get("reason") or ""),
                field_path=_field_path(str(raw.get("fieldPath") or "")),
                optional_old_self=raw.get("optionalOldSelf") is True,
            )
        )
    for name, sub in sorted((s.get("properties") or {}).items()):
        if isinstance(sub, dict) and (child := _compile(sub, f"{at}.{name}", skipped)) is not None:
            node.properties[name] = child
    if isinstance(s.get("additionalProperties"), dict):
        node.additional = _compile(s["additionalProperties"], f"{at}[*]", skipped)
    if isinstance(s.get("items"), dict):
        node.items = _compile(s["items"], f"{at}[*]", skipped)
    list_type = s.get("x-kubernetes-list-type")
    kept = node.rules or node.properties or node.additional or node.items or node.type == "number"
    if not kept and list_type not in ("set", "map"):
        return None  # kept for number nodes and set/map lists: a rule above sees their type
    if list_type in ("set", "map"):
        node.list_type = str(list_type)
    if list_type == "map":
        node.map_keys = [str(k) for k in s.get("x-kubernetes-list-map-keys") or []]
    node.correlatable = s.get("x-kubernetes-map-type") in (None, "granular", "atomic")
    return node


def log_skipped(crd_name: str, compiled: Compiled) -> None:
    """Name the rules devcluster does not evaluate, once per compiled CRD version."""
    if compiled.skipped:
        log.warning(
            "CRD %s: %d x-kubernetes-validations rule(s) not evaluated: %s",
            crd_name,
            len(compiled.skipped),
            "; ".join(compiled.skipped),
        )
