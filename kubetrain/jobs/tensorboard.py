"""TensorBoard for a job (KubeDL's `kubedl.io/tensorboard-config` annotation). Pure.

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

import copy
import hashlib
import ipaddress
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from kubetrain.api.dnsnames import is_dns1123_subdomain, qualified_name_problem
from kubetrain.api.errors import QUOTE, FieldError, invalid, json_object, json_type, required
from kubetrain.api.groups import KUBEDL_GROUP, group_of
from kubetrain.api.labels import (
    KUBEDL_ANNOTATION_TENSORBOARD,
    KUBEDL_LABEL_GROUP_NAME,
    KUBEDL_LABEL_JOB_NAME,
    KUBEDL_LABEL_REPLICA_INDEX,
    KUBEDL_LABEL_REPLICA_TYPE,
    LABEL_JOB_KIND,
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_VALUE,
)
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
# Pod template fields the TensorBoard pod takes from the job's source replica type (`source_replica`).
_POD_FIELDS = (
    "volumes",
    "nodeSelector",
    "tolerations",
    "affinity",
    "serviceAccountName",
    "imagePullSecrets",
    "securityContext",
    "priorityClassName",
)


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


@dataclass(frozen=True)
class JobRef:
    """What the TensorBoard objects need to know of their job."""

    kind: str
    api_version: str
    name: str
    namespace: str
    uid: str
    pod_labels: Mapping[str, str] = field(default_factory=dict)  # the job's tenancy labels

    def owner(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def meta(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": [self.owner()],
        }


_SOURCE_TYPES = ("Chief", "Master", "Worker")


def source_replica(replica_types: Sequence[str]) -> str:
    """The replica type whose template the TensorBoard pod is made from: KubeDL's TFJob
    controller's `getMasterSpec` — Chief, else Master, else Worker (never a PS, which writes no
    summaries) — and for kinds without those (MPIJob's Launcher and Worker have a Worker) the
    first in the framework's order."""
    return next((t for t in _SOURCE_TYPES if t in replica_types), replica_types[0])


def _selector(job: JobRef) -> dict[str, str]:
    return {LABEL_JOB_NAME: job.name, LABEL_REPLICA_TYPE: REPLICA_TYPE.lower()}


def build_pod(
    job: JobRef, cfg: TensorBoardConfig, template: Mapping[str, Any], container_index: int
) -> dict[str, Any]:
    """The TensorBoard pod from the source replica type's template (`source_replica`)."""
    tspec: Mapping[str, Any] = template.get("spec") or {}
    spec: dict[str, Any] = {k: copy.deepcopy(tspec[k]) for k in _POD_FIELDS if k in tspec}
    containers = tspec.get("containers") or []
    framework = containers[container_index] if container_index < len(containers) else {}
    args = ["--logdir", cfg.log_dir, "--host", "0.0.0.0", "--port", str(PORT)]
    served = path_prefix(job.name, job.namespace, cfg)
    if served:
        args += ["--path_prefix", served]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": cfg.image or framework.get("image", "tensorflow/tensorflow"),
        "command": ["tensorboard", *args],
        "ports": [{"name": CONTAINER, "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": f"{served}/", "port": PORT}},
    }
    mounts = framework.get("volumeMounts")
    if mounts:
        container["volumeMounts"] = copy.deepcopy(mounts)
    spec["containers"] = [container]
    spec["restartPolicy"] = "Always"
    labels = {
        **job.pod_labels,
        LABEL_JOB_NAME: job.name,
        LABEL_JOB_KIND: job.kind,
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
        LABEL_REPLICA_TYPE: REPLICA_TYPE.lower(),
        LABEL_REPLICA_INDEX: "0",
    }
    if group_of(job.api_version) == KUBEDL_GROUP:  # KubeDL's TensorBoard pod labels (syncPod)
        labels[KUBEDL_LABEL_GROUP_NAME] = KUBEDL_GROUP
        labels[KUBEDL_LABEL_JOB_NAME] = job.name
        labels[KUBEDL_LABEL_REPLICA_TYPE] = REPLICA_TYPE.lower()
        labels[KUBEDL_LABEL_REPLICA_INDEX] = "0"
    meta = job.meta(pod_name(job.name), labels)
    meta["annotations"] = {ANNOTATION_HASH: cfg.hash}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _owned_labels(job: JobRef, kubedl: Mapping[str, str]) -> dict[str, str]:
    """The Service's and Ingress's labels; in KubeDL's group KubeDL's too (`kubedl`), which its
    console finds a job's TensorBoard Ingress by (ListIngressInstances: replica-type, job-name)."""
    labels = {LABEL_TENSORBOARD_OF: job.name, LABEL_JOB_KIND: job.kind, LABEL_MANAGED_BY: MANAGED_BY_VALUE}
    if group_of(job.api_version) == KUBEDL_GROUP:
        labels.update(kubedl)
    return labels


_KUBEDL_SERVICE_LABELS = {KUBEDL_LABEL_REPLICA_TYPE: REPLICA_TYPE.lower(), KUBEDL_LABEL_REPLICA_INDEX: "0"}


def build_service(job: JobRef) -> dict[str, Any]:
    # KubeDL's syncService labels its Service replica-type and replica-index.
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": job.meta(name_of(job.name), _owned_labels(job, _KUBEDL_SERVICE_LABELS)),
        "spec": {
            "selector": _selector(job),
            "ports": [{"name": CONTAINER, "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def build_ingress(job: JobRef, cfg: TensorBoardConfig) -> dict[str, Any] | None:
    if not cfg.has_ingress:
        return None
    # KubeDL's syncIngress: its GenLabels (group-name, job-name) with replica-type and -index.
    kubedl = {
        KUBEDL_LABEL_GROUP_NAME: KUBEDL_GROUP,
        KUBEDL_LABEL_JOB_NAME: job.name,
        **_KUBEDL_SERVICE_LABELS,
    }
    meta = job.meta(name_of(job.name), _owned_labels(job, kubedl))
    meta["annotations"] = {**cfg.ingress_annotations, ANNOTATION_HASH: cfg.hash}
    rule: dict[str, Any] = {
        "http": {
            "paths": [
                {
                    "path": f"{path_prefix(job.name, job.namespace, cfg)}/",  # KubeDL's, with its `/`
                    "pathType": "Prefix",
                    "backend": {"service": {"name": name_of(job.name), "port": {"number": PORT}}},
                }
            ]
        }
    }
    if cfg.ingress_host:
        rule["host"] = cfg.ingress_host
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta,
        "spec": {"rules": [rule]},
    }
