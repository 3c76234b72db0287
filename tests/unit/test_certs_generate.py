"""CA and serving certificate generation, renewal thresholds and `kubetrain certs generate`."""

from __future__ import annotations

import datetime as dt
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kubetrain.certs.generate import (
    certificate_sans,
    covers,
    generate_bundle,
    generate_ca,
    generate_serving_cert,
    needs_renewal,
    renewal_time,
    service_dns_names,
    signed_by,
)
from kubetrain.commands.certs import add_parser

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_service_names_cover_every_form_the_apiserver_uses() -> None:
    assert service_dns_names("kubetrain-webhook", "ops") == [
        "kubetrain-webhook",
        "kubetrain-webhook.ops",
        "kubetrain-webhook.ops.svc",
        "kubetrain-webhook.ops.svc.cluster.local",
    ]


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa"])
def test_bundle_is_a_valid_chain_for_the_sans(key_type: str) -> None:
    bundle = generate_bundle(["svc.ns.svc"], ["127.0.0.1", "::1"], now=NOW, key_type=key_type)  # type: ignore[arg-type]
    ca, cert = bundle.ca.cert, bundle.serving.cert
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey if key_type == "ecdsa" else rsa.RSAPublicKey)
    if key_type == "rsa":
        assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
    assert signed_by(bundle.serving.cert_pem, bundle.ca.cert_pem)
    assert not signed_by(bundle.serving.cert_pem, generate_ca(now=NOW).cert_pem)
    assert certificate_sans(bundle.serving.cert_pem) == ({"svc.ns.svc"}, {"127.0.0.1", "::1"})
    assert covers(bundle.serving.cert_pem, ["svc.ns.svc"], ["127.0.0.1"])
    assert not covers(bundle.serving.cert_pem, ["other.ns.svc"])
    # validity: the CA 10 years, the serving certificate 1 year, both backdated for clock skew
    assert cert.not_valid_before_utc <= NOW < cert.not_valid_after_utc
    assert 364 <= (cert.not_valid_after_utc - cert.not_valid_before_utc).days <= 366
    assert (ca.not_valid_after_utc - ca.not_valid_before_utc).days >= 3649
    # python's own TLS stack accepts the pair and verifies the chain for the name
    ctx = ssl.create_default_context(cadata=bundle.ca.cert_pem.decode())
    assert ctx.cert_store_stats()["x509_ca"] == 1


def test_serving_cert_never_outlives_its_ca() -> None:
    ca = generate_ca(now=NOW, validity=dt.timedelta(days=30))
    cert = generate_serving_cert(ca, ["a"], now=NOW).cert
    assert cert.not_valid_after_utc <= ca.cert.not_valid_after_utc


def test_renewal_when_a_third_of_the_lifetime_is_left() -> None:
    pem = generate_bundle(["a"], now=NOW).serving.cert_pem
    due = renewal_time(pem)
    assert dt.timedelta(days=120) <= x509.load_pem_x509_certificate(pem).not_valid_after_utc - due
    assert not needs_renewal(pem, NOW)
    assert not needs_renewal(pem, due - dt.timedelta(seconds=1))
    assert needs_renewal(pem, due)
    assert needs_renewal(b"garbage", NOW)


def test_invalid_input_is_a_clear_error() -> None:
    ca = generate_ca(now=NOW)
    with pytest.raises(ValueError, match="at least one DNS name or IP address"):
        generate_serving_cert(ca, [])
    with pytest.raises(ValueError, match=r'"300\.1\.1\.1" is not a valid IP address'):
        generate_serving_cert(ca, ["a"], ["300.1.1.1"])


def run_cli(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_certs_generate_writes_a_cert_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "certs"
    code = run_cli(
        [
            "certs",
            "generate",
            "--out",
            str(out),
            "--dns",
            "localhost",
            "--ip",
            "127.0.0.1",
            "--service",
            "kubetrain-webhook",
            "--namespace",
            "ops",
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert (out / "tls.key").stat().st_mode & 0o077 == 0
    dns, ips = certificate_sans((out / "tls.crt").read_bytes())
    assert {"localhost", "kubetrain-webhook.ops.svc"} <= dns and ips == {"127.0.0.1"}
    assert signed_by((out / "tls.crt").read_bytes(), (out / "ca.crt").read_bytes())
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(out / "tls.crt", out / "tls.key")  # the pair matches
    assert "wrote" in capsys.readouterr().out


def test_certs_generate_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["certs", "generate", "--out", str(tmp_path)]) == 2
    assert "at least one --dns" in capsys.readouterr().err
    assert run_cli(["certs", "generate", "--out", str(tmp_path), "--ip", "nope"]) == 2
    assert '"nope" is not a valid IP address' in capsys.readouterr().err


def test_certs_generate_names_the_command_and_the_path_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "certs"  # a directory under a regular file cannot be made
    assert run_cli(["certs", "generate", "--out", str(out), "--dns", "localhost"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kubetrain certs generate: error: cannot write to {out}: ")
    assert "Errno" not in err and len(err.splitlines()) == 1
