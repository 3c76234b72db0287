"""Webhook TLS: CA and serving certificates, Secret storage, rotation, caBundle injection.

Three ways to give the webhook its certificate (`--cert-mode`, chart `certificates.mode`):

(a) `directory` — `tls.crt`/`tls.key` in `--cert-dir`, typically a mounted `kubernetes.io/tls`
    Secret. `tls.ReloadingTLS` follows the files (kubelet's `..data` symlink swap included):
    new TLS handshakes use a new certificate within one poll (2 s), without a restart.
    The caBundle of the webhook configurations is whoever made the Secret's business.
(b) `self-managed` — `selfmanaged.SelfManagedCertificates` generates a CA and a serving
    certificate (`generate`), keeps them in `--cert-secret`, renews them a third of their
    lifetime before expiry, writes them into `--cert-dir` for (a) to serve, and keeps
    `caBundle` of `--mutating-webhook-config`/`--validating-webhook-config` patched (watched, so
    an overwrite is undone).
(c) cert-manager — nothing in code: it is mode (a) with a Secret that cert-manager issues and
    renews, and its CA injector fills `caBundle` from the webhook configurations'
    `cert-manager.io/inject-ca-from` annotation (the chart sets both up).

`kubetrain certs generate --out DIR --dns NAME... [--ip IP...]` writes ca.crt/tls.crt/tls.key
for local use and hand-made Secrets.
"""
