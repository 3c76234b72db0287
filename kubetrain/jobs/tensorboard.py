"""TensorBoard for a job (KubeDL's `kubedl.io/tensorboard-config` annotation): the annotation parsed
and checked, and the names and addresses of what kubetrain makes from it (the objects themselves:
`kubetrain.jobs.tensorboardobjects`). Pure.

The annotation holds KubeDL's JSON: `logDir` (required), `image`, `ttlSecondsAfterJobFinished`,
`ingressSpec` (`host`, `pathPrefix`, `annotations`), `updateTimestamp` (when the config was
applied, as KubeDL's console writes it: a TensorBoard applied after the job finished lives its TTL
from then). kubetrain runs, owned by the job:

- one pod `<job>-tensorboard-0` (KubeDL's replica type `TensorBoard`): the pod template of the
  Chief, else Master, else Worker, else first replica type (`source_replica`, as KubeDL) — its
  volumes, so the pod reads the logDir from the volume the job writes it to; its node selector,
  tolerations, service account, image pull secrets and security context — with
  one container `tensorboard` running `tensorboard --logdir <logDir> --host 0.0.0.0 --port 6006`
  (and, behind an Ingress, `--path_prefix <pathPrefix>/<namespace>/<job>`, as KubeDL) in `image`,
  default the framework container's image;
  it mounts the framework container's volume mounts;
- a ClusterIP Service `<job>-tensorboard` on port 6006;
- with `ingressSpec`, a networking.k8s.io/v1 Ingress `<job>-tensorboard` routing
  `<host><pathPrefix>/<namespace>/<job>/` (Prefix) to that Service, with the given annotations:
  KubeDL's URL, so jobs sharing one `ingressSpec` never share a path.

The pod carries the job-name label (so it is watched) and replica-type `tensorboard`, but fills
no replica slot: it never counts toward the job's success, failure, restarts, gang (no gang
scheduler annotations or scheduler name) or TrainingPolicy totals. A hash of the config is an
annotation on the pod: a changed annotation replaces the pod (and the Ingress).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from kubetrain.api.dnsnames import is_dns1123_subdomain, qualified_name_problem
from kubetrain.api.errors import QUOTE, FieldError, invalid, json_object, json_type, required
from kubetrain.api.labels import KUBEDL_ANNOTATION_TENSORBOARD
from kubetrain.api.metatime import parse_time

ANNOTATION_PATH = f"metadata.annotations[{KUBEDL_ANNOTATION_TENSORBOARD}]"
ANNOTATION_HASH = "kubetrain.io/tensorboard-config-hash"
LABEL_TENSORBOARD_OF = "kubetrain.io/tensorboard-of"  # on the Service and Ingress: the job's name
REPLICA_TYPE = "TensorBoard"
CONTAINER = "tensorboard"
PORT = 6006
FIELDS = ("logDir", "image", "ttlSecondsAfterJobFinished", "ingressSpec", "updateTimestamp")
# metav1.Time's JSON: RFC 3339 (Go's time.RFC3339 layout, fractional seconds allowed), or null.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
INGRESS_FIELDS = ("host", "pathPrefix", "annotations")
_LAYOUT = "path-per-job"  # changes when the pod built from the same config changes
_REMOTE = ("gs://", "s3://", "hdfs://", "oss://", "az://")


@dataclass(frozen=True)
class TensorBoardConfig:
    log_dir: str
    image: str = ""
    ttl_seconds: int | None = None
    ingress_host: str = ""
    path_prefix: str = ""
    ingress_annotations: Mapping[str, str] = field(default_factory=dict)
    has_ingress: bool = False
    raw: str = ""  # the config without updateTimestamp: what the pod and Ingress are built from
    updated: datetime | None = None  # updateTimestamp

    @property
    def hash(self) -> str:
        # Salted with the pod's layout: a pod made by an older kubetrain (which served at
        # `<pathPrefix>` alone) is replaced once, so it serves where the Ingress now routes.
        return hashlib.sha256(f"{_LAYOUT}\n{self.raw}".encode()).hexdigest()[:16]


def parse_tensorboard(raw: Any) -> tuple[TensorBoardConfig | None, list[FieldError]]:
    value, problems = json_object(raw, ANNOTATION_PATH)
    if value is None:
        return None, problems
    errors: list[FieldError] = []

    def path(key: str) -> str:
        return f"{ANNOTATION_PATH}.{key}"

    for key in value:
        if key not in FIELDS:
            errors.append(invalid(path(key), f"unknown field; valid fields: {', '.join(FIELDS)}"))
    log_dir = value.get("logDir")
    if not log_dir:
        errors.append(required(path("logDir"), "the directory the job writes its TensorBoard logs to"))
    elif not isinstance(log_dir, str):
        errors.append(invalid(path("logDir"), f"must be a string, not {json_type(log_dir)}"))
    elif not (log_dir.startswith("/") or log_dir.startswith(_REMOTE)):
        errors.append(
            invalid(
                path("logDir"),
                f"{QUOTE.encode(log_dir)}: must be an absolute path or a gs://, s3://, hdfs:// URL",
            )
        )
    image = value.get("image")
    if image is not None and not isinstance(image, str):
        errors.append(invalid(path("image"), f"must be a string, not {json_type(image)}"))
    ttl = value.get("ttlSecondsAfterJobFinished")
    if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
        errors.append(
            invalid(path("ttlSecondsAfterJobFinished"), f"{QUOTE.encode(ttl)}: must be an integer >= 0")
        )
    stamp, updated = value.get("updateTimestamp"), None
    if stamp is not None:
        updated = parse_time(stamp) if isinstance(stamp, str) and _RFC3339.match(stamp) else None
        if updated is None:
            errors.append(
                invalid(
                    path("updateTimestamp"),
                    f"{QUOTE.encode(stamp)}: must be an RFC 3339 time (2024-05-01T12:00:00Z) or null",
                )
            )
    ingress = value.get("ingressSpec")
    host, prefix, annotations = "", "", cast(dict[str, str], {})
    if ingress is not None:
        if not isinstance(ingress, dict):
            errors.append(invalid(path("ingressSpec"), f"must be an object, not {json_type(ingress)}"))
        else:
            for key in ingress:
                if key not in INGRESS_FIELDS:
                    errors.append(
                        invalid(
                            path(f"ingressSpec.{key}"),
                            f"unknown field; valid fields: {', '.join(INGRESS_FIELDS)}",
                        )
                    )
            host = ingress.get("host") or ""
            prefix = ingress.get("pathPrefix") or "/"
            annotations = ingress.get("annotations") or {}
            if not isinstance(host, str):
                errors.append(invalid(path("ingressSpec.host"), f"must be a string, not {json_type(host)}"))
            elif host:
                errors.extend(_host_errors(host, path("ingressSpec.host")))
            if not isinstance(prefix, str):
                # Any string: joined as KubeDL's path.Join("/", pathPrefix, …) joins it (path_prefix).
                errors.append(
                    invalid(path("ingressSpec.pathPrefix"), f"must be a string, not {json_type(prefix)}")
                )
            elif "%2f" in prefix.lower():
                # An Ingress path may not hold an encoded '/' (Kubernetes' validateIngressHTTPPath,
                # invalidPathSequences); '//', '/./' and '/../' are joined away (path_prefix).
                errors.append(
                    invalid(
                        path("ingressSpec.pathPrefix"),
                        f"{QUOTE.encode(prefix)}: must not contain '%2F' (an Ingress path cannot)",
                    )
                )
            if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
                errors.append(invalid(path("ingressSpec.annotations"), "must be a map of strings to strings"))
            else:
                errors.extend(_annotation_key_errors(annotations, path("ingressSpec.annotations")))
    if errors:
        return None, errors
    assert isinstance(log_dir, str)
    return (
        TensorBoardConfig(
            log_dir=log_dir,
            image=image or "",
            ttl_seconds=ttl,
            ingress_host=host,
            path_prefix=prefix,
            ingress_annotations=dict(annotations),
            has_ingress=ingress is not None,
            # KubeDL compares configs ignoring updateTimestamp (syncPod): re-applying the same
            # config extends the TTL but does not replace the pod.
            raw=json.dumps({k: v for k, v in value.items() if k != "updateTimestamp"}, sort_keys=True),
            updated=updated,
        ),
        [],
    )


def _annotation_key_errors(annotations: Mapping[str, str], at: str) -> list[FieldError]:
    """The Ingress's annotation keys as the API server takes them: qualified names, compared
    lower-cased (apimachinery's ValidateAnnotations: IsQualifiedName(strings.ToLower(k)))."""
    errors = []
    for key in annotations:
        if (problem := qualified_name_problem(key.lower())) is not None:
            errors.append(
                invalid(f"{at}[{key}]", f"{QUOTE.encode(key)}: not a valid annotation key: {problem}")
            )
    return errors


def _host_errors(host: str, at: str) -> list[FieldError]:
    """An Ingress rule's host as Kubernetes' validateIngressRules takes it: a DNS-1123 subdomain,
    or one with a leading `*.` wildcard, never an IP address."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [invalid(at, f"{QUOTE.encode(host)}: must be a DNS name, not an IP address")]
    name = host[2:] if host.startswith("*.") else host
    if is_dns1123_subdomain(name):
        return []
    return [
        invalid(
            at, f"{QUOTE.encode(host)}: must be a DNS name such as tb.example.com (or *.example.com), no port"
        )
    ]


def tensorboard_of(annotations: Mapping[str, Any]) -> TensorBoardConfig | None:
    raw = annotations.get(KUBEDL_ANNOTATION_TENSORBOARD)
    return None if raw is None else parse_tensorboard(raw)[0]


def name_of(job_name: str) -> str:
    return f"{job_name}-tensorboard"


def pod_name(job_name: str) -> str:
    return f"{job_name}-tensorboard-0"


def path_prefix(job_name: str, namespace: str, cfg: TensorBoardConfig) -> str:
    """Where TensorBoard serves, without the trailing `/`: behind an Ingress
    `<pathPrefix>/<namespace>/<job>`, as KubeDL's `path.Join("/", pathPrefix, namespace, name)`
    (pkg/tensorboard/tensorboard.go, syncPod and syncIngress), so two jobs given the same
    `ingressSpec` get their own paths; without an Ingress the root, "" (no `--path_prefix`)."""
    if not cfg.has_ingress:
        return ""
    parts = (part.strip("/") for part in (cfg.path_prefix, namespace, job_name))
    return posixpath.normpath("/" + "/".join(part for part in parts if part))


def address(job_name: str, namespace: str, cfg: TensorBoardConfig) -> str:
    return f"http://{name_of(job_name)}.{namespace}.svc:{PORT}{path_prefix(job_name, namespace, cfg)}/"


def url(job_name: str, namespace: str, cfg: TensorBoardConfig) -> str | None:
    if not cfg.has_ingress or not cfg.ingress_host:
        return None
    return f"http://{cfg.ingress_host}{path_prefix(job_name, namespace, cfg)}/"
