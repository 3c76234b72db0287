"""Secrets and ConfigMaps as kube-apiserver stores and validates them (pkg/apis/core/v1
conversion and defaults, pkg/apis/core/validation ValidateSecret(Update),
ValidateConfigMap(Update)):

- A Secret's `stringData` is write-only: each entry overwrites `data[key]` (base64-encoded) and
  the field itself is never stored; a Secret without `type` is `Opaque`.
- Keys of `data` (and a ConfigMap's `binaryData`) are config keys (`[-._a-zA-Z0-9]+`, at most 253
  characters, not `.`/`..`, not starting with `..`); a ConfigMap key may not be in both maps.
- `kubernetes.io/tls` needs `data[tls.crt]` and `data[tls.key]`, `kubernetes.io/ssh-auth` a
  non-empty `data[ssh-privatekey]`, `kubernetes.io/basic-auth` a username or a password.
- On update a Secret's `type` is immutable, and an object created `immutable: true` keeps its
  data, binaryData and `immutable` (FieldValueForbidden).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause

_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_KEY_RULE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
    "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_IMMUTABLE = "Forbidden: field is immutable when `immutable` is set"


def fold_string_data(secret: dict[str, Any]) -> None:
    """Convert_v1_Secret_To_core_Secret and SetDefaults_Secret, in place."""
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = dict(secret.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
    if not secret.get("type"):
        secret["type"] = "Opaque"


def key_problems(key: str) -> list[str]:
    """apimachinery util/validation IsConfigMapKey."""
    problems = []
    if len(key) > 253:
        problems.append("must be no more than 253 characters")
    if not _KEY.fullmatch(key):
        problems.append(_KEY_RULE)
    if not problems:
        if key == ".":
            problems.append("must not be '.'")
        elif key == "..":
            problems.append("must not be '..'")
        elif key.startswith(".."):
            problems.append("must not start with '..'")
    return problems


def _key_causes(field: str, values: Any) -> list[Cause]:
    causes = []
    for key in values if isinstance(values, dict) else {}:
        for problem in key_problems(key):
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{key}": {problem}', f"{field}[{key}]"))
    return causes


def _required(field: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", field)


def _immutable_causes(
    obj: dict[str, Any], old: dict[str, Any] | None, fields: tuple[str, ...]
) -> list[Cause]:
    if old is None or old.get("immutable") is not True:
        return []
    causes = []
    if obj.get("immutable") is not True:
        causes.append(Cause("FieldValueForbidden", _IMMUTABLE, "immutable"))
    for field in fields:
        if (obj.get(field) or {}) != (old.get(field) or {}):
            causes.append(Cause("FieldValueForbidden", _IMMUTABLE, field))
    return causes


def secret_causes(secret: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    if old is not None and secret.get("type") != old.get("type"):
        causes.append(
            Cause("FieldValueInvalid", f'Invalid value: "{secret.get("type")}": field is immutable', "type")
        )
    causes += _immutable_causes(secret, old, ("data",))
    data = secret.get("data") or {}
    causes += _key_causes("data", data)
    kind = secret.get("type")
    if kind == "kubernetes.io/tls":
        causes += [_required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    elif kind == "kubernetes.io/ssh-auth" and not data.get("ssh-privatekey"):
        causes.append(_required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        causes += [_required("data[username]"), _required("data[password]")]
    return causes


def configmap_causes(cm: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes = _immutable_causes(cm, old, ("data", "binaryData"))
    data, binary = cm.get("data") or {}, cm.get("binaryData") or {}
    causes += _key_causes("data", data)
    for key in data if isinstance(data, dict) and isinstance(binary, dict) else ():
        if key in binary:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{key}": duplicate of key present in binaryData',
                    f"data[{key}]",
                )
            )
    causes += _key_causes("binaryData", binary)
    return causes
