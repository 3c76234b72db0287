"""CA and serving-certificate generation with `cryptography`.

Choices (documented for operators in docs/operations.md by the packaging owner):
- Keys: ECDSA P-256 (fast TLS handshakes, accepted by every kube-apiserver); RSA 2048 on request.
- Validity: the CA 10 years, the serving certificate 1 year (`CA_VALIDITY`, `SERVING_VALIDITY`).
- Renewal: a certificate is renewed once less than a third of its lifetime is left
  (`needs_renewal`) — about four months before a serving certificate expires, so a
  stopped operator has months to come back before webhooks break.
- Serving SANs: `<service>`, `<service>.<namespace>`, `<service>.<namespace>.svc`,
  `<service>.<namespace>.svc.<domain>` (the cluster domain, `cluster.local` unless
  `--cluster-domain` says) plus any extra DNS names and IP addresses.
  kube-apiserver verifies the webhook's certificate against `<service>.<namespace>.svc`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.errors import QUOTE

KeyType = Literal["ecdsa", "rsa"]
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
# Certificates are backdated a little so a node whose clock lags still accepts them.
CLOCK_SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class CertKeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


@dataclass(frozen=True)
class CertificateBundle:
    """Everything a webhook server and its configurations need."""

    ca: CertKeyPair
    serving: CertKeyPair

    @property
    def ca_bundle(self) -> bytes:
        """PEM of the CA, as put (base64-encoded) into a webhook's `clientConfig.caBundle`."""
        return self.ca.cert_pem


def service_dns_names(service: str, namespace: str, cluster_domain: ClusterDomain = UNSET) -> list[str]:
    """The DNS names under which the API server may reach a Service (the last one fully
    qualified with the cluster domain in effect)."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        cluster_domain.service_fqdn(service, namespace),
    ]


def new_private_key(key_type: KeyType = "ecdsa") -> PrivateKey:
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _now(now: dt.datetime | None) -> dt.datetime:
    return now if now is not None else dt.datetime.now(dt.UTC)


def generate_ca(
    common_name: str = "kubetrain-webhook-ca",
    *,
    now: dt.datetime | None = None,
    validity: dt.timedelta = CA_VALIDITY,
    key_type: KeyType = "ecdsa",
) -> CertKeyPair:
    """A self-signed CA certificate that may only sign end-entity certificates."""
    key = new_private_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = _now(now) - CLOCK_SKEW
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKeyPair(_cert_pem(cert), _key_pem(key))


def generate_serving_cert(
    ca: CertKeyPair,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    *,
    now: dt.datetime | None = None,
    validity: dt.timedelta = SERVING_VALIDITY,
    key_type: KeyType = "ecdsa",
) -> CertKeyPair:
    """A TLS server certificate for `dns_names` and `ip_addresses`, signed by `ca`.

    Raises ValueError for an empty SAN list or an invalid IP address.
    """
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(dns_names)]
    for ip in dict.fromkeys(ip_addresses):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(ip)))
        except ValueError as exc:
            raise ValueError(f"{QUOTE.encode(ip)} is not a valid IP address") from exc
    ca_cert = ca.cert
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the CA key must be an ECDSA or RSA key")
    key = new_private_key(key_type)
    start = _now(now) - CLOCK_SKEW
    # A certificate never outlives the CA that signed it.
    end = min(start + validity, ca_cert.not_valid_after_utc)
    common_name = dns_names[0] if dns_names else ip_addresses[0]
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])]))
        .issuer_name(ca_cert.subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=isinstance(key, rsa.RSAPrivateKey),
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return CertKeyPair(_cert_pem(cert), _key_pem(key))


def generate_bundle(
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    *,
    now: dt.datetime | None = None,
    key_type: KeyType = "ecdsa",
    ca_validity: dt.timedelta = CA_VALIDITY,
    serving_validity: dt.timedelta = SERVING_VALIDITY,
) -> CertificateBundle:
    """A fresh CA plus a serving certificate it signed."""
    ca = generate_ca(now=now, validity=ca_validity, key_type=key_type)
    serving = generate_serving_cert(
        ca, dns_names, ip_addresses, now=now, validity=serving_validity, key_type=key_type
    )
    return CertificateBundle(ca=ca, serving=serving)


def needs_renewal(cert_pem: bytes, now: dt.datetime, fraction: float = 1 / 3) -> bool:
    """True when less than `fraction` of the certificate's lifetime remains (or it is unparsable)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return True
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return now >= end - (end - start) * fraction or now < start - CLOCK_SKEW * 2


def renewal_time(cert_pem: bytes, fraction: float = 1 / 3) -> dt.datetime:
    """When `needs_renewal` starts returning True for this certificate."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return end - (end - start) * fraction


def certificate_sans(cert_pem: bytes) -> tuple[set[str], set[str]]:
    """(DNS names, IP addresses) of a certificate's subjectAltName extension."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    dns = set(ext.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in ext.get_values_for_type(x509.IPAddress)}
    return dns, ips


def signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """True when `cert_pem` was issued and signed by the CA `ca_pem`."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        ca = x509.load_pem_x509_certificate(ca_pem)
        cert.verify_directly_issued_by(ca)
    except Exception:  # InvalidSignature, ValueError (malformed PEM), TypeError (key type mismatch)
        return False
    return True


def covers(cert_pem: bytes, dns_names: Sequence[str], ip_addresses: Sequence[str] = ()) -> bool:
    """True when the certificate's SANs include every wanted DNS name and IP address."""
    try:
        dns, ips = certificate_sans(cert_pem)
    except ValueError:
        return False
    wanted_ips = {str(ipaddress.ip_address(ip)) for ip in ip_addresses}
    return set(dns_names) <= dns and wanted_ips <= ips
