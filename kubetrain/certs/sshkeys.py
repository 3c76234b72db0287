"""SSH key pairs for `kubernetes.io/ssh-auth` Secrets a job's pods share (MPIJob's `<job>-ssh`).

As mpi-operator's newSSHAuthSecret: an ECDSA P-521 key, the private key PEM-encoded as an
`EC PRIVATE KEY` (SEC 1), the public key in OpenSSH authorized_keys form with a trailing newline.
"""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

PRIVATE_KEY = "ssh-privatekey"  # corev1.SSHAuthPrivateKey
PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_TYPE = "kubernetes.io/ssh-auth"


def ssh_key_pair() -> tuple[bytes, bytes]:
    """(private key PEM, public key `ecdsa-sha2-nistp521 AAAA…\\n`)."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def with_generated_keys(secret: dict[str, object]) -> dict[str, object]:
    """`secret` with a fresh key pair as its data when it is an ssh-auth Secret without data."""
    if secret.get("kind") != "Secret" or secret.get("type") != SSH_AUTH_TYPE or secret.get("data"):
        return secret
    private, public = ssh_key_pair()
    data = {PRIVATE_KEY: base64.b64encode(private).decode(), PUBLIC_KEY: base64.b64encode(public).decode()}
    return {**secret, "data": data}
