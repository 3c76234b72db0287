"""Validation of the metadata every kind shares, as apimachinery's api/validation/objectmeta.go
does on create and update (ValidateObjectMeta, ValidateObjectMetaUpdate): labels, annotations
and owner references; and apimachinery util/validation's DNS name checks and their wording
(IsDNS1035Label, IsDNS1123Label, IsDNS1123Subdomain), which names of every kind use, and
api/validation/path's IsValidPathSegmentName (a core/v1 Event's name needs only that).

- Label keys are qualified names (`[prefix/]name`: a DNS-1123 subdomain prefix, a name of at
  most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends); label values are empty or
  such a name (apimachinery util/validation IsQualifiedName, IsValidLabelValue). Every problem is
  a FieldValueInvalid cause on `metadata.labels`, in Go's wording.
- Annotation keys are qualified names (case-insensitively) and all annotations together may
  hold at most 256 KiB (`metadata.annotations`, FieldValueTooLong).

- Each reference needs an apiVersion with a version, a kind, a name and a uid ("must not be
  empty"; the field is `metadata.ownerReferences.<field>`, without an index, as upstream) and may
  not point at a core/v1 Event.
- At most one reference has `controller: true` (what makes "adopt" safe: two controllers are a
  422 naming both, `Kind/name`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kubetrain.api.dnsnames import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    MAX_LABEL_LENGTH,
    MAX_SUBDOMAIN_LENGTH,
)
from kubetrain.devcluster.apiserver.base.errors import Cause

FIELD = "metadata.ownerReferences"
LABELS = "metadata.labels"
ANNOTATIONS = "metadata.annotations"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(_NAME_FMT)
_VALUE_FMT = f"({_NAME_FMT})?"
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
DNS1035_ERROR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery `validation.IsDNS1035Label`."""
    return _dns_name_errors(value, MAX_LABEL_LENGTH, DNS1035_LABEL, DNS1035_ERROR)


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery `validation.IsDNS1123Label`: a name that would be a subdomain but for its
    dots is told "must not contain dots"."""
    out = [f"must be no more than {MAX_LABEL_LENGTH} characters"] if len(value) > MAX_LABEL_LENGTH else []
    if not DNS1123_LABEL.fullmatch(value):
        out.append("must not contain dots" if DNS1123_SUBDOMAIN.fullmatch(value) else DNS1123_LABEL_ERROR)
    return out


def dns1123_subdomain_errors(value: str) -> list[str]:
    """apimachinery `validation.IsDNS1123Subdomain`."""
    return _dns_name_errors(value, MAX_SUBDOMAIN_LENGTH, DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_ERROR)


def path_segment_name_problems(value: str) -> list[str]:
    """apimachinery api/validation/path `IsValidPathSegmentName`: what BeforeCreate asks of every
    name (`ValidatePathSegmentName`), all a name must be when its kind's strategy checks none."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in value]


def path_segment_prefix_problems(value: str) -> list[str]:
    """apimachinery `IsValidPathSegmentPrefix`: a generateName's check where the name's is
    `IsValidPathSegmentName` (`ValidatePathSegmentName(prefix=true)`; `.` and `..` allowed)."""
    return [f"may not contain '{part}'" for part in ("/", "%") if part in value]


def dns1123_subdomain_prefix_errors(value: str) -> list[str]:
    """apimachinery `NameIsDNSSubdomain(prefix=true)`, a generateName's check: a trailing dash is
    masked first (`maskTrailingDash`, which, as upstream's, drops the last two characters and
    appends an 'a')."""
    masked = value[:-2] + "a" if len(value) > 1 and value.endswith("-") else value
    return dns1123_subdomain_errors(masked)


def _dns_name_errors(value: str, max_length: int, pattern: re.Pattern[str], error: str) -> list[str]:
    """Both checks' shape: the length (apimachinery `MaxLenError`), then the pattern."""
    out = []
    if len(value) > max_length:
        out.append(f"must be no more than {max_length} characters")
    if not pattern.fullmatch(value):
        out.append(error)
    return out


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError wording."""
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {shown}, regex used for validation is '{fmt}')"


PORT_RANGE = "must be between 1 and 65535, inclusive"  # validation.InclusiveRangeError(1, 65535)


def port_name_problems(name: str) -> list[str]:
    """apimachinery util/validation `IsValidPortName` (an IANA_SVC_NAME)."""
    problems = []
    if len(name) > 15:
        problems.append("must be no more than 15 characters")
    if not name or any(ch not in "-abcdefghijklmnopqrstuvwxyz0123456789" for ch in name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= ch <= "z" for ch in name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def qualified_name_problems(value: str) -> list[str]:
    """apimachinery util/validation IsQualifiedName."""
    parts = value.split("/")
    problems: list[str] = []
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix) > MAX_SUBDOMAIN_LENGTH:
                problems.append(f"prefix part must be no more than {MAX_SUBDOMAIN_LENGTH} characters")
            if not DNS1123_SUBDOMAIN.fullmatch(prefix):
                problems.append("prefix part " + DNS1123_SUBDOMAIN_ERROR)
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _NAME.fullmatch(name):
        problems.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return problems


def label_value_problems(value: str) -> list[str]:
    """apimachinery util/validation IsValidLabelValue."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if value and not _NAME.fullmatch(value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or " + _NAME_MSG.removeprefix("must "),
                _VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return problems


