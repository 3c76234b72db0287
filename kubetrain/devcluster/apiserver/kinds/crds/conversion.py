"""A CRD's `spec.conversion`, as apiextensions-apiserver validates it.

Ports of `validateCustomResourceConversion` and `validateConversionReviewVersions`
(k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go) and of
k8s.io/apiserver/pkg/util/webhook `ValidateWebhookURL` / `ValidateWebhookService`. Paths are the
internal type's: the v1 `webhook.clientConfig` is `webhookClientConfig` and the v1
`webhook.conversionReviewVersions` is `conversionReviewVersions`, both directly under
`spec.conversion`. The caBundle's PEM content is not checked (upstream skips it too until the
CRD is Established).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import fielderrors as fe

REVIEW_VERSIONS = ["v1", "v1beta1"]


def enum_causes(path: str, value: str, accepted: list[str]) -> list[Cause]:
    """`validateEnumStrings(..., required=true)`."""
    if not value:
        return [fe.required(path)]
    return [] if value in accepted else [fe.not_supported(path, value, accepted)]


def conversion_causes(conversion: Obj, path: str) -> list[Cause]:
    """`validateCustomResourceConversion` (on the internal type: `webhookClientConfig`,
    `conversionReviewVersions` directly under spec.conversion)."""
    strategy = conversion.get("strategy") or ""
    out = enum_causes(f"{path}.strategy", strategy, ["None", "Webhook"])
    webhook = fe.mapping(conversion.get("webhook"))
    client = webhook.get("clientConfig")
    review_versions = webhook.get("conversionReviewVersions") or []
    if strategy != "Webhook":
        if client is not None:
            out.append(
                fe.forbidden(
                    f"{path}.webhookClientConfig", "should not be set when strategy is not set to Webhook"
                )
            )
        if review_versions:
            out.append(
                fe.forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
        return out
    if not isinstance(client, dict):
        out.append(fe.required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
    elif (client.get("url") is None) == (client.get("service") is None):
        out.append(fe.required(f"{path}.webhookClientConfig", "exactly one of url or service is required"))
    elif client.get("url") is not None:
        out += webhook_url_causes(f"{path}.webhookClientConfig.url", client["url"])
    else:
        out += webhook_service_causes(f"{path}.webhookClientConfig.service", client["service"])
    out += _review_versions(review_versions, f"{path}.conversionReviewVersions")
    return out


def _review_versions(versions: list[str], path: str) -> list[Cause]:
    """`validateConversionReviewVersions(..., requireRecognizedVersion=true)`."""
    if not versions:
        return [fe.required(path)]
    out: list[Cause] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            out.append(fe.invalid(f"{path}[{i}]", v, "duplicate version"))
            continue
        seen.add(v)
        out += [fe.invalid(f"{path}[{i}]", v, e) for e in fe.dns1035_label_errors(v)]
    if not seen & set(REVIEW_VERSIONS):
        out.append(fe.invalid(path, versions, f"must include at least one of {', '.join(REVIEW_VERSIONS)}"))
    return out


def webhook_url_causes(path: str, url: str) -> list[Cause]:
    """k8s.io/apiserver/pkg/util/webhook `ValidateWebhookURL(..., forceHttps=true)`."""
    form = "; desired format: https://host[/path]"
    try:
        u = urlsplit(url)
        host = u.hostname or ""
    except ValueError as err:
        return [fe.required(path, f"url must be a valid URL: {err}{form}")]
    out: list[Cause] = []
    if u.scheme != "https":
        out.append(fe.invalid(path, u.scheme, "'https' is the only allowed URL scheme" + form))
    if not host:
        out.append(fe.invalid(path, host, "host must be provided" + form))
    if "@" in u.netloc:
        out.append(
            fe.invalid(path, u.netloc.rsplit("@", 1)[0], "user information is not permitted in the URL")
        )
    if u.fragment:
        out.append(fe.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        out.append(fe.invalid(path, u.query, "query parameters are not permitted in the URL"))
    return out


def webhook_service_causes(path: str, service: Obj) -> list[Cause]:
    """k8s.io/apiserver/pkg/util/webhook `ValidateWebhookService` (port defaults to 443)."""
    out: list[Cause] = []
    if not service.get("name"):
        out.append(fe.required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        out.append(fe.required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        out.append(
            fe.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    url_path = service.get("path")
    if url_path is None or url_path in ("/", ""):
        return out
    if url_path == "//":
        return [*out, fe.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        out.append(fe.invalid(f"{path}.path", url_path, "must start with a '/'"))
    steps = url_path[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            out.append(fe.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        out += [
            fe.invalid(f"{path}.path", url_path, f"segment[{i}]: {e}")
            for e in fe.dns1123_subdomain_errors(step)
        ]
    return out
