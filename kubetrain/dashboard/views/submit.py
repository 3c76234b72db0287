"""Submit from YAML: the manifest a user pasted, and the API server's answer as field errors. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubetrain.api.manifests import load_all
from kubetrain.dashboard.views.kinds import JobKind

MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class FieldError:
    field: str  # "" when the error is about the whole manifest
    message: str


def parse_manifest(
    text: str, kinds: Sequence[JobKind]
) -> tuple[dict[str, Any] | None, JobKind | None, list[FieldError]]:
    """One job manifest of a served kind, or the errors that say why not."""
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        return None, None, [FieldError("", f"the manifest is larger than {MAX_MANIFEST_BYTES // 1024} KiB")]
    try:
        docs = [d for d in load_all(text) if d is not None]
    except yaml.YAMLError as err:
        return None, None, [FieldError("", f"not valid YAML: {err}")]
    if len(docs) != 1:
        return None, None, [FieldError("", f"expected exactly one manifest, found {len(docs)}")]
    doc = docs[0]
    if not isinstance(doc, dict):
        return None, None, [FieldError("", f"the manifest is a {type(doc).__name__}, not a mapping")]
    api_version, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    version = api_version.split("/", 1)[1] if "/" in api_version else api_version
    for k in kinds:
        if k.kind == kind and k.group == group and k.version == version:
            meta = doc.get("metadata")
            if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
                return (
                    None,
                    None,
                    [FieldError("metadata.name", "Required value: name or generateName is required")],
                )
            return doc, k, []
    served = ", ".join(f"{k.kind} ({k.api_version})" for k in kinds)
    return (
        None,
        None,
        [
            FieldError(
                "kind",
                f"{kind or '(none)'} of {api_version or '(no apiVersion)'} is not a served job kind "
                f"(valid: {served})",
            )
        ],
    )


# `<path>: ` where a cause starts: at the start, after "; ", ", ", "[" (kube-apiserver's list of
# causes in an Invalid message: `... is invalid: [spec.x: Invalid: ..., spec.y: Required: ...]`).
_PATH_MESSAGE = re.compile(r"(?:^|; |, |\[|\n|: )((?:spec|metadata|status)(?:\.[\w\[\]\-/\.]+)?): ")


def field_errors(body: Any, message: str) -> list[FieldError]:
    """The field errors of a refused create: the Status's `details.causes` (each with its field),
    else the message split at `<path>: ` (webhook denials word their causes that way)."""
    causes = ((body or {}).get("details") or {}).get("causes") if isinstance(body, dict) else None
    out = [
        FieldError(str(c.get("field") or ""), str(c.get("message") or ""))
        for c in causes or ()
        if isinstance(c, dict)
    ]
    if out:
        return out
    starts = list(_PATH_MESSAGE.finditer(message))
    if not starts:
        return [FieldError("", message)]
    found = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(message)
        found.append(FieldError(m.group(1), message[m.end() : end].strip().rstrip(";,]")))
    head = message[: starts[0].start()].strip().rstrip(":[ ")
    return ([FieldError("", head)] if head else []) + found