def label_causes(meta: dict[str, Any]) -> list[Cause]:
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        return []
    causes: list[Cause] = []
    for key, value in labels.items():
        causes += [
            Cause("FieldValueInvalid", f"Invalid value: {_shown(key)}: {p}", LABELS)
            for p in qualified_name_problems(key)
        ]
        text = value if isinstance(value, str) else ""
        causes += [
            Cause("FieldValueInvalid", f"Invalid value: {_shown(text)}: {p}", LABELS)
            for p in label_value_problems(text)
        ]
    return causes


def annotations_size(annotations: Mapping[str, Any]) -> int:
    """The bytes of every key and value, as `ValidateAnnotationsSize` counts them."""
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())


def annotation_causes(meta: dict[str, Any]) -> list[Cause]:
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        return []
    causes: list[Cause] = []
    for key in annotations:
        causes += [
            Cause("FieldValueInvalid", f"Invalid value: {_shown(key)}: {p}", ANNOTATIONS)
            for p in qualified_name_problems(key.lower())
        ]
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
                ANNOTATIONS,
            )
        )
    return causes


def metadata_causes(meta: dict[str, Any], standard_finalizers: bool = False) -> list[Cause]:
    """What ValidateObjectMeta finds wrong with labels, annotations, owner references and
    finalizers; `standard_finalizers`: the kind's validation is core's `ValidateObjectMeta`,
    which also refuses an unqualified finalizer that is not a standard one."""
    causes = label_causes(meta) + annotation_causes(meta) + owner_reference_causes(meta)
    causes += finalizer_causes(meta)
    return causes + (standard_finalizer_causes(meta) if standard_finalizers else [])


FINALIZERS = "metadata.finalizers"
ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"
STANDARD_FINALIZERS = ("kubernetes", ORPHAN, FOREGROUND)  # core helper's standardFinalizers


def _finalizers(meta: dict[str, Any]) -> list[str]:
    found = meta.get("finalizers") or []
    return [str(f) for f in found] if isinstance(found, list) else []


def finalizer_causes(meta: dict[str, Any]) -> list[Cause]:
    """apimachinery `ValidateFinalizers`: each a qualified name (at `metadata.finalizers`, no
    index), and not both `orphan` and `foregroundDeletion`."""
    finalizers = _finalizers(meta)
    causes = [
        Cause("FieldValueInvalid", f"Invalid value: {_shown(f)}: {p}", FINALIZERS)
        for f in finalizers
        for p in qualified_name_problems(f)
    ]
    if ORPHAN in finalizers and FOREGROUND in finalizers:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {_shown(finalizers)}: "
                f"finalizer {ORPHAN} and {FOREGROUND} cannot be both set",
                FINALIZERS,
            )
        )
    return causes


def standard_finalizer_causes(meta: dict[str, Any]) -> list[Cause]:
    """core validation's `validateKubeFinalizerName`: a finalizer without a `/` must be one of
    `kubernetes`, `orphan`, `foregroundDeletion` (at `metadata.finalizers[i]`)."""
    return [
        Cause(
            "FieldValueInvalid",
            f"Invalid value: {_shown(f)}: "
            "name is neither a standard finalizer name nor is it fully qualified",
            f"{FINALIZERS}[{i}]",
        )
        for i, f in enumerate(_finalizers(meta))
        if "/" not in f and f not in STANDARD_FINALIZERS
    ]


def finalizer_warnings(meta: dict[str, Any], old_meta: dict[str, Any] | None = None) -> list[str]:
    """apiextensions customresource strategy's `generateWarningsFromObj`: a custom resource's
    finalizers added by this write are warned about (its `validateKubeFinalizerName`), where a
    built-in kind's are refused."""
    kept = set(_finalizers(old_meta)) if old_meta is not None else set()
    out = []
    for i, f in enumerate(_finalizers(meta)):
        if f in kept:
            continue
        at = f"{FINALIZERS}[{i}]: {_shown(f)}"
        out += [f"{at}: {p}" for p in qualified_name_problems(f)]
        if "/" not in f and f not in STANDARD_FINALIZERS:
            out.append(
                f"{at}: prefer a domain-qualified finalizer name to avoid accidental conflicts with "
                "other finalizer writers"
            )
    return out


def _shown(value: Any) -> str:
    """A field.Invalid value as kube-apiserver prints it: strings quoted, the rest as JSON."""
    return json.dumps(value, separators=(",", ":"))


def owner_reference_causes(meta: dict[str, Any]) -> list[Cause]:
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list):
        return [Cause("FieldValueInvalid", f"Invalid value: {_shown(refs)}: must be a list", FIELD)]
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(
                Cause("FieldValueInvalid", f"Invalid value: {_shown(ref)}: must be an object", FIELD)
            )
            continue
        api_version = str(ref.get("apiVersion") or "")
        version = api_version.rsplit("/", 1)[-1]
        if not version:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(api_version)}: version must not be empty",
                    f"{FIELD}.apiVersion",
                )
            )
        for field in ("kind", "name", "uid"):
            if not ref.get(field):
                value = _shown(str(ref.get(field) or ""))
                causes.append(
                    Cause(
                        "FieldValueInvalid", f"Invalid value: {value}: must not be empty", f"{FIELD}.{field}"
                    )
                )
        if api_version == "v1" and ref.get("kind") == "Event":
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(ref)}: /v1, Kind=Event is disallowed from being an owner",
                    FIELD,
                )
            )
        if ref.get("controller") is True:
            name = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {_shown(refs)}: Only one reference can have Controller set to true. "
                        f'Found "true" in references for {first_controller} and {name}',
                        FIELD,
                    )
                )
            else:
                first_controller = name
    return causes
