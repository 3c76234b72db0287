"""What a new TLS connection to the API server costs, against a request on a kept-alive one.

    .venv/bin/python benchmarks/bench_tls_connections.py [--requests 64] [--rounds 3]

On a fresh devcluster (this process serves it), a client in its own process (plain aiohttp, the
kubeconfig's client certificate, one connection at a time) sends `--requests` GET /version
requests, each on a new connection (`force_close`: a TLS handshake per request, both sides) and
then each on one kept-alive connection. Reported per request: the CPU seconds of the server
(this process) and of the client, for both modes; the difference is what one new connection
costs. Every request in flight holds its own HTTP/1.1 connection, so this is what each create
in flight beyond the connections already open costs a client and the API server
(docs/performance.md, "Pod creation at the limit").
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from typing import Any

from _common import api_server_only, load_average, publish

from kubetrain.dev.stack import DevStack

CLIENT = r"""
import asyncio, ssl, sys, time
import aiohttp
from kubetrain.kube.kubeconfig import load_kubeconfig
from kubetrain.kube.transport import Configuration

async def main(kubeconfig, n, fresh):
    c = Configuration()
    await load_kubeconfig(kubeconfig, None, c)
    ctx = ssl.create_default_context(cafile=c.ssl_ca_cert)
    if c.cert_file:
        ctx.load_cert_chain(c.cert_file, keyfile=c.key_file)
    headers = {}
    for s in (await c.auth_settings()).values():
        if s.get("in") == "header" and s.get("value"):
            headers[s["key"]] = s["value"]
    url = str(c.host).rstrip("/") + "/version"
    connector = aiohttp.TCPConnector(limit=1, ssl=ctx, force_close=fresh)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        async with session.get(url) as r:  # imports and first use out of the measurement
            await r.read()
        print(time.perf_counter(), flush=True)
        c0 = time.process_time()
        for _ in range(n):
            async with session.get(url) as r:
                await r.read()
                assert r.status == 200, r.status
        print(time.process_time() - c0)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "fresh"))
"""


async def one(kubeconfig: str, requests: int, mode: str) -> tuple[float, float]:
    """(server CPU, client CPU) per request in `mode` ("fresh" or "kept-alive")."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, kubeconfig, str(requests), mode, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    await proc.stdout.readline()  # the client's warm-up request is done
    c0 = time.process_time()
    out, _ = await proc.communicate()
    server = time.process_time() - c0
    return server / requests, float(out.decode().split()[-1]) / requests


async def run(args: argparse.Namespace) -> dict[str, Any]:
    opts = api_server_only()
    rounds: list[dict[str, float]] = []
    async with DevStack(opts) as stack:
        for _ in range(args.rounds):
            r: dict[str, float] = {}
            for mode in ("fresh", "kept-alive"):
                server, client = await one(stack.cluster.kubeconfig_path, args.requests, mode)
                r[f"{mode}_server_ms"], r[f"{mode}_client_ms"] = (
                    round(server * 1e3, 3),
                    round(client * 1e3, 3),
                )
            rounds.append(r)
            print(
                f"per request: new connection server {r['fresh_server_ms']} ms, client "
                f"{r['fresh_client_ms']} ms; kept-alive server {r['kept-alive_server_ms']} ms, "
                f"client {r['kept-alive_client_ms']} ms"
            )
    return {
        "benchmark": "tls_connections",
        "load_average_1m": load_average(),
        "requests": args.requests,
        "rounds": rounds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    publish("tls_connections", asyncio.run(run(parser.parse_args())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
