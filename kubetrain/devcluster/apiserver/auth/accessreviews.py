"""TokenReview (authentication.k8s.io/v1) and SubjectAccessReview (authorization.k8s.io/v1):
the create-only review resources a server uses to delegate authentication and authorization
to the API server (what the `system:auth-delegator` ClusterRole allows).

As kube-apiserver answers them (pkg/registry/authentication/tokenreview,
pkg/registry/authorization/subjectaccessreview):

- Nothing is stored; the answer (201) is the request with `status` filled in. The body (of a
  TokenRequest too) is first decoded as any create's (`body_kind`; the handler reports or
  refuses unknown and duplicate fields per fieldValidation, decoding.py).
- TokenReview: an empty `spec.token` is 400 `token is required for TokenReview in
  authentication`. The tokens devcluster knows authenticate — the kubeconfig's admin token, the
  ServiceAccount tokens of `DevCluster.add_service_account_token` while their ServiceAccount
  exists (both for the API server's audience, `https://kubernetes.default.svc.cluster.local`,
  only), and the bound tokens of the TokenRequest API (`tokens.py`: their own audiences, pod
  claims in `status.user.extra`) — with `status.user` (username, uid, groups, extra) and
  `status.audiences` (the requested audiences the token is valid for; the API server's when
  none were requested). Any other token, or audiences the token is not valid for, gives
  `authenticated: false` and `status.error` (`[invalid bearer token, <why>]`).
- SubjectAccessReview: exactly one of `spec.resourceAttributes` / `spec.nonResourceAttributes`
  and at least one of `spec.user` / `spec.groups`, else 422. With RBAC on, the review is
  evaluated by the cluster's RBAC authorizer (`rbac.Authorizer`: bindings, nonResourceURLs,
  system:masters); without it every review is allowed (AlwaysAllow). `status.allowed`, and
  `status.reason` when the authorizer gave one.
- SelfSubjectAccessReview: the same question about the requester itself (what `kubectl auth
  can-i` asks; every authenticated user may, through `system:basic-user`): exactly one of
  `spec.resourceAttributes` / `spec.nonResourceAttributes`, else 422; evaluated for the user
  the request authenticated as.
- SelfSubjectReview (authentication.k8s.io/v1, GA in 1.28; `kubectl auth whoami`): who the
  request authenticated as — after impersonation, the impersonated user. Nothing in the body is
  read but its kind; the answer (201) is a new object with `metadata.creationTimestamp` now and
  `status.userInfo` (username, uid when the user has one, groups). Every authenticated user may
  create one (`system:basic-user`). devcluster keeps no `extra` of a request's user, so
  `userInfo.extra` is never set here (kube-apiserver returns it, lowercased keys).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster.apiserver.auth import rbac
from kubetrain.devcluster.apiserver.auth.tokens import Authenticated
from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.core import Result, Target

TOKEN_REVIEWS_KEY = "tokenreviews.authentication.k8s.io"
SUBJECT_ACCESS_REVIEWS_KEY = "subjectaccessreviews.authorization.k8s.io"
SELF_SUBJECT_ACCESS_REVIEWS_KEY = "selfsubjectaccessreviews.authorization.k8s.io"
SELF_SUBJECT_REVIEWS_KEY = "selfsubjectreviews.authentication.k8s.io"
KEYS = (
    TOKEN_REVIEWS_KEY,
    SUBJECT_ACCESS_REVIEWS_KEY,
    SELF_SUBJECT_ACCESS_REVIEWS_KEY,
    SELF_SUBJECT_REVIEWS_KEY,
)
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
TOKEN_REQUEST_KIND = ("authentication.k8s.io", "v1", "TokenRequest")  # serviceaccounts/token

# (token, requested audiences) -> who it is, or why it does not authenticate
TokenAuthenticator = Callable[[str, list[str]], "Authenticated | str"]


def body_kind(t: Target) -> tuple[str, str, str] | None:
    """The (group, version, kind) a create of `t` decodes its body as when `t` is a review or
    serviceaccounts/token (a TokenRequest), else None."""
    if t.rt.key == "serviceaccounts" and t.subresource == "token":
        return TOKEN_REQUEST_KIND
    return (t.rt.group, t.version, t.rt.kind) if t.rt.key in KEYS else None


def _answer(t: Target, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of a {t.rt.kind} must be a JSON object")
    obj: Obj = copy.deepcopy(body)
    obj["apiVersion"] = t.api_version
    obj["kind"] = t.rt.kind
    meta = obj.get("metadata")
    obj["metadata"] = dict(meta) if isinstance(meta, dict) else {}
    obj["metadata"].setdefault("creationTimestamp", None)
    spec = obj.get("spec")
    obj["spec"] = spec if isinstance(spec, dict) else {}
    return obj


def token_review(t: Target, body: Any, authenticate: TokenAuthenticator) -> Result:
    obj = _answer(t, body)
    spec = obj["spec"]
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    audiences = [str(a) for a in spec.get("audiences") or []]
    answer = authenticate(token, audiences)
    if isinstance(answer, str):
        obj["status"] = {"user": {}, "error": f"[invalid bearer token, {answer}]"}
    else:
        user = answer.user.to_dict()
        if answer.extra:
            user["extra"] = answer.extra
        obj["status"] = {"authenticated": True, "user": user, "audiences": list(answer.audiences)}
    return Result(201, obj)


def _request_info(spec: dict[str, Any]) -> rbac.RequestInfo:
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(non_resource, dict):
        path, verb = non_resource.get("path"), non_resource.get("verb")
        return rbac.RequestInfo(path=str(path or ""), verb=str(verb or ""))
    assert isinstance(resource, dict)
    return rbac.RequestInfo(
        path="",
        verb=str(resource.get("verb") or ""),
        resource_request=True,
        api_group=str(resource.get("group") or ""),
        api_version=str(resource.get("version") or ""),
        namespace=str(resource.get("namespace") or ""),
        resource=str(resource.get("resource") or ""),
        subresource=str(resource.get("subresource") or ""),
        name=str(resource.get("name") or ""),
    )


_EXACTLY_ONE = "exactly one of nonResourceAttributes or resourceAttributes must be specified"


def _validate(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    has_resource = spec.get("resourceAttributes") is not None
    has_non_resource = spec.get("nonResourceAttributes") is not None
    if has_resource == has_non_resource:
        if has_resource:
            reason, message = "FieldValueInvalid", f"Invalid value: {{...}}: {_EXACTLY_ONE}"
        else:
            reason, message = "FieldValueRequired", f"Required value: {_EXACTLY_ONE}"
        causes.append(Cause(reason, message, "spec.resourceAttributes"))
    for name in ("resourceAttributes", "nonResourceAttributes"):
        value = spec.get(name)
        if value is not None and not isinstance(value, dict):
            causes.append(Cause("FieldValueInvalid", "Invalid value: must be an object", f"spec.{name}"))
    if not spec.get("user") and not spec.get("groups"):
        causes.append(
            Cause(
                "FieldValueInvalid",
                'Invalid value: "": at least one of user or group must be specified',
                "spec.user",
            )
        )
    return causes


def subject_access_review(t: Target, body: Any, authorizer: rbac.Authorizer | None) -> Result:
    return _review(t, body, None, authorizer)


def self_subject_access_review(
    t: Target, body: Any, requester: rbac.UserInfo, authorizer: rbac.Authorizer | None
) -> Result:
    return _review(t, body, requester, authorizer)


def _review(
    t: Target, body: Any, requester: rbac.UserInfo | None, authorizer: rbac.Authorizer | None
) -> Result:
    """The answer to a SubjectAccessReview (`requester` None: about the user its spec names) or a
    SelfSubjectAccessReview (about `requester`, its spec naming no user)."""
    obj = _answer(t, body)
    spec = obj["spec"]
    causes = _validate(spec if requester is None else {**spec, "user": "-"})
    if causes:
        raise errors.invalid(t.rt.kind, t.rt.group, "", causes)
    if authorizer is None:
        obj["status"] = {"allowed": True}
        return Result(201, obj)
    if requester is None:
        groups = tuple(str(g) for g in spec.get("groups") or ())
        requester = rbac.UserInfo(str(spec.get("user") or ""), groups, str(spec.get("uid") or ""))
    decision = authorizer.authorize(requester, _request_info(spec))
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    obj["status"] = status
    return Result(201, obj)


def self_subject_review(t: Target, body: Any, requester: rbac.UserInfo, now: str) -> Result:
    """Who the request authenticated as (`now`: the RFC 3339 creation time of the answer)."""
    if not isinstance(body, dict) or body.get("kind") not in (None, t.rt.kind):
        raise errors.bad_request(f"not a {t.rt.kind}")
    return Result(
        201,
        {
            "kind": t.rt.kind,
            "apiVersion": t.api_version,
            "metadata": {"creationTimestamp": now},
            "status": {"userInfo": requester.to_dict()},
        },
    )
