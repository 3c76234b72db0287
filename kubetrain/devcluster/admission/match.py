"""Which admission webhooks apply to a request, as kube-apiserver decides it.

Pure functions used by `kubetrain.devcluster.admission.chain`:

- `selector_matches`: a metav1.LabelSelector (`matchLabels` + `matchExpressions` with In, NotIn,
  Exists, DoesNotExist) against a label map; an empty or absent selector matches everything.
- `rule_matches`: one RuleWithOperations (operations incl. `*`; apiGroups, apiVersions incl. `*`;
  resources `*` (all resources, no subresources), `*/*` (everything), `pods` (no subresources),
  `pods/*`, `*/status`, `pods/status`; scope `*` (default), `Cluster`, `Namespaced`). A request
  for a Namespace object counts as cluster-scoped, as in kube.
- `webhook_applies`: namespaceSelector, objectSelector and rules, in kube's order, including its
  error cases (an invalid selector is an internal error; a namespaceSelector that must be
  evaluated for a namespace that does not exist is a 404 NotFound for that namespace).

matchPolicy `Equivalent` is treated as `Exact`: the only versions devcluster converts between are
a CRD's with a conversion webhook, whose writes are admitted at the storage version
(apiserver/verbs/conversion.py) — as kube-apiserver does for a webhook registered for that version.
matchConditions (CEL) are not evaluated; a webhook with matchConditions is called as if they all
matched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource

ADMISSION_CONFIGURATION_RESOURCES = frozenset(
    {
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    }
)


class SelectorError(ValueError):
    """A label selector that kube-apiserver could not parse."""


class MatchError(Exception):
    """Matching failed in a way kube-apiserver reports to the client (a metav1.Status)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status


def internal_error_status(message: str) -> dict[str, Any]:
    """apierrors.NewInternalError(err) as JSON."""
    return errors.internal_error(message).status()


def bad_request_status(message: str) -> dict[str, Any]:
    """apierrors.NewBadRequest(reason) as JSON."""
    return errors.bad_request(message).status()


def not_found_status(group: str, resource: str, name: str) -> dict[str, Any]:
    """apierrors.NewNotFound(groupResource, name) as JSON."""
    return errors.not_found(GroupResource(group, resource), name).status()


def is_exempt_resource(group: str, resource: str) -> bool:
    """Webhook and policy configurations are never sent to webhooks (kube avoids deadlocks so)."""
    return group == "admissionregistration.k8s.io" and resource in ADMISSION_CONFIGURATION_RESOURCES


def selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    return not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether `labels` satisfy a metav1.LabelSelector. Raises SelectorError if it is invalid."""
    if selector_is_empty(selector):
        return True
    assert selector is not None
    have = dict(labels or {})
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be a map of strings")
    for key, value in match_labels.items():
        if have.get(key) != value:
            return False
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions must be a list")
    return all(_expression_matches(expr, have) for expr in expressions)


def _expression_matches(expr: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(expr, Mapping):
        raise SelectorError("a matchExpressions entry must be an object")
    key = expr.get("key")
    operator = expr.get("operator")
    values = expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError("matchExpressions key must be a non-empty string")
    if operator in ("In", "NotIn"):
        if not values:
            raise SelectorError(
                "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
            )
        if operator == "In":
            return key in labels and labels[key] in values
        return key not in labels or labels[key] not in values
    if operator in ("Exists", "DoesNotExist"):
        if values:
            raise SelectorError(
                f"values: Invalid value: {values}: values set must be empty for exists and does not exist"
            )
        return bool((key in labels) == (operator == "Exists"))
    raise SelectorError(f'"{operator}" is not a valid label selector operator')


def _object_labels(obj: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    labels = metadata.get("labels") or {}
    return dict(labels) if isinstance(labels, Mapping) else {}


def rule_matches(
    rule: Mapping[str, Any],
    *,
    operation: str,
    group: str,
    version: str,
    resource: str,
    subresource: str,
    namespace: str,
) -> bool:
    """One admissionregistration.k8s.io/v1 RuleWithOperations against a request."""
    operations = rule.get("operations") or []
    if "*" not in operations and operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and version not in versions:
        return False
    if not _resource_matches(rule.get("resources") or [], resource, subresource):
        return False
    return _scope_matches(rule.get("scope") or "*", group, resource, namespace)


def _resource_matches(patterns: list[str], resource: str, subresource: str) -> bool:
    for pattern in patterns:
        res, _, sub = pattern.partition("/")
        if (res in ("*", resource)) and (sub in ("*", subresource)):
            return True
    return False


def _scope_matches(scope: str, group: str, resource: str, namespace: str) -> bool:
    is_namespace_object = group == "" and resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace_object and namespace != ""
    if scope == "Cluster":
        return is_namespace_object or namespace == ""
    return True


def webhook_applies(
    webhook: Mapping[str, Any],
    *,
    operation: str,
    group: str,
    version: str,
    resource: str,
    subresource: str,
    namespace: str,
    obj: Mapping[str, Any] | None,
    old_obj: Mapping[str, Any] | None,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    """Whether kube-apiserver would call `webhook` for this request (Matcher.ShouldCallHook).

    Raises MatchError when kube answers the client with an error instead: selector errors only
    surface if the rules match, exactly as in kube.
    """
    is_namespace_object = group == "" and resource == "namespaces"
    if is_namespace_object and not namespace and obj is not None:
        namespace = str((obj.get("metadata") or {}).get("name", ""))
    if is_namespace_object and not namespace and old_obj is not None:
        namespace = str((old_obj.get("metadata") or {}).get("name", ""))

    ns_error: dict[str, Any] | None = None
    try:
        ns_match = _namespace_selector_matches(
            webhook.get("namespaceSelector"),
            operation=operation,
            is_namespace_object=is_namespace_object,
            subresource=subresource,
            namespace=namespace,
            obj=obj,
            old_obj=old_obj,
            namespace_labels=namespace_labels,
        )
    except MatchError as exc:
        ns_match, ns_error = False, exc.status
    if not ns_match and ns_error is None:
        return False

    obj_error: dict[str, Any] | None = None
    try:
        obj_match = _object_selector_matches(webhook.get("objectSelector"), obj, old_obj)
    except SelectorError as exc:
        obj_match, obj_error = False, internal_error_status(str(exc))
    if not obj_match and obj_error is None:
        return False

    rules = webhook.get("rules") or []
    if not any(
        rule_matches(
            rule,
            operation=operation,
            group=group,
            version=version,
            resource=resource,
            subresource=subresource,
            namespace=namespace,
        )
        for rule in rules
    ):
        return False
    if ns_error is not None:
        raise MatchError(ns_error)
    if obj_error is not None:
        raise MatchError(obj_error)
    return True


def _namespace_selector_matches(
    selector: Mapping[str, Any] | None,
    *,
    operation: str,
    is_namespace_object: bool,
    subresource: str,
    namespace: str,
    obj: Mapping[str, Any] | None,
    old_obj: Mapping[str, Any] | None,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    if not namespace and not is_namespace_object:
        # A cluster-scoped resource other than a Namespace is never exempted.
        return True
    if selector_is_empty(selector):
        return True
    if is_namespace_object and not subresource and operation in ("CREATE", "UPDATE"):
        labels = _object_labels(obj)
    elif namespace_labels is not None:
        labels = dict(namespace_labels)
    elif is_namespace_object:
        labels = _object_labels(old_obj)
    else:
        labels = None
    if labels is None:
        raise MatchError(not_found_status("", "namespaces", namespace))
    try:
        return selector_matches(selector, labels)
    except SelectorError as exc:
        raise MatchError(internal_error_status(str(exc))) from exc


def _object_selector_matches(
    selector: Mapping[str, Any] | None,
    obj: Mapping[str, Any] | None,
    old_obj: Mapping[str, Any] | None,
) -> bool:
    if selector_is_empty(selector):
        return True
    selector_matches(selector, {})  # kube parses the selector first: an invalid one is an error
    for candidate in (obj, old_obj):
        labels = _object_labels(candidate)
        if labels is not None and selector_matches(selector, labels):
            return True
    return False
