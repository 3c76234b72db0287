"""Bound ServiceAccount tokens: the TokenRequest API (`serviceaccounts/<name>/token`) and the
authenticator that checks them, as kube-apiserver implements them
(pkg/registry/core/serviceaccount/storage/token.go, pkg/serviceaccount/claims.go).

A token is a JWT (signed HS256 with a key of this server — kube signs RS256 with the
service-account key; only this server verifies them) carrying kube's claims: `iss`, `sub`
(`system:serviceaccount:<ns>:<name>`), `aud`, `iat`, `nbf`, `exp`, `jti` and the private
`kubernetes.io` claim: namespace, serviceaccount {name, uid}, and for a pod-bound token pod
{name, uid} and node {name, uid} (the node the pod is bound to, when there is one).

TokenRequest (create, 201): `spec.expirationSeconds` defaults to 3600 and may not be under 600
(400 `may not specify a duration less than 10 minutes`); `spec.audiences` default to the API
server's; `spec.boundObjectRef` may name a Pod, Secret or Node (else 400), which must exist (404)
and have the given uid (409), and a Pod must run as this ServiceAccount (400).

Authentication (TokenReview and bearer requests): the signature and `exp`/`nbf` are checked, the
token's audiences must intersect the requested ones (the API server's when none are asked for) —
`status.audiences` is that intersection — and the ServiceAccount and any bound Pod/Secret must
still exist with the uid in the token; a Pod deleted (deletionTimestamp) more than 60 s ago
invalidates its tokens. The user has kube's `extra` keys
`authentication.kubernetes.io/{pod-name,pod-uid,node-name,node-uid,credential-id}`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubetrain.devcluster.apiserver.auth import rbac
from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import GroupResource, Obj
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.fielderrors import go_quote
from kubetrain.devcluster.apiserver.storage.store import Store

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
DELETED_POD_GRACE = timedelta(seconds=60)
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name"
EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
_BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}
_INVALIDATED = "service account token has been invalidated"


@dataclass(frozen=True)
class Authenticated:
    user: rbac.UserInfo
    audiences: tuple[str, ...]
    extra: dict[str, list[str]] = field(default_factory=dict)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


class TokenIssuer:
    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.clock = clock
        self._key = secrets.token_bytes(32)

    # ---- signing ------------------------------------------------------------------------------
    def _sign(self, claims: dict[str, Any]) -> str:
        header = _b64(json.dumps({"alg": "HS256", "kid": "devcluster"}).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        mac = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(mac)}"

    def _claims(self, token: str) -> dict[str, Any] | None:
        try:
            header, payload, signature = token.split(".")
            mac = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
            if not hmac.compare_digest(_unb64(signature), mac):
                return None
            claims = json.loads(_unb64(payload))
        except (ValueError, TypeError):
            return None
        return claims if isinstance(claims, dict) and claims.get("iss") == ISSUER else None

    # ---- TokenRequest -------------------------------------------------------------------------
    def token_request(self, namespace: str, name: str, body: Any, api_version: str = "v1") -> Obj:
        """The answer to POST serviceaccounts/<name>/token (a TokenRequest), or ApiError."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of a TokenRequest must be a JSON object")
        account = self.store.get("serviceaccounts", namespace, name)
        if account is None:
            raise errors.not_found(GroupResource("", "serviceaccounts"), name)
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION_SECONDS)
        if not isinstance(expiration, int) or isinstance(expiration, bool):
            raise errors.bad_request("spec.expirationSeconds must be an integer")
        if expiration < MIN_EXPIRATION_SECONDS:
            raise errors.invalid(
                "TokenRequest",
                "authentication.k8s.io",
                "",
                [
                    errors.Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {expiration}: may not specify a duration less than 10 minutes",
                        "spec.expirationSeconds",
                    )
                ],
            )
        audiences = [str(a) for a in spec.get("audiences") or []] or list(API_AUDIENCES)
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": account["metadata"].get("uid", "")},
        }
        ref = spec.get("boundObjectRef")
        if isinstance(ref, dict):
            private.update(self._bind(namespace, name, ref))
        now = self.clock()
        issued = int(now.timestamp())
        claims = {
            "aud": audiences,
            "exp": issued + expiration,
            "iat": issued,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": issued,
            "sub": f"{rbac.SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        }
        out_spec = dict(spec)
        out_spec["audiences"] = audiences
        out_spec["expirationSeconds"] = expiration
        out_spec.setdefault("boundObjectRef", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": f"authentication.k8s.io/{api_version}",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": out_spec,
            "status": {
                "token": self._sign(claims),
                "expirationTimestamp": meta.timestamp(now + timedelta(seconds=expiration)),
            },
        }

    def _bind(self, namespace: str, account: str, ref: dict[str, Any]) -> dict[str, Any]:
        kind, name, uid = str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
        resource = _BINDABLE.get(kind)
        if resource is None:
            raise errors.bad_request(
                f"cannot bind token for serviceaccount {go_quote(account)} to object of kind {go_quote(kind)}"
            )
        obj = self.store.get(resource, "" if kind == "Node" else namespace, name)
        if obj is None:
            raise errors.not_found(GroupResource("", resource), name)
        actual = str(obj["metadata"].get("uid", ""))
        if uid and uid != actual:
            raise errors.conflict(
                GroupResource("", resource),
                name,
                f"the UID in the bound object reference ({uid}) does not match the UID in record. "
                "The object might have been deleted and then recreated",
            )
        private: dict[str, Any] = {kind.lower(): {"name": name, "uid": actual}}
        if kind == "Pod":
            if (obj.get("spec") or {}).get("serviceAccountName", "default") != account:
                raise errors.bad_request(
                    f"cannot bind token for serviceaccount {go_quote(account)} to pod running with different "
                    "serviceaccount name."
                )
            node_name = (obj.get("spec") or {}).get("nodeName")
            node = self.store.get("nodes", "", node_name) if node_name else None
            if node is not None:
                private["node"] = {"name": node_name, "uid": node["metadata"].get("uid", "")}
        return private

    # ---- authentication -----------------------------------------------------------------------
    def authenticate(self, token: str, audiences: list[str]) -> Authenticated | str:
        """Who a bound token is, for the requested audiences; or why it does not authenticate."""
        claims = self._claims(token)
        if claims is None:
            return "invalid bearer token"
        now = self.clock().timestamp()
        if now >= float(claims.get("exp", 0)):
            return "service account token has expired"
        if now < float(claims.get("nbf", 0)) - 60:
            return "service account token is not valid yet"
        token_aud = [str(a) for a in claims.get("aud") or []]
        wanted = audiences or list(API_AUDIENCES)
        matched = tuple(a for a in wanted if a in token_aud)
        if not matched:
            return (
                f"token audiences {json.dumps(token_aud)} is invalid for the target audiences "
                + json.dumps(wanted)
            )
        private = claims.get("kubernetes.io") or {}
        namespace = str(private.get("namespace", ""))
        account = private.get("serviceaccount") or {}
        stored = self.store.get("serviceaccounts", namespace, str(account.get("name", "")))
        if stored is None or stored["metadata"].get("uid") != account.get("uid"):
            return _INVALIDATED
        extra: dict[str, list[str]] = {EXTRA_CREDENTIAL_ID: [f"JTI={claims.get('jti', '')}"]}
        for kind, resource in (("pod", "pods"), ("secret", "secrets")):
            ref = private.get(kind)
            if not isinstance(ref, dict):
                continue
            obj = self.store.get(resource, namespace, str(ref.get("name", "")))
            if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
                return _INVALIDATED
            deleted = obj["metadata"].get("deletionTimestamp")
            if kind == "pod" and deleted and _parse(deleted) + DELETED_POD_GRACE < self.clock():
                return _INVALIDATED
            if kind == "pod":
                extra[EXTRA_POD_NAME] = [str(ref.get("name", ""))]
                extra[EXTRA_POD_UID] = [str(ref.get("uid", ""))]
        node = private.get("node")
        if isinstance(node, dict):
            extra[EXTRA_NODE_NAME] = [str(node.get("name", ""))]
            extra[EXTRA_NODE_UID] = [str(node.get("uid", ""))]
        user = rbac.service_account_user(namespace, str(account.get("name", "")), str(account.get("uid", "")))
        return Authenticated(user, matched, extra)


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
