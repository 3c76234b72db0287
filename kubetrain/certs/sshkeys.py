"""SSH key pairs for `kubernetes.io/ssh-auth` Secrets a job's pods share (MPIJob's `<job>-ssh`).

As mpi-operator's newSSHAuthSecret: an ECDSA P-521 key, the private key PEM-encoded as an
`EC PRIVATE KEY` (SEC 1), the public key in OpenSSH authorized_keys form with a trailing newline.
"""

from __future__ import annotations

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
