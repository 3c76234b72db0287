"""Rules on a CRD as a whole object over its lifetime, as apiextensions-apiserver applies them.

Ports (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go) of
`ValidateCustomResourceDefinitionStoredVersions` (every stored version stays in spec.versions
until a storage migration removes it from status.storedVersions), the immutable fields of
`validateCustomResourceDefinitionSpecUpdate`, `validateAPIApproval` (apihelpers
`GetAPIApprovalState`: groups under k8s.io and kubernetes.io need the
api-approved.kubernetes.io annotation) and `validatePreserveUnknownFields`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe

APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_PROTECTED = ("k8s.io", "kubernetes.io")


def stored_versions_causes(stored: list[str], versions: list[Obj]) -> list[Cause]:
    """`ValidateCustomResourceDefinitionStoredVersions`."""
    path = "status.storedVersions"
    if not stored:
        return [fe.invalid(path, fe.Go("[]string(nil)"), "must have at least one stored version")]
    out: list[Cause] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in versions:
        vname = v.get("name") or ""
        if v.get("storage") and vname not in remaining:
            out.append(fe.invalid(path, stored, "must have the storage version " + vname))
        remaining.pop(vname, None)
    for stale, i in sorted(remaining.items(), key=lambda item: item[1]):
        out.append(
            fe.invalid(
                f"{path}[{i}]",
                stale,
                f"missing from spec.versions; {stale} was previously a storage version, and must remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in {stale} and "
                f"removes {stale} from status.storedVersions",
            )
        )
    return out


def immutable_causes(spec: Obj, old: Obj) -> list[Cause]:
    """`validateCustomResourceDefinitionSpecUpdate` for an Established CRD (devcluster's always are)."""
    out: list[Cause] = []
    names, old_names = spec.get("names") or {}, old.get("names") or {}
    pairs = (
        ("spec.scope", spec.get("scope"), old.get("scope")),
        ("spec.names.kind", names.get("kind"), old_names.get("kind")),
        ("spec.group", spec.get("group"), old.get("group")),
        ("spec.names.plural", names.get("plural"), old_names.get("plural")),
    )
    for path, new, before in pairs:
        if new != before:
            out.append(fe.invalid(path, new or "", "field is immutable"))
    return out


def _approval(annotations: dict[str, str]) -> tuple[str, str]:
    """apihelpers `GetAPIApprovalState`."""
    value = annotations.get(APPROVAL_ANNOTATION, "")
    see = "see https://github.com/kubernetes/enhancements/pull/1111"
    if not value:
        return "missing", f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", {see}'
    if value.startswith("unapproved"):
        return "bypassed", ""
    try:
        u = urlsplit(value)
        if u.scheme and u.netloc:
            return "approved", ""
    except ValueError:
        pass
    return "invalid", (
        f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a URL '
        f'or a reason starting with "unapproved", {see}'
    )


def api_approval_causes(crd: Obj, old: Obj | None) -> list[Cause]:
    """`validateAPIApproval`: groups under k8s.io / kubernetes.io need the approval annotation."""
    group = (crd.get("spec") or {}).get("group") or ""
    if not any(group == d or group.endswith("." + d) for d in _PROTECTED):
        return []
    state, reason = _approval(crd.get("metadata", {}).get("annotations") or {})
    if old is not None and _approval(old.get("metadata", {}).get("annotations") or {})[0] == state:
        return []
    path = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [fe.required(path, reason)]
    if state == "invalid":
        return [fe.invalid(path, crd["metadata"]["annotations"][APPROVAL_ANNOTATION], reason)]
    return []


def preserve_unknown_fields_causes(crd: Obj, old: Obj | None) -> list[Cause]:
    """`validatePreserveUnknownFields`: v1 CRDs prune; only one that already preserved may keep it."""
    if old is not None and (old.get("spec") or {}).get("preserveUnknownFields") is True:
        return []
    if (crd.get("spec") or {}).get("preserveUnknownFields") is not True:
        return []
    detail = "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema"
    return [fe.invalid("spec.preserveUnknownFields", True, detail + " instead")]
