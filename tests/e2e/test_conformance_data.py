"""Secrets and ConfigMaps as the webhook certificates (a `kubernetes.io/tls` Secret), MPI's SSH
keys (an immutable `kubernetes.io/ssh-auth` Secret) and hostfiles (ConfigMaps) are written:
`stringData`, the keys each Secret type requires, config keys, and immutability.

Runs like test_conformance.py (fixtures in conftest.py, helpers in conformance_support.py):
against devcluster in the normal test run, against $KUBECONFIG's cluster with `pytest -m e2e`.
"""

from __future__ import annotations

import base64
from typing import Any

from e2e.conformance_support import MERGE, Obj, assert_status, causes, cm, cms


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secrets(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/secrets"


def secret(name: str, type_: str | None = None, **data: str) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}
    if type_:
        body["type"] = type_
    if data:
        body["data"] = {k.replace("__", "."): b64(v) for k, v in data.items()}
    return body


async def test_secret_string_data_is_folded_into_data(kube: Any, namespace: str) -> None:
    """pkg/apis/core/v1 conversion.go Convert_v1_Secret_To_core_Secret: each stringData entry
    overwrites data[key]; stringData is write-only. SetDefaults_Secret: type Opaque."""
    body = secret("sd", b="old", c="kept")
    body["stringData"] = {"a": "hello", "b": "new"}
    made = await kube.ok("POST", secrets(namespace), body)
    assert made["data"] == {"a": b64("hello"), "b": b64("new"), "c": b64("kept")}
    assert "stringData" not in made
    assert made["type"] == "Opaque"
    stored = await kube.ok("GET", f"{secrets(namespace)}/sd")
    assert stored["data"] == made["data"] and "stringData" not in stored
    patched = await kube.ok(
        "PATCH", f"{secrets(namespace)}/sd", {"stringData": {"c": "changed"}}, content_type=MERGE
    )
    assert patched["data"]["c"] == b64("changed") and "stringData" not in patched


async def test_secret_types_require_their_keys(kube: Any, namespace: str) -> None:
    """pkg/apis/core/validation ValidateSecret: kubernetes.io/tls needs tls.crt and tls.key,
    kubernetes.io/ssh-auth a non-empty ssh-privatekey (FieldValueRequired on data[<key>]);
    ValidateSecretUpdate: the type is immutable."""
    no_key = await kube.request(
        "POST", secrets(namespace), secret("tls", "kubernetes.io/tls", tls__crt="cert")
    )
    assert_status(no_key.body, 422, "Invalid")
    assert causes(no_key.body) == [("FieldValueRequired", "data[tls.key]")]
    await kube.ok("POST", secrets(namespace), secret("tls", "kubernetes.io/tls", tls__crt="c", tls__key="k"))

    no_ssh = await kube.request(
        "POST", secrets(namespace), secret("ssh", "kubernetes.io/ssh-auth", id_rsa="k")
    )
    assert causes(no_ssh.body) == [("FieldValueRequired", "data[ssh-privatekey]")]
    ssh = await kube.ok(
        "POST", secrets(namespace), secret("ssh", "kubernetes.io/ssh-auth", **{"ssh-privatekey": "k"})
    )

    retyped = await kube.request("PUT", f"{secrets(namespace)}/ssh", {**ssh, "type": "Opaque"})
    assert_status(retyped.body, 422, "Invalid")
    assert causes(retyped.body) == [("FieldValueInvalid", "type")]


async def test_data_keys_are_config_keys(kube: Any, namespace: str) -> None:
    """apimachinery util/validation IsConfigMapKey (ValidateConfigMap, ValidateSecret): keys of
    data and binaryData match [-._a-zA-Z0-9]+ and are not '.' or '..'; a ConfigMap key may not be
    in both data and binaryData."""
    for key in ("a b", "a/b", ".."):
        refused = await kube.request("POST", cms(namespace), {**cm("keys"), "data": {key: "v"}})
        assert_status(refused.body, 422, "Invalid")
        assert causes(refused.body) == [("FieldValueInvalid", f"data[{key}]")], key
    both = {**cm("both"), "data": {"k": "v"}, "binaryData": {"k": b64("v")}}
    duplicate = await kube.request("POST", cms(namespace), both)
    assert causes(duplicate.body) == [("FieldValueInvalid", "data[k]")]
    assert duplicate.body["details"]["causes"][0]["message"].endswith(
        "duplicate of key present in binaryData"
    )
    bad_secret = await kube.request("POST", secrets(namespace), {**secret("keys"), "data": {"a/b": b64("v")}})
    assert causes(bad_secret.body) == [("FieldValueInvalid", "data[a/b]")]
    await kube.ok(
        "POST", cms(namespace), {**cm("fine"), "data": {"key.name": "1", "KEY_NAME": "2", "-x_.y": "3"}}
    )


async def test_immutable_config_maps_and_secrets_keep_their_data(kube: Any, namespace: str) -> None:
    """ValidateConfigMapUpdate / ValidateSecretUpdate: once `immutable: true`, data, binaryData
    and immutable itself are Forbidden to change ("field is immutable when `immutable` is set");
    metadata such as labels may still change."""
    frozen = await kube.ok("POST", cms(namespace), {**cm("frozen", a="1"), "immutable": True})
    path = f"{cms(namespace)}/frozen"
    changed = await kube.request("PUT", path, {**frozen, "data": {"a": "2"}})
    assert_status(changed.body, 422, "Invalid")
    assert causes(changed.body) == [("FieldValueForbidden", "data")]
    thawed = await kube.request("PUT", path, {**frozen, "immutable": False})
    assert causes(thawed.body) == [("FieldValueForbidden", "immutable")]
    labelled = await kube.ok("PATCH", path, {"metadata": {"labels": {"l": "v"}}}, content_type=MERGE)
    assert labelled["metadata"]["labels"] == {"l": "v"} and labelled["data"] == {"a": "1"}

    keys = {**secret("keys", "kubernetes.io/ssh-auth", **{"ssh-privatekey": "k"}), "immutable": True}
    made = await kube.ok("POST", secrets(namespace), keys)
    rotated = await kube.request(
        "PATCH", f"{secrets(namespace)}/keys", {"data": {"ssh-privatekey": b64("other")}}, content_type=MERGE
    )
    assert_status(rotated.body, 422, "Invalid")
    assert causes(rotated.body) == [("FieldValueForbidden", "data")]
    assert (await kube.ok("GET", f"{secrets(namespace)}/keys"))["data"] == made["data"]
