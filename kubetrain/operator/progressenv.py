"""What lets a job's pods report their progress (the training-progress endpoint) — pure.

With a status-server URL configured (`kubetrain run --status-server-url https://HOST:PORT`),
every container and init container of every pod of every kind gets, as Kubeflow Trainer's
TrainJobStatus plugin gives a TrainJob's trainer containers:

- `KUBEFLOW_TRAINER_SERVER_URL` = the URL + `/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status`,
  `KUBEFLOW_TRAINER_SERVER_CA_CERT` = `/var/run/secrets/kubeflow/trainer/ca.crt`,
  `KUBEFLOW_TRAINER_SERVER_TOKEN` = `/var/run/secrets/kubeflow/trainer/token`
  (a variable the template already sets is left as it is);
- the projected volume `kubeflow-trainer-token` mounted read-only there: a service-account token
  for the audience `<group>/<version>/namespaces/<ns>/<plural>/<name>/status`, 3600 s (the
  kubelet binds it to the pod and rotates it), and `ca.crt` from the job's ConfigMap
  `<job>-trainer-status` (the CA of the operator's serving certificate; an extra child of the
  job, replaced when the CA changes).

A job annotated `kubetrain.io/progress-reporting: "disabled"` gets none of it, nor does any job
when no URL is configured.

A TrainJob (trainer.kubeflow.org/v1alpha1) gets exactly what Trainer 2.3's TrainJobStatus plugin
gives it — URL `…/apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status`,
the same audience without `/apis/`, the CA from the ConfigMap `<tj>-tls-config` — in every
container of its pods (node, launcher, initializers; Trainer: the trainer step's only), read from
its shape's `JobLayout` like every job's: the layout names the job's resource and its CA
ConfigMap, so nothing here asks which kind a job is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubetrain.api import trainerstatus as ts

ANNOTATION = ts.ANNOTATION_REPORTING
DISABLED = ts.REPORTING_DISABLED


class Job(Protocol):
    """What the injection reads of a job (a JobLayout is one)."""

    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def annotations(self) -> Mapping[str, Any]: ...
    @property
    def resource(self) -> str: ...
    @property
    def progress_ca_config_map(self) -> str: ...


@dataclass(frozen=True)
class ProgressInjection:
    base_url: str  # https://HOST:PORT of the endpoint, as pods reach it
    ca_pem: str  # the CA of its serving certificate


def enabled(layout: Job, injection: ProgressInjection | None) -> bool:
    return injection is not None and str(layout.annotations.get(ANNOTATION, "")).lower() != DISABLED


def _route(layout: Job) -> tuple[str, str, str, str, str]:
    group, _, version = layout.api_version.rpartition("/")
    return group, version, layout.resource, layout.namespace, layout.name


def config_map(layout: Job, injection: ProgressInjection) -> dict[str, Any]:
    """The ConfigMap carrying the endpoint's CA (namespace, labels, owner added by the caller)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": layout.progress_ca_config_map},
        "data": {ts.CA_KEY: injection.ca_pem},
    }


def _upsert_env(container: dict[str, Any], env: list[dict[str, str]]) -> None:
    current = [e for e in container.get("env") or [] if isinstance(e, Mapping)]
    taken = {e.get("name") for e in current}
    container["env"] = [*current, *(e for e in env if e["name"] not in taken)]


def inject(layout: Job, injection: ProgressInjection, spec: dict[str, Any]) -> None:
    """Add the env, volume and mounts to a pod spec (mutated)."""
    route = _route(layout)
    env = [
        {"name": ts.ENV_URL, "value": injection.base_url.rstrip("/") + ts.status_path(*route)},
        {"name": ts.ENV_CA_CERT, "value": f"{ts.MOUNT_PATH}/{ts.CA_FILE}"},
        {"name": ts.ENV_TOKEN, "value": f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"},
    ]
    mount = {"name": ts.VOLUME_NAME, "mountPath": ts.MOUNT_PATH, "readOnly": True}
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            _upsert_env(container, env)
            mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, Mapping)]
            if not any(m.get("name") == ts.VOLUME_NAME for m in mounts):
                container["volumeMounts"] = [*mounts, dict(mount)]
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, Mapping)]
    if any(v.get("name") == ts.VOLUME_NAME for v in volumes):
        return
    token = {
        "audience": ts.audience(*route),
        "expirationSeconds": ts.TOKEN_EXPIRATION_SECONDS,
        "path": ts.TOKEN_FILE,
    }
    items = [{"key": ts.CA_KEY, "path": ts.CA_FILE}]
    volume = {
        "name": ts.VOLUME_NAME,
        "projected": {
            "sources": [
                {"serviceAccountToken": token},
                {"configMap": {"name": layout.progress_ca_config_map, "items": items}},
            ]
        },
    }
    spec["volumes"] = [*volumes, volume]
