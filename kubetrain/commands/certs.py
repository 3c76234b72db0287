"""`kubetrain certs generate`: a CA and a serving certificate for local use or a manual Secret.

    kubetrain certs generate --out ./certs --dns kubetrain-webhook.kubetrain-system.svc --ip 127.0.0.1

writes `ca.crt`, `tls.crt` and `tls.key` (mode 0600) into DIR — the layout `--cert-dir` reads.
`--service NAME --namespace NS` adds the four DNS names of a Service (the last one under
`--cluster-domain`, default `$CUSTOM_CLUSTER_DOMAIN`, else cluster.local).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kubetrain.certs.generate import generate_bundle, service_dns_names
from kubetrain.certs.tls import write_cert_dir
from kubetrain.commands._flags import add_cluster_domain_flag

PROG = "kubetrain certs generate"


def generate(args: argparse.Namespace) -> int:
    dns: list[str] = list(args.dns)
    if args.service:
        if not args.namespace:
            print(f"{PROG}: error: --service needs --namespace", file=sys.stderr)
            return 2
        dns += service_dns_names(args.service, args.namespace, args.cluster_domain)
    if not dns and not args.ip:
        print(
            f"{PROG}: error: give at least one --dns NAME, --ip ADDRESS or --service/--namespace",
            file=sys.stderr,
        )
        return 2
    try:
        bundle = generate_bundle(dns, args.ip, key_type=args.key_type)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        write_cert_dir(args.out, bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    except OSError as exc:
        where = exc.filename or args.out
        print(f"{PROG}: error: cannot write to {where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    names = ", ".join([*dict.fromkeys(dns), *args.ip])
    print(f"wrote {args.out}/ca.crt, tls.crt and tls.key for {names}")
    return 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("certs", help="certificate utilities for the webhook")
    sub = parser.add_subparsers(dest="certs_command", metavar="COMMAND")
    sub.required = True
    gen = sub.add_parser(
        "generate",
        help="write a CA and a serving certificate (ca.crt, tls.crt, tls.key) into a directory",
    )
    gen.add_argument(
        "--out", required=True, metavar="DIR", help="directory to write into (created if needed)"
    )
    gen.add_argument("--dns", action="append", default=[], metavar="NAME", help="DNS name (repeatable)")
    gen.add_argument("--ip", action="append", default=[], metavar="IP", help="IP address (repeatable)")
    gen.add_argument("--service", metavar="NAME", help="add the DNS names of this Service")
    gen.add_argument("--namespace", metavar="NS", help="namespace of --service")
    add_cluster_domain_flag(gen)
    gen.add_argument(
        "--key-type",
        choices=("ecdsa", "rsa"),
        default="ecdsa",
        help="ecdsa (P-256, default) or rsa (2048 bits)",
    )
    gen.set_defaults(func=generate)
