"""Secrets whose data the operator makes at the moment it creates them, never before and never
again (their data is no function of the job, so no plan carries it): a job's plan holds the Secret
without data, and the create fills it in.

- an `kubernetes.io/ssh-auth` Secret (MPI's `<job>-ssh`, a TrainJob's `<tj>-mpi-ssh-auth`): an
  SSH key pair (`sshkeys.py`);
- a Secret annotated `kubetrain.io/curve-certificate: <name>` (a Flux TrainJob's
  `<tj>-flux-curve`): `curve.cert`, a ZeroMQ CURVE certificate of a fresh key pair (`curve.py`)."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from kubetrain.api.labels import ANNOTATION_CURVE_CERTIFICATE
from kubetrain.certs import curve
from kubetrain.certs.sshkeys import PRIVATE_KEY, PUBLIC_KEY, SSH_AUTH_TYPE, ssh_key_pair


def with_generated_keys(secret: dict[str, object]) -> dict[str, object]:
    """`secret` with fresh keys as its data when it is one of the Secrets above without data."""
    if secret.get("kind") != "Secret" or secret.get("data"):
        return secret
    if secret.get("type") == SSH_AUTH_TYPE:
        private, public = ssh_key_pair()
        data = {PRIVATE_KEY: _b64(private), PUBLIC_KEY: _b64(public)}
        return {**secret, "data": data}
    meta = secret.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    name = annotations.get(ANNOTATION_CURVE_CERTIFICATE) if isinstance(annotations, Mapping) else None
    if isinstance(name, str):
        return {**secret, "data": {curve.CERTIFICATE_KEY: _b64(curve.new_certificate(name).encode())}}
    return secret


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
